package vmprovision

import (
	"strings"
	"testing"
)

func TestDomainXML(t *testing.T) {
	base := DomainSpec{
		Name: DomainName("run1", "vm-0"), Kernel: "/cache/kernel/vmlinuz-6.1.0-57-amd64", Initrd: "/run/vm-0.initrd",
		SerialLog: "/reports/run1/vm-0.serial.log", ControlPort: 40001,
	}
	fwd := base
	fwd.APIServer, fwd.Forwarder = "127.0.0.1:39411", "/usr/bin/socat"
	fast := base
	fast.Kernel, fast.Firmware = "/cache/kernel/vmlinux-6.1.0-57-amd64", "/usr/share/qemu/qboot.rom"
	kvm := base
	kvm.KVM, kvm.MemoryMiB, kvm.VCPUs, kvm.Cmdline = true, 1024, 2, "console=ttyS0 panic=1 quiet"
	tests := []struct {
		name    string
		spec    DomainSpec
		golden  string
		wantErr string
	}{
		{name: "tcg defaults", spec: base, golden: "domain/tcg.xml.golden"},
		{name: "kvm", spec: kvm, golden: "domain/kvm.xml.golden"},
		{name: "pvh kernel and qboot", spec: fast, golden: "domain/qboot.xml.golden"},
		{name: "api server forward", spec: fwd, golden: "domain/forward.xml.golden"},
		{name: "forward target with a comma", spec: DomainSpec{Name: "x", Kernel: "k", Initrd: "i", SerialLog: "s", ControlPort: 1, APIServer: "a,b:1"}, wantErr: "forward target"},
		{name: "forwarder with a space", spec: DomainSpec{Name: "x", Kernel: "k", Initrd: "i", SerialLog: "s", ControlPort: 1, APIServer: "a:1", Forwarder: "/bin/sh -c"}, wantErr: "forwarder"},
		{name: "no initrd", spec: DomainSpec{Name: "x", Kernel: "k", SerialLog: "s", ControlPort: 1}, wantErr: "initrd"},
		{name: "no port", spec: DomainSpec{Name: "x", Kernel: "k", Initrd: "i", SerialLog: "s"}, wantErr: "control port 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DomainXML(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.golden, got)
		})
	}
}

func TestDomainName(t *testing.T) {
	for in, want := range map[[2]string]string{
		{"run1", "vm-0"}:            "bootproof-run1-vm-0",
		{"2026-11-30T02:51", "n/1"}: "bootproof-2026-11-30T02-51-n-1",
	} {
		if got := DomainName(in[0], in[1]); got != want {
			t.Errorf("DomainName(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
}

func TestGuestAPIServer(t *testing.T) {
	tests := []struct {
		in, url, serverName, target, err string
	}{
		{in: "https://127.0.0.1:6443", url: "https://10.0.2.100:6443", serverName: "127.0.0.1", target: "127.0.0.1:6443"},
		{in: "https://localhost:6443/", url: "https://10.0.2.100:6443", serverName: "localhost", target: "localhost:6443"},
		{in: "https://[::1]:8443", url: "https://10.0.2.100:6443", serverName: "::1", target: "[::1]:8443"},
		{in: "https://127.0.0.1", url: "https://10.0.2.100:6443", serverName: "127.0.0.1", target: "127.0.0.1:443"},
		// Not loopback: still only through the forward, which the host dials.
		{in: "https://api.example.test:6443/prefix", url: "https://10.0.2.100:6443/prefix", serverName: "api.example.test", target: "api.example.test:6443"},
		{in: "not a url", err: `api server "not a url": not a URL`},
		{in: "http://127.0.0.1:8080", err: "want https"},
	}
	for _, tt := range tests {
		url, sn, target, err := GuestAPIServer(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("GuestAPIServer(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || url != tt.url || sn != tt.serverName || target != tt.target {
			t.Errorf("GuestAPIServer(%q) = %q, %q, %q, %v; want %q, %q, %q", tt.in, url, sn, target, err, tt.url, tt.serverName, tt.target)
		}
	}
}
