package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cpbuild"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/internal/version"
)

// TestInstalledOutsideCheckout is a user who installs bootproof the Go
// way: 'go install' into an empty GOBIN, 'bootproof controlplane build'
// into an empty per-user cache ($XDG_CACHE_HOME), then 'bootproof run
// --scenario fast-reboot-0.5g' from a directory outside any checkout, with
// no $BOOTPROOF_BIN_DIR or $KUBEBUILDER_ASSETS: the run finds the plane in
// the cache and passes. Go's build cache may be warm ('make test' has
// built the same binaries into bin/), so the build is mostly links; it
// runs where the checkout's control plane is built ('make test' requires
// it) and not with -short.
func TestInstalledOutsideCheckout(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: it builds the control plane (links on a warm Go build cache, about 11 minutes on a cold one)")
	}
	cptest.RequireBinaries(t) // the checkout's plane: Go's build cache holds its compile
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to install bootproof: %v", err)
	}
	tmp := t.TempDir()
	gobin, cache, outside := filepath.Join(tmp, "gobin"), filepath.Join(tmp, "cache"), filepath.Join(tmp, "elsewhere")
	for _, d := range []string{gobin, cache, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case controlplane.EnvBinDir, controlplane.EnvKubebuilderAssets, "GOBIN", "XDG_CACHE_HOME", "GOCACHE":
		default:
			env = append(env, kv)
		}
	}
	// Go's build cache defaults to $XDG_CACHE_HOME/go-build: keep it where
	// it is, so only bootproof's cache is empty.
	goCache, err := exec.Command(goCmd, "env", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOCACHE: %v", err)
	}
	env = append(env, "GOBIN="+gobin, "XDG_CACHE_HOME="+cache, "GOCACHE="+strings.TrimSpace(string(goCache)))
	run := func(dir string, timeout time.Duration, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		timer := time.AfterFunc(timeout, func() { _ = cmd.Process.Kill() })
		defer timer.Stop()
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s (in %s): %v after %s\n%s", filepath.Base(name), strings.Join(args, " "), dir, err, time.Since(start).Round(time.Second), out.String())
		}
		t.Logf("%s %s: %s", filepath.Base(name), strings.Join(args, " "), time.Since(start).Round(time.Second))
		return out.String()
	}

	run(".", 10*time.Minute, goCmd, "install", ".")
	bp := filepath.Join(gobin, "bootproof")
	if entries, _ := os.ReadDir(gobin); len(entries) != 1 {
		t.Fatalf("GOBIN holds %d files after 'go install', want bootproof alone", len(entries))
	}

	var v version.Info
	if err := json.Unmarshal([]byte(run(outside, time.Minute, bp, "version", "--output", "json")), &v); err != nil {
		t.Fatalf("version --output json: %v", err)
	}
	if v.Kubernetes != cpbuild.KubernetesVersion() || v.Etcd != cpbuild.EtcdVersion() || v.Version == "" || !strings.HasPrefix(v.KindNodeImage, version.KindNodeImageRepository+":"+v.Kubernetes) {
		t.Errorf("version = %+v", v)
	}

	want := filepath.Join(cache, "bootproof", "controlplane", cpbuild.KubernetesVersion())
	if got := strings.TrimSpace(run(outside, time.Minute, bp, "controlplane", "path")); got != want {
		t.Fatalf("controlplane path = %q, want %q", got, want)
	}
	out := run(outside, 40*time.Minute, bp, "controlplane", "build")
	for _, w := range []string{"controlplane: building etcd kube-apiserver kube-controller-manager into " + want, "[3/3] kube-controller-manager: built in ", "controlplane: done in "} {
		if !strings.Contains(out, w) {
			t.Errorf("controlplane build said no %q:\n%s", w, out)
		}
	}
	for _, b := range cpbuild.Binaries() {
		if _, err := os.Stat(filepath.Join(want, b)); err != nil {
			t.Errorf("the cache lacks %s: %v", b, err)
		}
	}
	if out := run(outside, time.Minute, bp, "controlplane", "build"); !strings.Contains(out, "are cached in "+want) {
		t.Errorf("a second build did not find the binaries cached:\n%s", out)
	}

	out = run(outside, 15*time.Minute, bp, "run", "--scenario", "fast-reboot-0.5g")
	for _, w := range []string{"pass    [bootid] fast-reboot-0.5g", "pass    [legacy] fast-reboot-0.5g", "legacy: 1 of 1 as expected (1 expected failure)", "2 passed, 0 failed, 0 errors, 0 skipped", "report: " + filepath.Join(outside, "_output")} {
		if !strings.Contains(out, w) {
			t.Errorf("run outside the checkout said no %q:\n%s", w, out)
		}
	}
}
