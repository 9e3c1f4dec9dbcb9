//go:build linux

package vmprovision_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/vmprovision"
	"github.com/bootproof/bootproof/vmprovision/vmtest"
)

// TestLibvirtRebootModes provisions one libvirt VM node (TCG) and runs
// every reboot mode: each real reboot brings a new boot ID and a module
// table without the module loaded before it; pause keeps the boot ID.
// Nothing stays defined afterwards.
func TestLibvirtRebootModes(t *testing.T) {
	if os.Getenv(vmTestEnv) == "" {
		t.Skipf("boots libvirt VMs: set %s=1 (needs libvirtd and virtlogd running, qemu-system-x86_64, the guest %s prepares, bin/kube-apiserver and bin/etcd)", vmTestEnv, vmtest.PrepareCommand)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	fx := newVMFixture(ctx, t)
	b, hv := fx.libvirtBackend(t, "t")
	run, dir := b.RunID, b.Dir
	const node = "vm-0"
	start := time.Now()
	set, err := b.Provision(ctx, nodeapi.ProvisionRequest{Names: []string{node}, Timing: "fast"})
	if err != nil {
		t.Fatal(err)
	}
	ns := set.(*vmprovision.NodeSet)
	defer func() {
		if err := ns.Close(); err != nil {
			t.Error(err)
		}
		if left, err := hv.Cleanup(vmprovision.DomainName(run, "")); err != nil || len(left) > 0 {
			t.Errorf("left defined after Close: %v %v", left, err)
		}
	}()
	t.Logf("node %s up in %s; serial log in %s", node, time.Since(start).Round(time.Millisecond), dir)

	st, err := ns.State(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		mode     string
		downtime time.Duration
	}{
		{string(vmprovision.RebootReset), 0},
		{string(vmprovision.RebootReset), 2 * time.Second},
		{string(vmprovision.RebootGuest), 0},
		{string(vmprovision.RebootPanic), 0},
		{string(vmprovision.RebootPowerCycle), time.Second},
		// Disruptions without a reboot: boot ID and modules stay.
		{"pause", 2 * time.Second},
		{"network-blip", 3 * time.Second},
		{"restart-kubelet", time.Second},
	} {
		if err := loadModule(ctx, ns, node, "bonding"); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		var out nodeapi.RebootOutcome
		rebooted := true
		switch tt.mode {
		case "pause", "network-blip", "restart-kubelet":
			rebooted = false
			out.OldBootID = st.BootID
			err = map[string]func(context.Context, string, time.Duration) error{
				"pause": ns.PauseNode, "network-blip": ns.NetworkBlip, "restart-kubelet": ns.RestartKubelet,
			}[tt.mode](ctx, node, tt.downtime)
			if s, serr := ns.State(ctx, node); serr == nil {
				out.NewBootID = s.BootID
			}
		default:
			out, err = ns.Reboot(ctx, node, nodeapi.RebootRequest{Mode: nodeapi.RebootMode(tt.mode), Downtime: tt.downtime})
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.mode, err)
		}
		after, err := ns.State(ctx, node)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s (+%s): %s -> %s in %s, modules %v", tt.mode, tt.downtime, out.OldBootID, out.NewBootID, time.Since(t0).Round(time.Millisecond), after.Modules)
		if out.OldBootID != st.BootID {
			t.Errorf("%s: old boot %s, want %s", tt.mode, out.OldBootID, st.BootID)
		}
		if (out.NewBootID != out.OldBootID) != rebooted {
			t.Errorf("%s: boot ID %s -> %s, want changed=%v", tt.mode, out.OldBootID, out.NewBootID, rebooted)
		}
		if slices.Contains(after.Modules, "bonding") == rebooted {
			t.Errorf("%s: modules after %v", tt.mode, after.Modules)
		}
		st = after
	}
}

func loadModule(ctx context.Context, ns *vmprovision.NodeSet, node, mod string) error {
	return ns.LoadModule(ctx, node, mod)
}

