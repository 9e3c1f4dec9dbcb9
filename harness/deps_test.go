package harness

import (
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
		{"./cmd/bootproof-agent", []string{"scenarios", "harness/", "kmm", "vmprovision", "libvirt.org/go/libvirtxml", "github.com/cavaliergopher/cpio"}},
		{"./fakes", []string{"scenarios", "harness/", "kmm", "vmprovision"}},
		{"./vmprovision", []string{"scenarios", "harness/", "kmm"}},
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
