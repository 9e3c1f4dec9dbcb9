package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/bootproof/bootproof/vmprovision"
)

// Accelerator choices of the libvirt backend.
const (
	AccelAuto = "auto" // KVM where a probe boot succeeds, else TCG
	AccelKVM  = "kvm"
	AccelTCG  = "tcg"
)

// LibvirtConfig configures the libvirt VM backend.
type LibvirtConfig struct {
	// URI is the libvirt connection; default qemu:///system.
	URI string
	// Agent is the static bootproof-agent binary; default
	// bootproof-agent next to the running executable.
	Agent string
	// KernelDir is an unpacked kernel tree (boot/vmlinuz-<v>,
	// lib/modules/<v> with modules.dep); empty: download KernelPackage.
	KernelDir string
	// KernelPackage is the Debian/Ubuntu kernel package downloaded into
	// CacheDir when KernelDir is empty; default the host distribution's
	// (linux-image-amd64 on Debian, linux-image-generic on Ubuntu).
	KernelPackage string
	// Modules go into the image with their dependencies; nil means
	// vmprovision.DefaultImageModules.
	Modules []string
	// CacheDir holds downloaded kernels and built images; default
	// .cache under the working directory.
	CacheDir string
	// Dir holds the run's per-node initramfs (removed at Close) and
	// serial logs (kept); required.
	Dir string
	// Accel is auto, kvm or tcg; default auto.
	Accel string
	// ProbeTimeout bounds the KVM probe boot; default 20s.
	ProbeTimeout time.Duration
	// Firmware is the guests' BIOS: FirmwareAuto (default) is Qboot
	// where it is installed (vmprovision.QbootPath), else QEMU's default
	// SeaBIOS; FirmwareSeaBIOS is QEMU's default; any other value is the
	// path of a BIOS ROM.
	Firmware string
	// Progress, when set, is told what preparing the guest is about to
	// do that takes long (the kernel's download), so that it does not
	// look hung.
	Progress io.Writer
	// BzImage boots the kernel's bzImage as packaged; by default the
	// domains boot its uncompressed ELF kernel at its PVH entry point
	// (vmprovision.PVHKernel) where the kernel has one.
	BzImage bool
}

// Firmware choices of the libvirt backend.
const (
	FirmwareAuto    = "auto"
	FirmwareSeaBIOS = "seabios"
)

// firmware is the BIOS ROM the domains run; empty: QEMU's default.
func (c *LibvirtConfig) firmware() string {
	switch c.Firmware {
	case "", FirmwareAuto:
		if _, err := os.Stat(vmprovision.QbootPath); err == nil {
			return vmprovision.QbootPath
		}
		return ""
	case FirmwareSeaBIOS:
		return ""
	}
	return c.Firmware
}

// Default fills in defaults.
func (c *LibvirtConfig) Default() error {
	if c.Accel == "" {
		c.Accel = AccelAuto
	}
	if c.CacheDir == "" {
		c.CacheDir = ".cache"
	}
	// libvirt resolves the kernel, initrd and serial log paths itself:
	// they must be absolute.
	for _, p := range []*string{&c.CacheDir, &c.Dir, &c.KernelDir, &c.Agent} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("libvirt backend: %w", err)
		}
		*p = abs
	}
	if c.ProbeTimeout == 0 {
		c.ProbeTimeout = 20 * time.Second
	}
	if c.Agent == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("locate bootproof-agent: %w", err)
		}
		c.Agent = filepath.Join(filepath.Dir(exe), "bootproof-agent")
	}
	return nil
}

