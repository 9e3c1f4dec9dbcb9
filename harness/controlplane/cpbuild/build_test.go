package cpbuild

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stubGo stands in for the go command: 'go list -deps' names STUB_TOTAL
// packages, 'go build -v' names them as it "compiles" them (STUB_SLEEP
// seconds apart) and writes the -o file, unless the package is STUB_FAIL.
// Each call is logged to STUB_LOG with the files of its directory.
const stubGo = `#!/usr/bin/env bash
echo "$* [in: $(ls | tr '\n' ' ')]" >> "$STUB_LOG"
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

type stub struct {
	t        *testing.T
	goCmd    string
	log, bin string
}

func newStub(t *testing.T) *stub {
	t.Helper()
	root := t.TempDir()
	s := &stub{t: t, goCmd: filepath.Join(root, "go"), log: filepath.Join(root, "go.log"), bin: filepath.Join(root, "bin")}
	if err := os.WriteFile(s.goCmd, []byte(stubGo), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STUB_LOG", s.log)
	return s
}

// build runs Build into the stub's bin with the given environment.
func (s *stub) build(env ...string) (string, error) {
	s.t.Helper()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		s.t.Setenv(k, v)
	}
	var out bytes.Buffer
	err := Build(context.Background(), Options{Dir: s.bin, Go: s.goCmd, Out: &out, ProgressEvery: 200 * time.Millisecond})
	return out.String(), err
}

// calls returns the stub's logged calls of a kind ("build", "list").
func (s *stub) calls(kind string) []string {
	data, _ := os.ReadFile(s.log)
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, kind+" ") {
			out = append(out, l)
		}
	}
	return out
}

func wantLines(t *testing.T, what, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, out)
		}
	}
}

// TestBuild runs Build over a stub go: a first build says what it builds,
// the ~11 minute expectation, a line per binary with its time and progress
// lines, and builds each in a module holding its pins with the pinned
// flags; a second run says the binaries are cached and builds nothing; a
// binary whose stamp no longer matches is rebuilt alone; a failed build
// returns a *BuildError with the compiler's error and leaves no stamp.
func TestBuild(t *testing.T) {
	s := newStub(t)
	out, err := s.build("STUB_SLEEP=0.15")
	if err != nil {
		t.Fatalf("first build: %v\n%s", err, out)
	}
	wantLines(t, "first build", out,
		"building etcd kube-apiserver kube-controller-manager into "+s.bin, "k8s.io/kubernetes "+KubernetesVersion(), "a first build takes about 11 minutes",
		"[1/3] etcd: building go.etcd.io/etcd/server/v3 (5 packages)", "[1/3] etcd: built in ", "(5 packages compiled",
		"[2/3] kube-apiserver: building k8s.io/kubernetes/cmd/kube-apiserver", "[2/3] kube-apiserver: built in ",
		"[3/3] kube-controller-manager: built in ", "still building, ", "packages compiled (cached ones are not counted)", "controlplane: done in ")
	builds := s.calls("build")
	if len(builds) != 3 {
		t.Fatalf("%d go builds, want one per binary: %q", len(builds), builds)
	}
	for _, b := range builds {
		// The flags the stamps and the kind node image rely on, in a
		// module of the pins (go.mod and go.sum only).
		wantLines(t, "go build", b, "-trimpath -ldflags "+Ldflags(), "[in: go.mod go.sum ]")
	}
	for _, c := range Components {
		if !Current(s.bin, c) {
			t.Errorf("%s is not current after its build", c.Binary)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(s.bin, ".build-*")); len(left) > 0 {
		t.Errorf("module directories left: %v", left)
	}

	out, err = s.build()
	if err != nil || len(s.calls("build")) != 3 {
		t.Fatalf("second run: %v, %d builds in all\n%s", err, len(s.calls("build")), out)
	}
	wantLines(t, "second run", out, "etcd, kube-apiserver and kube-controller-manager are cached in "+s.bin)

	// A stale stamp (other pins, another recipe) rebuilds that binary alone.
	if err := os.WriteFile(filepath.Join(s.bin, ".kube-apiserver.stamp"), []byte("other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = s.build()
	if err != nil || len(s.calls("build")) != 4 {
		t.Fatalf("after a stale stamp: %v, %d builds in all\n%s", err, len(s.calls("build")), out)
	}
	wantLines(t, "after a stale stamp", out, "building kube-apiserver into", "[1/3] etcd is cached", "[3/3] kube-controller-manager is cached")

	// A failed build: the compiler's error, no stamp.
	if err := os.Remove(filepath.Join(s.bin, "kube-controller-manager")); err != nil {
		t.Fatal(err)
	}
	out, err = s.build("STUB_FAIL=k8s.io/kubernetes/cmd/kube-controller-manager")
	var be *BuildError
	if !errors.As(err, &be) || be.Binary != "kube-controller-manager" || !strings.Contains(err.Error(), "main.go:3:2: undefined: brokenThing") {
		t.Fatalf("a failed build = %v, want a *BuildError of kube-controller-manager quoting the compiler\n%s", err, out)
	}
	if strings.Contains(err.Error(), "example.com/p1") {
		t.Errorf("package names are shown as errors: %v", err)
	}
	wantLines(t, "a failed build's progress", out, "[3/3] kube-controller-manager: go build failed (exit status 1)")
	if _, err := os.Stat(filepath.Join(s.bin, ".kube-controller-manager.stamp")); err == nil {
		t.Error("a failed build left a stamp")
	}
}

// TestBuildOnly: Options.Only builds the binaries named, and refuses a
// name that is none, saying which are.
func TestBuildOnly(t *testing.T) {
	s := newStub(t)
	var out bytes.Buffer
	err := Build(context.Background(), Options{Dir: s.bin, Go: s.goCmd, Out: &out, Only: []string{"kube-controller-manager"}})
	if err != nil {
		t.Fatal(err)
	}
	if b := s.calls("build"); len(b) != 1 || !strings.Contains(b[0], " k8s.io/kubernetes/cmd/kube-controller-manager [in:") {
		t.Errorf("builds %q, want kube-controller-manager's alone", b)
	}
	err = Build(context.Background(), Options{Dir: s.bin, Go: s.goCmd, Only: []string{"kubelet"}})
	if err == nil || !strings.Contains(err.Error(), `Options.Only: "kubelet": accepted: etcd, kube-apiserver, kube-controller-manager`) {
		t.Errorf("Only kubelet = %v", err)
	}
	if err := Build(context.Background(), Options{}); err == nil || !strings.Contains(err.Error(), "Options.Dir: required") {
		t.Errorf("no Dir = %v", err)
	}
	err = Build(context.Background(), Options{Dir: s.bin, Go: "no-such-go-command"})
	if err == nil || !strings.Contains(err.Error(), `"no-such-go-command": executable file not found`) || !strings.Contains(err.Error(), "install Go 1.26") {
		t.Errorf("no go command = %v", err)
	}
}

// TestBar: the terminal's progress bar.
func TestBar(t *testing.T) {
	got := bar("controlplane: [1/3] etcd", 5, 10, 75*time.Second)
	want := "\r\033[2K  controlplane: [1/3] etcd [###############...............]  50% 5/10 packages, 1 min 15 s"
	if got != want {
		t.Errorf("bar = %q, want %q", got, want)
	}
}
