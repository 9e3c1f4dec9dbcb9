package vmprovision

import (
	"fmt"
	"regexp"
	"strings"

	"libvirt.org/go/libvirtxml"
)

// DefaultKernelCmdline is the guest kernel command line: the serial
// console, a reboot one second after a panic (the panic mode), and no
// self-tests of the crypto algorithms at boot (cryptomgr.notests: over a
// second under TCG, and no part of what a reboot test exercises).
const DefaultKernelCmdline = "console=ttyS0 panic=1 loglevel=4 cryptomgr.notests"

// QbootPath is where Debian's qemu-system-data installs Qboot, a minimal
// BIOS that starts a direct-boot kernel much sooner than SeaBIOS.
const QbootPath = "/usr/share/qemu/qboot.rom"

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
	// Firmware is the BIOS image QEMU runs (a ROM such as Qboot); empty
	// means QEMU's default, SeaBIOS.
	Firmware string
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
	// GuestControlPort defaults to guest.DefaultAgentControlPort.
	GuestControlPort int
	// Description is the domain's description: who owns it, so that a
	// sweep can find the domains of runs that died (see Libvirt.Sweep).
	Description string
	// APIServer is the host:port the guest's API server connections are
	// forwarded to (see GuestAPIServer); empty: the guest reaches nothing.
	APIServer string
	// Forwarder is the program QEMU runs per forwarded connection; empty
	// means DefaultForwarder.
	Forwarder string
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
// restricted user-mode virtio NIC with the agent's control port forwarded
// in and only the API server forwarded out (NetdevSpec), the serial
// console to a file, and reboot/crash restarting the domain.
//
// The NIC is given on the QEMU command line: libvirt's user-mode
// <interface> forwards ports only with the passt backend. With an API
// server forward, the domain replaces libvirt's seccomp sandbox with one
// that lets QEMU spawn the forwarder (guestSandbox).
func DomainXML(s DomainSpec) (string, error) {
	if s.Name == "" || s.Kernel == "" || s.Initrd == "" || s.SerialLog == "" {
		return "", fmt.Errorf("domain %q: name, kernel, initrd and serial log are required", s.Name)
	}
	netdev, err := NetdevSpec{ControlPort: s.ControlPort, GuestControlPort: s.GuestControlPort, APIServer: s.APIServer, Forwarder: s.Forwarder}.Netdev()
	if err != nil {
		return "", fmt.Errorf("domain %s: %w", s.Name, err)
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
			{Value: netdev},
			{Value: "-device"},
			{Value: "virtio-net-pci,netdev=" + NetdevID + ",romfile="},
		}},
	}
	if s.APIServer != "" {
		d.QEMUCapabilities = &libvirtxml.DomainQEMUCapabilities{Del: []libvirtxml.DomainQEMUCapabilitiesEntry{{Name: "seccomp-sandbox"}}}
		d.QEMUCommandline.Args = append(d.QEMUCommandline.Args, libvirtxml.DomainQEMUCommandlineArg{Value: "-sandbox"}, libvirtxml.DomainQEMUCommandlineArg{Value: guestSandbox})
	}
	if s.Firmware != "" {
		d.OS.Loader = &libvirtxml.DomainLoader{Path: s.Firmware, Readonly: "yes", Type: "rom"}
	}
	out, err := d.Marshal()
	if err != nil {
		return "", fmt.Errorf("domain %s: %w", s.Name, err)
	}
	return strings.TrimSpace(out) + "\n", nil
}
