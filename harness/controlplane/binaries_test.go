package controlplane

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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

func TestFindBinariesFromEnvironment(t *testing.T) {
	assets := t.TempDir() // envtest layout: etcd and kube-apiserver only
	writeScript(t, assets, BinEtcd, "exit 0")
	writeScript(t, assets, BinKubeAPIServer, "exit 0")
	kcm := t.TempDir()
	writeScript(t, kcm, BinKubeControllerManager, "exit 0")
	t.Setenv(EnvKubebuilderAssets, assets)
	t.Setenv(EnvBinDir, kcm)
	b, err := FindBinaries("")
	if err != nil {
		t.Fatalf("FindBinaries = %v", err)
	}
	if filepath.Dir(b.Etcd) != assets || filepath.Dir(b.KubeControllerManager) != kcm {
		t.Errorf("FindBinaries = %+v, want etcd from %s and kube-controller-manager from %s", b, assets, kcm)
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
