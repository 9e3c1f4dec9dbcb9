package controlplane

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
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

// searchDirs returns, in order, the directories a binary is looked up in.
// An explicit binDir is the only place searched.
func searchDirs(binDir string) []string {
	if binDir != "" {
		return []string{binDir}
	}
	var dirs []string
	for _, env := range []string{EnvBinDir, EnvKubebuilderAssets} {
		if v := os.Getenv(env); v != "" {
			dirs = append(dirs, v)
		}
	}
	if wd, err := os.Getwd(); err == nil {
		// ./bin of the working directory and of its parents, so tests run
		// from a package folder find the repository's bin/.
		for d := wd; ; d = filepath.Dir(d) {
			dirs = append(dirs, filepath.Join(d, "bin"))
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil || filepath.Dir(d) == d {
				break
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	}
	return dirs
}

// FindBinaries locates the three control-plane binaries. Its error, a
// *BinariesNotFoundError, names every directory searched and how to get
// the binaries.
func FindBinaries(binDir string) (Binaries, error) {
	dirs := searchDirs(binDir)
	var b Binaries
	var missing []string
	for _, it := range []struct {
		name string
		dst  *string
	}{{BinEtcd, &b.Etcd}, {BinKubeAPIServer, &b.KubeAPIServer}, {BinKubeControllerManager, &b.KubeControllerManager}} {
		for _, d := range dirs {
			p := filepath.Join(d, it.name)
			if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
				abs, err := filepath.Abs(p)
				if err != nil {
					return b, fmt.Errorf("resolve %s: %w", p, err)
				}
				*it.dst = abs
				break
			}
		}
		if *it.dst == "" {
			missing = append(missing, it.name)
		}
	}
	if len(missing) > 0 {
		return b, &BinariesNotFoundError{Missing: missing, Searched: dirs}
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
}

func (e *BinariesNotFoundError) Error() string { return e.Render("Config.BinDir") }

// FieldPath implements contract.FieldError: the directory's setting.
func (e *BinariesNotFoundError) FieldPath() *field.Path { return field.NewPath("BinDir") }

// Render writes the error naming the setting of the binaries' directory
// (a flag, or the field).
func (e *BinariesNotFoundError) Render(name string) string {
	return fmt.Sprintf("control-plane binaries not found: %s (searched %s); build them with 'make controlplane' (the first build takes about 11 minutes on 2 cores) or name a directory that has them (%s or $%s)",
		strings.Join(e.Missing, ", "), strings.Join(e.Searched, ", "), name, EnvBinDir)
}
