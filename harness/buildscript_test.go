package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The control plane's build (tools/controlplane/build.sh, a wrapper of
// 'bootproof controlplane build') is tested in harness/controlplane/cpbuild.

// TestBuildVCSInAnotherUsersCheckout: root building a main package in a
// checkout another user owns fails on Go's VCS stamping (git refuses the
// checkout); tools/buildvcs.sh names the flag that lets it build there,
// and names nothing in a checkout git reads.
func TestBuildVCSInAnotherUsersCheckout(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it builds as root in a checkout owned by another user (run make test as root, as CI does)")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git on PATH (CI installs it)")
	}
	script, err := filepath.Abs("../tools/buildvcs.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"go.mod": "module example.com/m\n\ngo 1.24\n", "main.go": "package main\n\nfunc main() {}\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(env []string, name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	gitEnv := []string{"GIT_CONFIG_NOSYSTEM=1", "HOME=" + t.TempDir()}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "m"}} {
		if out, err := run(gitEnv, "git", args...); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	if out, err := run(gitEnv, script); err != nil || out != "" {
		t.Errorf("root's own checkout: %q (%v), want nothing", out, err)
	}
	if err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 1000, 1000)
	}); err != nil {
		t.Fatal(err)
	}
	goEnv := append(gitEnv, "GOFLAGS=", "CGO_ENABLED=0", "GOTOOLCHAIN=local")
	out, err := run(goEnv, "go", "build", "-o", filepath.Join(t.TempDir(), "m"), ".")
	if err == nil || !strings.Contains(out, "buildvcs") {
		t.Fatalf("go build as root in another user's checkout: %v: %s; want Go's VCS stamping error (else this test tests nothing)", err, out)
	}
	flag, err := run(gitEnv, script)
	if err != nil || flag != "-buildvcs=false" {
		t.Fatalf("another user's checkout: %q (%v), want -buildvcs=false", flag, err)
	}
	if out, err := run(append(goEnv, "GOFLAGS="+flag), "go", "build", "-o", filepath.Join(t.TempDir(), "m"), "."); err != nil {
		t.Errorf("go build with %s: %v: %s", flag, err, out)
	}
}

// TestGoBuildScriptLineSplitByAPause: a line go writes in two parts with
// a pause between them longer than tools/gobuild.sh's read timeout (a
// loaded machine) is still read as one line. Before, the part read before
// the timeout was lost: "__exit 0" split that way failed a good build
// ("go build ended without saying how", seen in a cold .ci/run), and a
// compiler error lost its start.
func TestGoBuildScriptLineSplitByAPause(t *testing.T) {
	dir := t.TempDir()
	stub := filepath.Join(dir, "go")
	script := `#!/usr/bin/env bash
case "$1" in
list) for i in 1 2; do echo "example.com/p$i"; done ;;
build)
  out=""; while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done
  echo "example.com/p1" >&2
  printf 'example.com/' >&2; sleep 1.6; echo "p2" >&2
  if [ -n "$STUB_FAIL" ]; then
    printf 'main.go:3:2: undef' >&2; sleep 1.6; echo 'ined: brokenThing' >&2; exit 1
  fi
  printf '#!/bin/sh\n' > "$out" ;;
esac
`
	if err := os.WriteFile(stub, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	gobuild, err := filepath.Abs("../tools/gobuild.sh")
	if err != nil {
		t.Fatal(err)
	}
	run := func(env ...string) (string, error) {
		cmd := exec.Command(gobuild, "stub", filepath.Join(dir, "out"), "example.com/p2")
		cmd.Env = append(append(os.Environ(), "GO="+stub, "PROGRESS_EVERY=60"), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run()
	if err != nil || !strings.Contains(out, "(2 packages compiled") {
		t.Errorf("a good build with a line split by a pause: %v\n%s", err, out)
	}
	out, err = run("STUB_FAIL=1")
	if err == nil || !strings.Contains(out, "main.go:3:2: undefined: brokenThing") {
		t.Errorf("a failed build's split error line: %v\n%s", err, out)
	}
}
