package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cpbuild"
)

// cliRun runs the command line in this process; it returns the exit code,
// stdout and stderr.
func cliRun(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestVersionCommand: text by default, JSON with --output json (the
// pinned versions the binary carries), and an unknown format refused
// with what is accepted.
func TestVersionCommand(t *testing.T) {
	code, out, _ := cliRun("version")
	if code != ExitOK || !strings.Contains(out, "kubernetes:      "+cpbuild.KubernetesVersion()) || !strings.Contains(out, "bootproof:") {
		t.Errorf("version: exit %d\n%s", code, out)
	}
	code, out, _ = cliRun("version", "-o", "json")
	var v struct{ Kubernetes, Etcd string }
	if err := json.Unmarshal([]byte(out), &v); code != ExitOK || err != nil || v.Kubernetes != cpbuild.KubernetesVersion() || v.Etcd != cpbuild.EtcdVersion() {
		t.Errorf("version -o json: exit %d, %v\n%s", code, err, out)
	}
	code, _, errOut := cliRun("version", "--output", "yaml")
	if code != ExitUsage || !strings.Contains(errOut, `invalid --output "yaml": accepted: text, json`) {
		t.Errorf("version --output yaml: exit %d: %s", code, errOut)
	}
}

// TestControlPlaneBuildCommand: 'path' prints the per-user cache under
// $XDG_CACHE_HOME; 'build' builds there with the go command on $PATH (a
// stub here), and only kube-controller-manager when envtest's
// $KUBEBUILDER_ASSETS has an etcd and a kube-apiserver that fit; one
// that does not fit is named and all three are built.
func TestControlPlaneBuildCommand(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", xdg)
	cache := filepath.Join(xdg, "bootproof", "controlplane", cpbuild.KubernetesVersion())
	if code, out, errOut := cliRun("controlplane", "path"); code != ExitOK || out != cache+"\n" {
		t.Fatalf("controlplane path: exit %d, %q (%s), want %q", code, out, errOut, cache)
	}

	stubs := t.TempDir()
	writeExe := func(dir, name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeExe(stubs, "go", `case "$1" in
list) echo example.com/p1 ;;
build) while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done; echo example.com/p1 >&2; printf '#!/bin/sh\n' > "$out"; chmod +x "$out" ;;
esac`)
	t.Setenv("PATH", stubs+":"+os.Getenv("PATH"))
	assets := t.TempDir()
	writeExe(assets, controlplane.BinEtcd, "echo 'etcd Version: 3.6.1'")
	writeExe(assets, controlplane.BinKubeAPIServer, "echo 'Kubernetes "+cpbuild.KubernetesVersion()+"'")
	t.Setenv(controlplane.EnvKubebuilderAssets, assets)
	code, out, errOut := cliRun("controlplane", "build")
	if code != ExitOK || !strings.Contains(out, "etcd and kube-apiserver from $KUBEBUILDER_ASSETS ("+assets+") fit; building kube-controller-manager only") ||
		!strings.Contains(out, "[1/1] kube-controller-manager: built in") {
		t.Fatalf("build with fitting envtest binaries: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(cache, controlplane.BinEtcd)); err == nil {
		t.Error("etcd was built though envtest's fits")
	}

	writeExe(assets, controlplane.BinKubeAPIServer, "echo 'Kubernetes v1.20.0'")
	code, out, errOut = cliRun("controlplane", "build")
	if code != ExitOK || !strings.Contains(out, "not using $KUBEBUILDER_ASSETS: "+filepath.Join(assets, controlplane.BinKubeAPIServer)+" is 1.20: accepted:") ||
		!strings.Contains(out, "controlplane: building etcd kube-apiserver into "+cache) {
		t.Fatalf("build with an envtest kube-apiserver too old: exit %d\n%s%s", code, out, errOut)
	}

	// A failed go build is an infrastructure fault quoting the compiler.
	writeExe(stubs, "go", `case "$1" in list) echo p ;; build) echo "x.go:1:1: broken" >&2; exit 1 ;; esac`)
	code, _, errOut = cliRun("controlplane", "build", "--dir", t.TempDir())
	if code != ExitInfra || !strings.Contains(errOut, "build etcd: exit status 1") || !strings.Contains(errOut, "x.go:1:1: broken") {
		t.Errorf("a failed build: exit %d: %s", code, errOut)
	}
}
