package backend

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/internal/shutdown"
	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/scenarios"
	"github.com/bootproof/bootproof/vmprovision"
)

// Libvirt is a started libvirt VM backend: the guest image is built, the
// accelerator chosen and libvirt connected. Close removes every domain of
// the run.
type Libvirt struct {
	*vmprovision.Backend
	hv         *vmprovision.Libvirt
	unregister func()
	// Accel is the accelerator chosen: kvm or tcg.
	Accel string
	// KernelVersion is the guest kernel's release.
	KernelVersion string
}

var _ nodeapi.NodeBackend = (*Libvirt)(nil)

// StartLibvirt prepares the VM backend for cl: nodes act as
// system:node:<name> with credentials the cluster issues and reach its
// API server, and nothing else, through QEMU user-mode networking
// (vmprovision.GuestAPIServer).
func StartLibvirt(ctx context.Context, cl scenarios.Cluster, cfg LibvirtConfig) (_ *Libvirt, retErr error) {
	log := logr.FromContextOrDiscard(ctx)
	if err := cfg.Default(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Dir == "" {
		return nil, errors.New("libvirt backend: a run directory is required")
	}
	iss := cluster.IssuerOf(cl)
	if iss == nil {
		return nil, &contract.InputError{Field: field.NewPath("NodeCredentials"), Reason: fmt.Sprintf("vm nodes need per-node credentials (system:node:<name>) from cluster %s: use csr", cl.Name())}
	}
	guest, err := PrepareGuest(ctx, cfg)
	if err != nil {
		return nil, err
	}
	img, kernel := guest.Image, guest.Image.Kernel
	log.Info("guest image", "kernel", kernel.Version, "kernelFrom", guest.Kernel, "image", img.Path, "cached", img.Cached, "modules", img.Manifest.Modules)
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("vm directory: %w", err)
	}
	hv, err := vmprovision.ConnectLibvirt(cfg.URI)
	if err != nil {
		return nil, err
	}
	// The domains of runs that were killed (stopped by libvirt when
	// their connection went, still defined) go first.
	if swept, err := hv.Sweep("bootproof-", ownerDead); err != nil || len(swept) > 0 {
		log.Info("removed the domains of dead runs", "domains", swept, "error", err)
	}
	defer func() {
		if retErr != nil {
			_ = hv.Close()
		}
	}()
	kvm := cfg.Accel == AccelKVM
	if cfg.Accel == AccelKVM {
		if _, err := os.Stat("/dev/kvm"); err != nil {
			return nil, fmt.Errorf("accelerator kvm: %w (use auto or tcg)", err)
		}
	}
	if cfg.Accel == AccelAuto {
		start := time.Now()
		if kvm, err = vmprovision.ProbeKVM(ctx, hv, img, filepath.Join(cfg.Dir, "kvm-probe"), domainOwner(), cfg.ProbeTimeout); err != nil {
			return nil, err
		}
		log.Info("kvm probe", "usable", kvm, "took", time.Since(start).Round(time.Millisecond).String())
	}
	admin, err := kubernetes.NewForConfig(cl.RESTConfig())
	if err != nil {
		return nil, err
	}
	l := &Libvirt{hv: hv, Accel: AccelTCG, KernelVersion: kernel.Version}
	if kvm {
		l.Accel = AccelKVM
	}
	b := &vmprovision.Backend{
		Hypervisor: hv, Image: img, Credentials: iss.NodeRESTConfig, APIServer: cl.RESTConfig().Host, TLSServerName: cl.RESTConfig().ServerName,
		Admin: admin, RunID: newRunID(), Owner: domainOwner(), Dir: cfg.Dir, KVM: kvm,
		BootTimeout: 3 * time.Minute, BootEstimate: vmprovision.DefaultBootEstimateTCG,
	}
	if kvm {
		b.BootEstimate = vmprovision.DefaultBootEstimateKVM
	}
	b.Firmware = cfg.firmware()
	b.Kernel = guest.PVH
	if guest.NoPVH != nil {
		log.Info("booting the bzImage", "reason", guest.NoPVH.Error())
	}
	log.Info("guest boot", "kernel", guest.Boot(), "firmware", cmp.Or(b.Firmware, "QEMU default (SeaBIOS)"))
	l.Backend = b
	// A forced exit (a second SIGINT) still removes the run's domains.
	l.unregister = shutdown.Register("VM domains of run "+b.RunID, func() { _ = l.Close() })
	return l, nil
}

// Close removes every domain of the run that is still defined and the
// per-node initramfs files; the serial logs stay.
func (l *Libvirt) Close() error {
	if l.unregister != nil {
		l.unregister()
	}
	removed, err := l.hv.Cleanup(vmprovision.DomainName(l.RunID, ""))
	if len(removed) > 0 {
		err = errors.Join(err, fmt.Errorf("domains still defined at the end of the run, removed: %v", removed))
	}
	initrds, _ := filepath.Glob(filepath.Join(l.Dir, "*.initrd"))
	for _, f := range initrds {
		err = errors.Join(err, os.Remove(f))
	}
	return errors.Join(err, l.hv.Close())
}

// ownerDead is domainOwnerDead for Libvirt.Sweep.
func ownerDead(_, description string) bool { return domainOwnerDead(description) }

// SweepLibvirt destroys and undefines the bootproof domains of runs whose
// process is gone and returns their names; with dryRun it only returns
// them.
func SweepLibvirt(uri string, dryRun bool) ([]string, error) {
	hv, err := vmprovision.ConnectLibvirt(uri)
	if err != nil {
		return nil, err
	}
	defer hv.Close()
	if !dryRun {
		return hv.Sweep("bootproof-", ownerDead)
	}
	var dead []string
	_, err = hv.Sweep("bootproof-", func(name, desc string) bool {
		if domainOwnerDead(desc) {
			dead = append(dead, name)
		}
		return false
	})
	return dead, err
}

// CleanupLibvirt destroys and undefines the bootproof domains (names
// starting with prefix, default "bootproof-") of runs whose process is
// gone; the domains of runs still going are kept.
func CleanupLibvirt(uri, prefix string) ([]string, error) {
	if prefix == "" {
		prefix = "bootproof-"
	}
	hv, err := vmprovision.ConnectLibvirt(uri)
	if err != nil {
		return nil, err
	}
	defer hv.Close()
	return hv.Sweep(prefix, ownerDead)
}
