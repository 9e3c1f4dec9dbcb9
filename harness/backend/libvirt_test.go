package backend

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGuestAPIServer(t *testing.T) {
	tests := []struct {
		in, url, serverName, err string
	}{
		{in: "https://127.0.0.1:6443", url: "https://10.0.2.2:6443", serverName: "127.0.0.1"},
		{in: "https://localhost:6443/", url: "https://10.0.2.2:6443", serverName: "localhost"},
		{in: "https://[::1]:8443", url: "https://10.0.2.2:8443", serverName: "::1"},
		{in: "https://127.0.0.1", url: "https://10.0.2.2:443", serverName: "127.0.0.1"},
		// Not loopback: the guest reaches it through QEMU's NAT as is.
		{in: "https://192.168.1.10:6443", url: "https://192.168.1.10:6443"},
		{in: "https://api.example.test:6443", url: "https://api.example.test:6443"},
		{in: "not a url", err: `api server "not a url": not a URL`},
	}
	for _, tt := range tests {
		url, sn, err := GuestAPIServer(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("GuestAPIServer(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || url != tt.url || sn != tt.serverName {
			t.Errorf("GuestAPIServer(%q) = %q, %q, %v; want %q, %q", tt.in, url, sn, err, tt.url, tt.serverName)
		}
	}
}

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