// TestLibvirtProbeKVM runs the KVM probe boot and logs the accelerator
// choice (on the development machine KVM guests hang, so TCG is chosen).
func TestLibvirtProbeKVM(t *testing.T) {
	if os.Getenv(vmTestEnv) == "" {
		t.Skipf("boots a libvirt VM with KVM: set %s=1 (needs libvirtd and virtlogd running, the guest %s prepares)", vmTestEnv, vmtest.PrepareCommand)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fx := newVMFixture(ctx, t)
	hv, err := vmprovision.ConnectLibvirt("")
	if err != nil {
		t.Fatal(err)
	}
	defer hv.Close()
	start := time.Now()
	kvm, err := vmprovision.ProbeKVM(ctx, hv, fx.img, filepath.Join(fx.cache, "vm", "probe"), "", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("KVM usable: %v (probe took %s)", kvm, time.Since(start).Round(time.Millisecond))
	if left, err := hv.Cleanup("bootproof-probe"); err != nil || len(left) > 0 {
		t.Errorf("probe domain left defined: %v %v", left, err)
	}
}

// TestLibvirtResetBench measures, over 5 hard resets of one TCG node:
// reset -> the Node reports the new boot ID (the new boot's first status
// post), and reset -> a module is loaded again when it is asked for as
// soon as the node is back (a subject that reacts instantly). It logs
// p50 and max.
func TestLibvirtResetBench(t *testing.T) {
	if os.Getenv(vmTestEnv) == "" {
		t.Skipf("boots libvirt VMs: set %s=1 (needs libvirtd and virtlogd running, the guest %s prepares)", vmTestEnv, vmtest.PrepareCommand)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	fx := newVMFixture(ctx, t)
	hv, err := vmprovision.ConnectLibvirt("")
	if err != nil {
		t.Fatal(err)
	}
	defer hv.Close()
	run := "b" + time.Now().UTC().Format("150405")
	b := &vmprovision.Backend{
		Hypervisor: hv, Image: fx.img, APIServer: fx.apiURL, Admin: fx.admin, RunID: run, Dir: filepath.Join(fx.cache, "vm", run),
		Credentials: func(node string) (*rest.Config, error) {
			c, err := fx.cp.NodeCredentials(node)
			if err != nil {
				return nil, err
			}
			return c.RESTConfig, nil
		},
	}
	set, err := b.Provision(ctx, nodeapi.ProvisionRequest{Names: []string{"vm-0"}, Timing: "fast"})
	if err != nil {
		t.Fatal(err)
	}
	ns := set.(*vmprovision.NodeSet)
	defer ns.Close()
	var back, loaded []time.Duration
	for i := range 5 {
		t0 := time.Now()
		if _, err := ns.Reboot(ctx, "vm-0", nodeapi.RebootRequest{Mode: vmprovision.RebootReset}); err != nil {
			t.Fatal(err)
		}
		back = append(back, time.Since(t0))
		if err := ns.LoadModule(ctx, "vm-0", "dummy"); err != nil {
			t.Fatal(err)
		}
		loaded = append(loaded, time.Since(t0))
		t.Logf("reset %d: Node reports new boot after %s, dummy loaded after %s", i+1, back[i].Round(time.Millisecond), loaded[i].Round(time.Millisecond))
	}
	stats := func(d []time.Duration) (p50, maxD time.Duration) {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond)
	}
	p, m := stats(back)
	lp, lm := stats(loaded)
	t.Logf("TCG reset -> Node reports new boot: p50 %s max %s; reset -> module loaded: p50 %s max %s", p, m, lp, lm)
}

// libvirtBackend connects to libvirt (closed when the test ends) and
// returns a VM backend on the fixture's plane and image, with run ID
// prefix plus the time, booting as the harness does: the kernel at its
// PVH entry, and Qboot where it is installed.
func (fx *vmFixture) libvirtBackend(t *testing.T, prefix string) (*vmprovision.Backend, *vmprovision.Libvirt) {
	t.Helper()
	hv, err := vmprovision.ConnectLibvirt("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hv.Close() })
	firmware := ""
	if _, err := os.Stat(vmprovision.QbootPath); err == nil {
		firmware = vmprovision.QbootPath
	}
	run := prefix + time.Now().UTC().Format("150405")
	return &vmprovision.Backend{
		Kernel: fx.pvh, Firmware: firmware,
		Hypervisor: hv, Image: fx.img, APIServer: fx.apiURL, Admin: fx.admin, RunID: run, Dir: filepath.Join(fx.cache, "vm", run),
		Credentials: func(node string) (*rest.Config, error) {
			c, err := fx.cp.NodeCredentials(node)
			if err != nil {
				return nil, err
			}
			return c.RESTConfig, nil
		},
	}, hv
}
