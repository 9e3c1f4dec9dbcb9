package harness

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestLinkedPackages checks what the lightweight parts link, as the go
// tool resolves it for this platform (depguard checks each import; this
// checks the whole closure): the guest agent and the simulated nodes link
// neither the scenario engine nor the harness, and the agent links none
// of the VM backend's host side (image builder, libvirt XML).
func TestLinkedPackages(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go tool to list dependencies")
	}
	const mod = "github.com/bootproof/bootproof/"
	for _, tc := range []struct {
		pkg    string
		denied []string // module-relative packages, or a full path; a trailing / denies the subtree
	}{
		{"./cmd/bootproof-agent", []string{"scenarios", "harness/", "internal/", "kmm", "vmprovision", "libvirt.org/go/libvirtxml", "github.com/cavaliergopher/cpio"}},
		{"./fakes", []string{"scenarios", "harness/", "internal/", "kmm", "vmprovision"}},
		{"./vmprovision", []string{"scenarios", "harness/", "internal/", "kmm"}},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			out, err := exec.Command(goBin, "list", "-deps", "../"+strings.TrimPrefix(tc.pkg, "./")).Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", tc.pkg, err)
			}
			deps := strings.Fields(string(out))
			for _, d := range tc.denied {
				full := d
				if !strings.Contains(d, ".") {
					full = mod + d
				}
				for _, dep := range deps {
					if dep == strings.TrimSuffix(full, "/") || (strings.HasSuffix(full, "/") && strings.HasPrefix(dep, full)) {
						t.Errorf("%s links %s", tc.pkg, dep)
					}
				}
			}
		})
	}
}

// TestSharedModuleVersions checks that every module whose packages both
// bootproof and the control plane (tools/controlplane/kube) link is at one
// version in both: both are built with CGO_ENABLED=0 and -trimpath, so
// then the control plane's compile (make controlplane, first in .ci/run)
// serves most of bootproof's, client-go's whole tree included. One module
// apart (say golang.org/x/net) makes everything above it compile twice.
func TestSharedModuleVersions(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go tool to list modules")
	}
	linked := func(dir string, pkgs ...string) map[string]string {
		t.Helper()
		args := append([]string{"list", "-deps", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{with .Replace}} {{.Version}}{{end}}{{end}}"}, pkgs...)
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("go list -deps %v in %s: %v\n%s", pkgs, dir, err, ee.Stderr)
			}
			t.Fatalf("go list -deps %v in %s: %v", pkgs, dir, err)
		}
		mods := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				mods[f[0]] = f[len(f)-1] // the replacement's version where there is one
			}
		}
		return mods
	}
	ours := linked("..", "./cmd/bootproof")
	plane := linked("../tools/controlplane/kube", "k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager")
	shared := 0
	for mod, v := range ours {
		pv, ok := plane[mod]
		if !ok {
			continue
		}
		shared++
		if pv != v {
			t.Errorf("module %s: %s in go.mod, %s in tools/controlplane/kube/go.mod: set go.mod's to %s (go get %s@%s), so that the control plane's compile serves bootproof's", mod, v, pv, pv, mod, pv)
		}
	}
	if shared < 20 {
		t.Errorf("bootproof and the control plane share %d modules; want the Kubernetes client libraries among them (is the listing wrong?)", shared)
	}
}