// Validate checks the configuration without touching libvirt.
func (c *LibvirtConfig) Validate() error {
	if err := CheckLibvirtURI(c.URI); err != nil {
		return err
	}
	switch c.Accel {
	case AccelAuto, AccelKVM, AccelTCG:
	default:
		return fmt.Errorf("invalid accelerator %q: accepted: auto, kvm, tcg", c.Accel)
	}
	if st, err := os.Stat(c.Agent); err != nil || st.IsDir() {
		return fmt.Errorf("guest agent %s: not a file (build it with 'make build-libvirt', or CGO_ENABLED=0 go build -o bin/bootproof-agent ./cmd/bootproof-agent)", c.Agent)
	}
	if c.KernelDir != "" {
		if _, err := os.Stat(c.KernelDir); err != nil {
			return fmt.Errorf("kernel directory: %w", err)
		}
	}
	if fw := c.firmware(); fw != "" {
		if st, err := os.Stat(fw); err != nil || st.IsDir() {
			return fmt.Errorf("firmware %q: not a file: accepted: %s, %s or a BIOS ROM's path", c.Firmware, FirmwareAuto, FirmwareSeaBIOS)
		}
	}
	return nil
}

// CheckLibvirtURI refuses a libvirt URI that does not parse as one; empty
// is the default, qemu:///system.
func CheckLibvirtURI(uri string) error {
	if uri == "" {
		return nil
	}
	_, err := vmprovision.ParseLibvirtURI(uri)
	return err
}

// Guest is a prepared guest: the kernel, the main initramfs and the
// kernel image the domains boot.
type Guest struct {
	// Image is the main initramfs; Image.Kernel the kernel tree.
	Image *vmprovision.Image
	// Kernel says where the kernel tree came from: KernelGiven
	// (--kernel-dir), KernelCached or KernelDownloaded.
	Kernel string
	// PVH is the uncompressed kernel the domains boot at its PVH entry
	// (vmprovision.PVHKernel); empty when they boot the bzImage, because
	// BzImage asks for it or for NoPVH's reason.
	PVH   string
	NoPVH error
}

// Where a prepared guest's kernel came from.
const (
	KernelGiven      = "given"
	KernelCached     = "cached"
	KernelDownloaded = "downloaded"
)

// Boot is the kernel image the domains boot: PVH, else the bzImage.
func (g *Guest) Boot() string {
	if g.PVH != "" {
		return g.PVH
	}
	return g.Image.Kernel.Vmlinuz()
}

// PrepareGuest prepares everything a VM run boots, once, into CacheDir:
// the guest kernel (found in KernelDir, or downloaded once into
// CacheDir/kernel), the main initramfs (CacheDir/images, by content hash)
// and, unless BzImage, the kernel's uncompressed ELF the domains boot
// (written next to its bzImage). A second call finds all of it cached.
// 'bootproof image build' runs it ahead of a run; StartLibvirt runs it
// for each run. cfg gets its defaults.
func PrepareGuest(ctx context.Context, cfg LibvirtConfig) (*Guest, error) {
	if err := cfg.Default(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Guest{}
	var kernel vmprovision.KernelTree
	var err error
	switch {
	case cfg.KernelDir != "":
		g.Kernel = KernelGiven
		kernel, err = vmprovision.FindKernelTree(cfg.KernelDir, "")
	default:
		g.Kernel = KernelCached
		kernelCache := filepath.Join(cfg.CacheDir, "kernel")
		kernel, err = vmprovision.CachedDebianKernel(ctx, kernelCache, cfg.KernelPackage)
		if errors.Is(err, vmprovision.ErrNotPrepared) {
			g.Kernel = KernelDownloaded
			if cfg.Progress != nil {
				fmt.Fprintf(cfg.Progress, "guest kernel: downloading it with apt-get, unpacking and indexing it, once (%v)\n", err)
			}
			kernel, err = vmprovision.FetchDebianKernel(ctx, kernelCache, cfg.KernelPackage)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("guest kernel: %w", err)
	}
	g.Image, err = vmprovision.BuildImage(vmprovision.ImageSpec{Kernel: kernel, Agent: cfg.Agent, Modules: cfg.Modules}, filepath.Join(cfg.CacheDir, "images"))
	if err != nil {
		return nil, fmt.Errorf("guest image: %w", err)
	}
	if !cfg.BzImage {
		// The same kernel without its in-guest decompression (seconds
		// under TCG); one without a PVH entry boots as its bzImage.
		g.PVH, g.NoPVH = vmprovision.PVHKernel(ctx, kernel)
	}
	return g, nil
}
