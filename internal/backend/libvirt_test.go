package backend

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/vmprovision"
)

func TestLibvirtConfig(t *testing.T) {
	dir := t.TempDir()
	agent := filepath.Join(dir, "bootproof-agent")
	if err := os.WriteFile(agent, []byte("agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  LibvirtConfig
		err  string
	}{
		{"defaults", LibvirtConfig{Agent: agent}, ""},
		{"tcg", LibvirtConfig{Agent: agent, Accel: AccelTCG}, ""},
		{"bad accelerator", LibvirtConfig{Agent: agent, Accel: "hvf"}, `invalid accelerator "hvf": accepted: auto, kvm, tcg`},
		{"no agent", LibvirtConfig{Agent: filepath.Join(dir, "missing")}, "not a file (build it with 'make build-libvirt'"},
		{"agent is a directory", LibvirtConfig{Agent: dir}, "not a file"},
		{"no kernel dir", LibvirtConfig{Agent: agent, KernelDir: filepath.Join(dir, "kernel")}, "kernel directory:"},
		{"seabios", LibvirtConfig{Agent: agent, Firmware: FirmwareSeaBIOS}, ""},
		{"firmware rom", LibvirtConfig{Agent: agent, Firmware: agent}, ""},
		{"missing firmware", LibvirtConfig{Agent: agent, Firmware: "qboot"}, `firmware "qboot": not a file: accepted: auto, seabios or a BIOS ROM's path`},
		{"firmware is a directory", LibvirtConfig{Agent: agent, Firmware: dir}, "not a file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cfg
			if err := c.Default(); err != nil {
				t.Fatal(err)
			}
			err := c.Validate()
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("Validate() = %v, want %q", err, tt.err)
			}
			// libvirt resolves paths itself: every path is absolute.
			for _, p := range []string{c.CacheDir, c.Agent} {
				if !filepath.IsAbs(p) {
					t.Errorf("path %q is not absolute", p)
				}
			}
		})
	}
}

func TestLibvirtFirmware(t *testing.T) {
	_, err := os.Stat(vmprovision.QbootPath)
	auto := ""
	if err == nil {
		auto = vmprovision.QbootPath
	}
	for in, want := range map[string]string{
		"":              auto,
		FirmwareAuto:    auto,
		FirmwareSeaBIOS: "",
		"/x/bios.bin":   "/x/bios.bin",
	} {
		c := LibvirtConfig{Firmware: in}
		if got := c.firmware(); got != want {
			t.Errorf("firmware %q: the domains run %q, want %q", in, got, want)
		}
	}
}

// TestPrepareGuest prepares a guest from a given kernel tree twice: the
// first builds the image, the second finds it cached; a kernel without a
// PVH entry (here not a bzImage at all) boots as its bzImage and says
// why; BzImage asks for the bzImage without trying.
func TestPrepareGuest(t *testing.T) {
	cache := t.TempDir()
	kernelDir, err := filepath.Abs("../../vmprovision/testdata/image/kernel")
	if err != nil {
		t.Fatal(err)
	}
	cfg := LibvirtConfig{Agent: "../../vmprovision/testdata/image/agent/bootproof-agent", KernelDir: kernelDir, CacheDir: cache, Modules: []string{"dummy"}}
	g, err := PrepareGuest(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	bz := filepath.Join(kernelDir, "boot", "vmlinuz-6.1.0-test-amd64")
	if g.Kernel != KernelGiven || g.Image.Cached || !strings.HasPrefix(g.Image.Path, filepath.Join(cache, "images")+"/") {
		t.Errorf("first: kernel %s, image %s cached %v; want given, built into %s/images", g.Kernel, g.Image.Path, g.Image.Cached, cache)
	}
	if g.PVH != "" || g.NoPVH == nil || !strings.Contains(g.NoPVH.Error(), "not a bzImage") || g.Boot() != bz {
		t.Errorf("first: PVH %q (%v), boot %s; want the bzImage %s and why", g.PVH, g.NoPVH, g.Boot(), bz)
	}
	again, err := PrepareGuest(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Image.Cached || again.Image.Path != g.Image.Path {
		t.Errorf("second: image %s cached %v; want the first's %s, cached", again.Image.Path, again.Image.Cached, g.Image.Path)
	}
	cfg.BzImage = true
	bzg, err := PrepareGuest(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if bzg.PVH != "" || bzg.NoPVH != nil || bzg.Boot() != bz {
		t.Errorf("BzImage: PVH %q (%v), boot %s; want the bzImage, not tried", bzg.PVH, bzg.NoPVH, bzg.Boot())
	}
	cfg.KernelDir = filepath.Join(cache, "nowhere")
	if _, err := PrepareGuest(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "kernel directory") {
		t.Errorf("missing kernel directory: %v", err)
	}
}
