package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/bootproof/bootproof/internal/backend"
	"github.com/bootproof/bootproof/scenarios"
)

// --nodes libvirt: libvirt/QEMU VMs booting a real kernel; the guest
// kernel, image and accelerator are prepared per run.
func init() {
	registerNodes(nodesLibvirt, nodeProvider{grace: DefaultVMGrace, validate: (*runOptions).validateLibvirt, start: startLibvirt})
}

// validateLibvirt checks the VM flags and caps node counts by default.
func (o *runOptions) validateLibvirt() error {
	if err := o.vm.Default(); err != nil {
		return failure(err)
	}
	if err := o.vm.Validate(); err != nil {
		return withCode(ExitUsage, fmt.Errorf("--nodes libvirt: %w", err))
	}
	if !o.maxNodesSet {
		o.maxNodes = DefaultVMMaxNodes
	}
	return nil
}

// startLibvirt prepares the VM nodes (kernel, image, accelerator) and
// records them in env.
func startLibvirt(ctx context.Context, rc *runContext, cl scenarios.Cluster, dir string, env map[string]string) (scenarios.Backend, error) {
	o, s := &rc.o, rc.s
	o.vm.Dir = filepath.Join(dir, "vm")
	o.vm.Progress = s.Err
	fmt.Fprintf(s.Err, "preparing VM nodes: guest kernel, image, accelerator (%s); serial logs in %s\n", o.vm.Accel, o.vm.Dir)
	vm, err := backend.StartLibvirt(ctx, cl, o.vm)
	if err != nil {
		return nil, failure(fmt.Errorf("--nodes libvirt: %w", err))
	}
	rc.defer_(func() {
		if err := vm.Close(); err != nil {
			fmt.Fprintf(s.Err, "vm cleanup: %v\n", err)
		}
	})
	fmt.Fprintf(s.Err, "VM nodes: kernel %s, accelerator %s, at most %d nodes per scenario\n", vm.KernelVersion, vm.Accel, o.maxNodes)
	env["accelerator"], env["guest-kernel"] = vm.Accel, vm.KernelVersion
	return vm, nil
}
