package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/harness/controlplane/cpbuild"
)

// writeScript writes an executable shell script.
func writeScript(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestFindBinaries(t *testing.T) {
	full := t.TempDir()
	for _, n := range []string{BinEtcd, BinKubeAPIServer, BinKubeControllerManager} {
		writeScript(t, full, n, "exit 0")
	}
	partial := t.TempDir()
	writeScript(t, partial, BinEtcd, "exit 0")
	if err := os.WriteFile(filepath.Join(partial, BinKubeAPIServer), []byte("not executable"), 0o644); err != nil {
		t.Fatal(err)
	}

	b, err := FindBinaries(full)
	if err != nil {
		t.Fatalf("FindBinaries(full) = %v", err)
	}
	if b.Etcd != filepath.Join(full, BinEtcd) || b.KubeControllerManager != filepath.Join(full, BinKubeControllerManager) {
		t.Errorf("FindBinaries(full) = %+v", b)
	}

	_, err = FindBinaries(partial)
	var nf *BinariesNotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("FindBinaries(partial) = %v, want a *BinariesNotFoundError", err)
	}
	if !slices.Equal(nf.Missing, []string{BinKubeAPIServer, BinKubeControllerManager}) || !slices.Equal(nf.Searched, []string{partial}) {
		t.Errorf("BinariesNotFoundError = %+v, want kube-apiserver and kube-controller-manager missing from %s", nf, partial)
	}
	for _, want := range []string{"kube-apiserver, kube-controller-manager", partial, "make controlplane", "Config.BinDir", EnvBinDir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "etcd,") {
		t.Errorf("error %q names etcd, which is present", err)
	}
	// The library names Config fields; flags are the command line's.
	if strings.Contains(err.Error(), "--") {
		t.Errorf("error %q names a command-line flag", err)
	}
}

