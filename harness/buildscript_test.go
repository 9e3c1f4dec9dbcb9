package harness

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// stubGo stands in for the go command in TestControlPlaneBuildScript:
// 'go list -deps' names STUB_TOTAL packages, 'go build -v' names them as
// it "compiles" them (STUB_SLEEP seconds apart) and writes the -o file,
// unless the package is STUB_FAIL. Each call is logged to STUB_LOG.
const stubGo = `#!/usr/bin/env bash
echo "$*" >> "$STUB_LOG"
case "$1" in
list) for i in $(seq 1 "${STUB_TOTAL:-5}"); do echo "example.com/p$i"; done ;;
build)
  out="" pkg="${@: -1}"
  while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done
  if [ "$pkg" = "$STUB_FAIL" ]; then
    echo "# $pkg" >&2; echo "main.go:3:2: undefined: brokenThing" >&2; exit 1
  fi
  for i in $(seq 1 "${STUB_TOTAL:-5}"); do echo "example.com/p$i" >&2; sleep "${STUB_SLEEP:-0}"; done
  printf '#!/bin/sh\n' > "$out" && chmod +x "$out" ;;
*) echo "stub go: unexpected $*" >&2; exit 2 ;;
esac
`

// buildEnv is a copy of tools/controlplane (so a test may change its pins)
// and a stub go first on $PATH.
type buildEnv struct {
	t            *testing.T
	script, bin  string
	log, modules string
	env          []string
}

func newBuildEnv(t *testing.T) *buildEnv {
	t.Helper()
	root := t.TempDir()
	e := &buildEnv{t: t, modules: filepath.Join(root, "controlplane"), bin: filepath.Join(root, "bin"), log: filepath.Join(root, "go.log")}
	e.script = filepath.Join(e.modules, "build.sh")
	for _, f := range []string{"build.sh", "etcd/go.mod", "etcd/go.sum", "kube/go.mod", "kube/go.sum"} {
		data, err := os.ReadFile(filepath.Join("../tools/controlplane", f))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(e.modules, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// build.sh runs its sibling's ../gobuild.sh, as in tools/.
	gobuild, err := os.ReadFile("../tools/gobuild.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "gobuild.sh"), gobuild, 0o755); err != nil {
		t.Fatal(err)
	}
	stubDir := filepath.Join(root, "stub")
	if err := os.MkdirAll(stubDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stubDir, "go"), []byte(stubGo), 0o755); err != nil {
		t.Fatal(err)
	}
	e.env = append(os.Environ(), "PATH="+stubDir+":"+os.Getenv("PATH"), "BIN_DIR="+e.bin, "STUB_LOG="+e.log)
	return e
}

// run runs build.sh with extra environment; it returns stdout, stderr and
// the error of the run.
func (e *buildEnv) run(extra ...string) (string, string, error) {
	cmd := exec.Command("bash", e.script)
	cmd.Env = append(append([]string{}, e.env...), extra...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// builds counts the 'go build' calls so far.
func (e *buildEnv) builds() int {
	data, _ := os.ReadFile(e.log)
	return strings.Count(string(data), "build -v")
}

func wantLines(t *testing.T, what, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, out)
		}
	}
}

// TestControlPlaneBuildScript runs tools/controlplane/build.sh over a stub
// go: a first build says what it builds, the ~11 minute expectation, a line
// per component with its time and progress lines; a second run says the
// binaries are cached and builds nothing; a changed pin rebuilds only its
// module's binaries; a failed build exits non-zero with the compiler's
// error and leaves no stamp; on a terminal a progress bar is drawn.
func TestControlPlaneBuildScript(t *testing.T) {
	e := newBuildEnv(t)
	out, errOut, err := e.run("PROGRESS_EVERY=1", "STUB_SLEEP=0.3")
	if err != nil {
		t.Fatalf("first build: %v\n%s%s", err, out, errOut)
	}
	wantLines(t, "first build", out,
		"building etcd kube-apiserver kube-controller-manager into "+e.bin, "a first build takes about 11 minutes",
		"[1/3] etcd: building go.etcd.io/etcd/server/v3 (5 packages)", "[1/3] etcd: built in ",
		"[2/3] kube-apiserver: building k8s.io/kubernetes/cmd/kube-apiserver", "[2/3] kube-apiserver: built in ",
		"[3/3] kube-controller-manager: built in ", "still building, ", "packages compiled", "controlplane: done in ")
	if e.builds() != 3 {
		t.Errorf("%d go builds, want one per binary", e.builds())
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(e.bin, "."+b+".stamp")); err != nil {
			t.Errorf("no stamp for %s: %v", b, err)
		}
	}

	out, _, err = e.run()
	if err != nil || e.builds() != 3 {
		t.Fatalf("second run: %v, %d builds in all\n%s", err, e.builds(), out)
	}
	wantLines(t, "second run", out, "etcd, kube-apiserver and kube-controller-manager are cached in "+e.bin)

	// A new pin in kube/go.sum rebuilds kube's two binaries, not etcd.
	f, err := os.OpenFile(filepath.Join(e.modules, "kube", "go.sum"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("example.com/new v1.0.0 h1:x=\n")
	f.Close()
	out, _, err = e.run()
	if err != nil || e.builds() != 5 {
		t.Fatalf("after a pin change: %v, %d builds in all\n%s", err, e.builds(), out)
	}
	wantLines(t, "after a pin change", out, "building kube-apiserver kube-controller-manager into", "[1/3] etcd is cached")

	// A failed build: the compiler's error, non-zero exit, no stamp.
	for _, f := range []string{"kube-controller-manager", ".kube-controller-manager.stamp"} {
		if err := os.Remove(filepath.Join(e.bin, f)); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, err = e.run("STUB_FAIL=k8s.io/kubernetes/cmd/kube-controller-manager")
	if err == nil {
		t.Fatalf("a failed go build exited 0:\n%s", out)
	}
	wantLines(t, "stderr of a failed build", errOut, "main.go:3:2: undefined: brokenThing", "[3/3] kube-controller-manager: go build failed (exit 1)")
	if _, err := os.Stat(filepath.Join(e.bin, ".kube-controller-manager.stamp")); err == nil {
		t.Error("a failed build wrote a stamp")
	}
	if strings.Contains(errOut, "example.com/p1") {
		t.Errorf("package names are shown as errors:\n%s", errOut)
	}

	// On a terminal: a progress bar.
	if _, err := exec.LookPath("script"); err != nil {
		t.Log("no 'script' (util-linux) to give the build a terminal; the progress bar is not checked")
		return
	}
	if err := os.Remove(filepath.Join(e.bin, "etcd")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("script", "-qec", "bash "+e.script, "/dev/null")
	cmd.Env = append(append([]string{}, e.env...), "STUB_SLEEP=0.4")
	tty, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("build on a terminal: %v\n%s", err, tty)
	}
	wantLines(t, "build on a terminal", string(tty), "\r\033[2K  controlplane: [1/3] etcd [", "] 100% 5/5 packages", "[1/3] etcd: built in ")
}

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
