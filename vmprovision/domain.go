package vmprovision

import (
	"fmt"
	"regexp"
	"strings"

	"libvirt.org/go/libvirtxml"
)

// DefaultKernelCmdline is the guest kernel command line: the serial
// console, and a reboot one second after a panic (the panic mode).
const DefaultKernelCmdline = "console=ttyS0 panic=1 loglevel=4"

// DomainSpec describes one node's libvirt domain.
type DomainSpec struct {
	// Name is the domain name, see DomainName.
	Name string
	// Kernel and Initrd are the direct-boot kernel and the node's
	// initramfs (main image + node archive).
	Kernel string
	Initrd string
	// Cmdline is the kernel command line; empty means DefaultKernelCmdline.
	Cmdline string
	// SerialLog is the file that records the serial console.
	SerialLog string
	// MemoryMiB defaults to 512, VCPUs to 1.
	MemoryMiB uint
	VCPUs     uint
	// KVM selects hardware acceleration; false is TCG.
	KVM bool
	// ControlPort is the host port (on 127.0.0.1) forwarded to the agent's
	// control port in the guest.
	ControlPort int
	// GuestControlPort defaults to DefaultAgentControlPort.
	GuestControlPort int
	// Description is the domain's description: who owns it, so that a
	// sweep can find the domains of runs that died (see Libvirt.Sweep).
	Description string
}

// NetdevID is the id of the node's user-mode netdev on the QEMU command
// line (the network blip sets its link).
const NetdevID = "bootproof0"

var domainNameUnsafe = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// DomainName is bootproof-<run>-<node>, with characters libvirt or file
// names dislike replaced.
func DomainName(run, node string) string {
	return domainNameUnsafe.ReplaceAllString("bootproof-"+run+"-"+node, "-")
}

// DomainXML renders the domain: direct kernel boot, TCG (or KVM), a
// user-mode virtio NIC with the agent's control port forwarded, the serial
// console to a file, and reboot/crash restarting the domain.
//
// The NIC is given on the QEMU command line: libvirt's user-mode
// <interface> forwards ports only with the passt backend.
func DomainXML(s DomainSpec) (string, error) {
	if s.Name == "" || s.Kernel == "" || s.Initrd == "" || s.SerialLog == "" {
		return "", fmt.Errorf("domain %q: name, kernel, initrd and serial log are required", s.Name)
	}
	if s.ControlPort <= 0 || s.ControlPort > 65535 {
		return "", fmt.Errorf("domain %s: control port %d out of range", s.Name, s.ControlPort)
	}
	if s.Cmdline == "" {
		s.Cmdline = DefaultKernelCmdline
	}
	if s.MemoryMiB == 0 {
		s.MemoryMiB = 512
	}
	if s.VCPUs == 0 {
		s.VCPUs = 1
	}
	if s.GuestControlPort == 0 {
		s.GuestControlPort = DefaultAgentControlPort
	}
	typ, cpu := "qemu", (*libvirtxml.DomainCPU)(nil) // TCG: QEMU's default CPU model
	if s.KVM {
		typ, cpu = "kvm", &libvirtxml.DomainCPU{Mode: "host-passthrough"}
	}
	serialPort := uint(0)
	d := &libvirtxml.Domain{
		Type:        typ,
		Name:        s.Name,
		Description: s.Description,
		Memory:      &libvirtxml.DomainMemory{Value: s.MemoryMiB, Unit: "MiB"},
		VCPU:        &libvirtxml.DomainVCPU{Value: s.VCPUs},
		OS: &libvirtxml.DomainOS{
			Type:    &libvirtxml.DomainOSType{Arch: "x86_64", Machine: "pc", Type: "hvm"},
			Kernel:  s.Kernel,
			Initrd:  s.Initrd,
			Cmdline: s.Cmdline,
		},
		CPU:        cpu,
		OnPoweroff: "destroy",
		OnReboot:   "restart",
		OnCrash:    "restart",
		Devices: &libvirtxml.DomainDeviceList{
			Serials: []libvirtxml.DomainSerial{{
				Source: &libvirtxml.DomainChardevSource{File: &libvirtxml.DomainChardevSourceFile{Path: s.SerialLog, Append: "on"}},
				Target: &libvirtxml.DomainSerialTarget{Port: &serialPort},
			}},
			Consoles: []libvirtxml.DomainConsole{{
				Source: &libvirtxml.DomainChardevSource{File: &libvirtxml.DomainChardevSourceFile{Path: s.SerialLog, Append: "on"}},
				Target: &libvirtxml.DomainConsoleTarget{Type: "serial", Port: &serialPort},
			}},
			MemBalloon: &libvirtxml.DomainMemBalloon{Model: "none"},
		},
		QEMUCommandline: &libvirtxml.DomainQEMUCommandline{Args: []libvirtxml.DomainQEMUCommandlineArg{
			{Value: "-netdev"},
			{Value: fmt.Sprintf("user,id=%s,hostfwd=tcp:127.0.0.1:%d-:%d", NetdevID, s.ControlPort, s.GuestControlPort)},
			{Value: "-device"},
			{Value: "virtio-net-pci,netdev=" + NetdevID + ",romfile="},
		}},
	}
	out, err := d.Marshal()
	if err != nil {
		return "", fmt.Errorf("domain %s: %w", s.Name, err)
	}
	return strings.TrimSpace(out) + "\n", nil
}
