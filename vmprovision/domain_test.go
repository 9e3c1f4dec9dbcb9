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
