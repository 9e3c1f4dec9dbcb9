package controlplane

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/bootproof/bootproof/harness/controlplane/cpbuild"
)

// Environment variables consulted for binaries.
const (
	// EnvBinDir names a directory holding all three binaries.
	EnvBinDir = "BOOTPROOF_BIN_DIR"
	// EnvKubebuilderAssets is envtest's directory holding etcd and
	// kube-apiserver (envtest ships no kube-controller-manager).
	EnvKubebuilderAssets = "KUBEBUILDER_ASSETS"
)

// Binary names.
const (
	BinEtcd                  = "etcd"
	BinKubeAPIServer         = "kube-apiserver"
	BinKubeControllerManager = "kube-controller-manager"
)

// Binaries are the absolute paths of the control-plane executables.
type Binaries struct {
	Etcd                  string
	KubeAPIServer         string
	KubeControllerManager string
}

// searchDirs returns, in order, the directories every binary is looked up
// in: an explicit binDir alone; else $BOOTPROOF_BIN_DIR, ./bin and the
// bin/ of the working directory's checkout (checkoutBins: tests run from
// a package folder find the repository's bin/), the bootproof
// executable's own directory, and the
// per-user cache 'bootproof controlplane build' fills (cpbuild.CacheDir).
func searchDirs(binDir string) []string {
	if binDir != "" {
		return []string{binDir}
	}
	var dirs []string
	if v := os.Getenv(EnvBinDir); v != "" {
		dirs = append(dirs, v)
	}
	if wd, err := os.Getwd(); err == nil {
		dirs = append(dirs, checkoutBins(wd)...)
	}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	}
	if cache, err := cpbuild.CacheDir(); err == nil {
		dirs = append(dirs, cache)
	}
	return dirs
}

// checkoutBins are ./bin of wd and, inside a checkout (a parent holds
// go.mod), the bin/ of each parent up to the checkout's root. Outside one
// no parent is searched: /bin holds the system's programs, not these.
func checkoutBins(wd string) []string {
	dirs := []string{filepath.Join(wd, "bin")}
	var parents []string
	for d := wd; filepath.Dir(d) != d; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return append(dirs, parents...)
		}
		parents = append(parents, filepath.Join(filepath.Dir(d), "bin"))
	}
	return dirs
}

// executable reports whether p is an executable regular file.
func executable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// FindBinaries locates the three control-plane binaries in the directories
// searchDirs names. With no explicit binDir, etcd and kube-apiserver are
// also taken from envtest's $KUBEBUILDER_ASSETS when nothing else has them
// and their versions fit the pinned kube-controller-manager (EnvtestFit);
// kube-controller-manager never is (envtest ships none). Its error, a
// *BinariesNotFoundError, names every directory searched, any envtest
// binary refused and why, and how to get the binaries.
func FindBinaries(binDir string) (Binaries, error) {
	dirs := searchDirs(binDir)
	var b Binaries
	nf := &BinariesNotFoundError{Searched: dirs}
	assets := ""
	if binDir == "" {
		assets = os.Getenv(EnvKubebuilderAssets)
	}
	for _, it := range []struct {
		name string
		dst  *string
	}{{BinEtcd, &b.Etcd}, {BinKubeAPIServer, &b.KubeAPIServer}, {BinKubeControllerManager, &b.KubeControllerManager}} {
		for _, d := range dirs {
			if p := filepath.Join(d, it.name); executable(p) {
				abs, err := filepath.Abs(p)
				if err != nil {
					return b, fmt.Errorf("resolve %s: %w", p, err)
				}
				*it.dst = abs
				break
			}
		}
		if *it.dst == "" && assets != "" && it.name != BinKubeControllerManager {
			p, err := filepath.Abs(filepath.Join(assets, it.name))
			if err == nil && executable(p) {
				if err = EnvtestFit(p); err == nil {
					*it.dst = p
				}
			}
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				nf.Refused = append(nf.Refused, err.Error())
			}
		}
		if *it.dst == "" {
			nf.Missing = append(nf.Missing, it.name)
		}
	}
	if len(nf.Missing) > 0 {
		if assets != "" {
			nf.Searched = append(nf.Searched, "$"+EnvKubebuilderAssets+" ("+assets+", for etcd and kube-apiserver)")
		}
		return b, nf
	}
	return b, nil
}

// BinariesNotFoundError is FindBinaries' error: which binaries are
// missing and where it looked. It is a contract.FieldError about
// Config.BinDir, so a command line names the flag that sets the
// directory.
type BinariesNotFoundError struct {
	// Missing are the binary names not found (BinEtcd, ...).
	Missing []string
	// Searched are the directories looked in, in order.
	Searched []string
	// Refused says which envtest binaries were found but not taken, and
	// why (their version does not fit).
	Refused []string
}

func (e *BinariesNotFoundError) Error() string { return e.Render("Config.BinDir") }

// FieldPath implements contract.FieldError: the directory's setting.
func (e *BinariesNotFoundError) FieldPath() *field.Path { return field.NewPath("BinDir") }

// Render writes the error naming the setting of the binaries' directory
// (a flag, or the field).
func (e *BinariesNotFoundError) Render(name string) string {
	refused := ""
	if len(e.Refused) > 0 {
		refused = "; refused: " + strings.Join(e.Refused, "; ")
	}
	return fmt.Sprintf("control-plane binaries not found: %s (searched %s%s); build them with 'bootproof controlplane build' (into %s; 'make controlplane' in a checkout, into its bin/; the first build takes about 11 minutes on 2 cores) or name a directory that has them (%s or $%s)",
		strings.Join(e.Missing, ", "), strings.Join(e.Searched, ", "), refused, cacheDirText(), name, EnvBinDir)
}

// cacheDirText names the per-user cache directory, or how it is chosen
// when it cannot be resolved here.
func cacheDirText() string {
	if d, err := cpbuild.CacheDir(); err == nil {
		return d
	}
	return "$XDG_CACHE_HOME/bootproof/controlplane/" + cpbuild.KubernetesVersion()
}