// TestFindBinariesFromEnvironment runs from a directory outside any
// checkout: $BOOTPROOF_BIN_DIR comes first, the per-user cache
// (cpbuild.CacheDir under $XDG_CACHE_HOME) is searched, and envtest's
// $KUBEBUILDER_ASSETS gives etcd and kube-apiserver only, and only when
// their versions fit the pinned kube-controller-manager.
func TestFindBinariesFromEnvironment(t *testing.T) {
	pinned := cpbuild.KubernetesVersion()
	var major, minor int
	if _, err := fmt.Sscanf(pinned, "v%d.%d.", &major, &minor); err != nil {
		t.Fatal(err)
	}
	envtest := func(apiserver string) string {
		d := t.TempDir() // envtest layout: etcd and kube-apiserver only
		writeScript(t, d, BinEtcd, "echo 'etcd Version: 3.5.21'")
		writeScript(t, d, BinKubeAPIServer, "echo 'Kubernetes "+apiserver+"'")
		return d
	}
	kcmOnly := t.TempDir()
	writeScript(t, kcmOnly, BinKubeControllerManager, "exit 0")
	full := t.TempDir()
	for _, n := range []string{BinEtcd, BinKubeAPIServer, BinKubeControllerManager} {
		writeScript(t, full, n, "exit 0")
	}
	fits := envtest(fmt.Sprintf("v1.%d.0", minor+1))
	tooOld := envtest(fmt.Sprintf("v1.%d.3", minor-1))
	for _, tc := range []struct {
		name                  string
		binDir, assets, cache string
		explicit              string
		wantEtcd, wantKCM     string
		wantErr               []string
	}{
		{name: "envtest's etcd and kube-apiserver, kube-controller-manager from BOOTPROOF_BIN_DIR", binDir: kcmOnly, assets: fits, wantEtcd: fits, wantKCM: kcmOnly},
		{name: "kube-controller-manager from the user's cache", cache: kcmOnly, assets: fits, wantEtcd: fits, wantKCM: kcmOnly},
		{name: "the cache's binaries come before envtest's", cache: full, assets: fits, wantEtcd: full, wantKCM: full},
		{name: "BOOTPROOF_BIN_DIR before the cache", binDir: full, cache: kcmOnly, wantEtcd: full, wantKCM: full},
		{name: "an envtest kube-apiserver too old is refused", binDir: kcmOnly, assets: tooOld,
			wantErr: []string{"not found: kube-apiserver (", fmt.Sprintf("is 1.%d: accepted: 1.%d or 1.%d", minor-1, minor, minor+1), "$KUBEBUILDER_ASSETS (" + tooOld}},
		{name: "envtest never gives kube-controller-manager", assets: fits,
			wantErr: []string{"not found: kube-controller-manager (", "bootproof controlplane build"}},
		{name: "an explicit directory alone", explicit: kcmOnly, assets: fits, binDir: full,
			wantErr: []string{"not found: etcd, kube-apiserver (searched " + kcmOnly + ")"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			xdg := t.TempDir()
			t.Setenv("XDG_CACHE_HOME", xdg)
			if tc.cache != "" {
				dir, err := cpbuild.CacheDir()
				if err != nil || !strings.HasPrefix(dir, xdg) {
					t.Fatalf("CacheDir = %q, %v: want it under $XDG_CACHE_HOME %s", dir, err, xdg)
				}
				if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(tc.cache, dir); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv(EnvBinDir, tc.binDir)
			t.Setenv(EnvKubebuilderAssets, tc.assets)
			b, err := FindBinaries(tc.explicit)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("FindBinaries = %+v, want an error", b)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("FindBinaries = %v", err)
			}
			// The cache is a link to the test's directory: compare where
			// the binaries really are.
			dir := func(p string) string {
				d, err := filepath.EvalSymlinks(filepath.Dir(p))
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			if dir(b.Etcd) != tc.wantEtcd || dir(b.KubeAPIServer) != tc.wantEtcd || dir(b.KubeControllerManager) != tc.wantKCM {
				t.Errorf("FindBinaries = %+v, want etcd and kube-apiserver from %s, kube-controller-manager from %s", b, tc.wantEtcd, tc.wantKCM)
			}
		})
	}
}

// TestStartQuotesLogOfEarlyExit uses stand-in binaries that fail at once:
// Start must return an ExitError naming the process and quoting its log,
// and leave nothing behind.
func TestStartQuotesLogOfEarlyExit(t *testing.T) {
	bin := t.TempDir()
	writeScript(t, bin, BinEtcd, `echo "etcd: cannot open data dir: permission denied (stand-in)" >&2; exit 3`)
	writeScript(t, bin, BinKubeAPIServer, "exit 0")
	writeScript(t, bin, BinKubeControllerManager, "exit 0")
	run := t.TempDir()
	_, err := Start(context.Background(), Config{BinDir: bin, Dir: run})
	var ee *ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("Start = %v, want *ExitError", err)
	}
	if ee.Process != BinEtcd || !strings.Contains(ee.Status, "exit status 3") {
		t.Errorf("ExitError = %+v, want etcd with exit status 3", ee)
	}
	if !strings.Contains(err.Error(), "permission denied (stand-in)") {
		t.Errorf("error does not quote the log: %v", err)
	}
	if _, err := os.Stat(filepath.Join(run, "etcd.pid")); !os.IsNotExist(err) {
		t.Errorf("pid file left behind: %v", err)
	}
}

// TestCheckoutBins: inside a checkout, ./bin and each parent's bin/ up to
// the checkout's root; outside one, ./bin alone (never /bin).
func TestCheckoutBins(t *testing.T) {
	root := t.TempDir()
	pkg := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		wd   string
		want []string
	}{
		{pkg, []string{filepath.Join(pkg, "bin"), filepath.Join(root, "a", "bin"), filepath.Join(root, "bin")}},
		{root, []string{filepath.Join(root, "bin")}},
		{outside, []string{filepath.Join(outside, "bin")}},
	} {
		if got := checkoutBins(tc.wd); !slices.Equal(got, tc.want) {
			t.Errorf("checkoutBins(%s) = %v, want %v", tc.wd, got, tc.want)
		}
	}
}
