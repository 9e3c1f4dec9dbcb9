package runner_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/internal/backend"
	"github.com/bootproof/bootproof/internal/runner"
	"github.com/bootproof/bootproof/internal/subject"
	"github.com/bootproof/bootproof/reports"
	"github.com/bootproof/bootproof/scenarios"
	"github.com/bootproof/bootproof/vmprovision"
)

// BenchmarkLibvirtReboot reboots one libvirt VM node 5 times by hard
// reset with no extra downtime (the guest's natural boot only), with the
// bootid subject, and reports reset -> first heartbeat in the new boot
// (the new bootID visible in the API) and reset -> module loaded again
// (kernel ground truth from the guest's /proc/modules), for TCG and, where
// the probe boot succeeds, KVM. Needs BOOTPROOF_VM_TEST=1 and the binaries
// of 'make build-libvirt' (make bench-libvirt).
func BenchmarkLibvirtReboot(b *testing.B) {
	if os.Getenv("BOOTPROOF_VM_TEST") == "" {
		b.Skip("boots libvirt VMs: set BOOTPROOF_VM_TEST=1 (make bench-libvirt)")
	}
	cptest.RequireBinaries(b)
	const reboots = 5
	yaml := "apiVersion: bootproof.dev/v1alpha1\nkind: Scenario\nname: bench-vm-reset\nnodes: 1\nmodules: [{name: dummy}]\ntiming: fast\nprecondition: fast\ndeadline: 120s\nexpect: {bootid: pass}\nactions:\n  - wait-reloaded: {}\n"
	for range reboots {
		yaml += "  - reboot: {downtime: 0s}\n  - wait-reloaded: {}\n"
	}
	sc, err := scenarios.Decode("bench", []byte(yaml))
	if err != nil {
		b.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	accels := []string{backend.AccelTCG}
	if _, err := os.Stat("/dev/kvm"); err == nil {
		accels = append(accels, backend.AccelAuto)
	}
	for b.Loop() {
		for _, accel := range accels {
			benchLibvirtReboot(b, root, accel, sc, reboots)
		}
	}
}

func benchLibvirtReboot(b *testing.B, root, accel string, sc *scenarios.Scenario, reboots int) {
	ctx := context.Background()
	emb, err := cluster.StartEmbedded(ctx, controlplane.Config{GracePeriod: 30 * time.Second, MonitorPeriod: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer emb.Stop()
	// BOOTPROOF_BENCH_VM_FIRMWARE (auto, seabios or a ROM) and
	// BOOTPROOF_BENCH_VM_BZIMAGE=1 measure the boot paths the default
	// replaced.
	firmware, bzImage := os.Getenv("BOOTPROOF_BENCH_VM_FIRMWARE"), os.Getenv("BOOTPROOF_BENCH_VM_BZIMAGE") == "1"
	vm, err := backend.StartLibvirt(ctx, emb, backend.LibvirtConfig{Accel: accel, Agent: filepath.Join(root, "bin", "bootproof-agent"), Firmware: firmware, BzImage: bzImage,
		// Not b.TempDir(): QEMU runs as another user and cannot enter it.
		CacheDir: filepath.Join(root, ".cache"), Dir: filepath.Join(root, ".cache", "vm", fmt.Sprintf("bench-%s-%d", accel, time.Now().Unix()))})
	if err != nil {
		b.Fatal(err)
	}
	defer vm.Close()
	if accel == backend.AccelAuto && vm.Accel != backend.AccelKVM {
		b.Logf("KVM is not usable here (the probe boot did not reach the agent): only TCG is measured")
		return
	}
	sub, _ := subject.New(subject.BootID, emb)
	load0 := loadAverage()
	start := time.Now()
	res := runner.Run(ctx, runner.Config{Cluster: emb, Backend: vm, Subjects: []scenarios.Subject{sub}, Scenarios: []*scenarios.Scenario{sc}})
	wall := time.Since(start)
	c := res.Cases[0]
	// The phases of the reboots that completed are logged even when the
	// run is invalid (a reboot slow enough to show NotReady): they say
	// where the time went.
	defer func() {
		if c.Verdict != scenarios.Pass {
			b.Errorf("verdict %s: %s", c.Verdict, c.Message)
		}
	}()
	timelines := map[string]vmprovision.BootTimeline{}
	for _, t := range vm.BootTimelines() {
		timelines[t.NewBootID] = t
	}
	var heartbeat, loaded, reload, uncertainty []float64
	phases := map[string][]float64{}
	for _, r := range c.Reboots {
		if r.BootVisibleMS <= 0 || r.ReloadLatencyMS < 0 {
			if c.Verdict != scenarios.Pass {
				continue
			}
			b.Fatalf("reboot of %s without a visible boot or a reload: %+v", r.Node, r)
		}
		heartbeat = append(heartbeat, float64(r.BootVisibleMS-r.StartMS))
		loaded = append(loaded, float64(r.BootVisibleMS-r.StartMS+r.ReloadLatencyMS))
		reload = append(reload, float64(r.ReloadLatencyMS))
		t, ok := timelines[r.NewBootID]
		if !ok {
			if c.Verdict != scenarios.Pass {
				continue
			}
			b.Fatalf("reboot of %s into boot %s: the agent reported no boot milestones", r.Node, r.NewBootID)
		}
		visible := c.StartedAt.Add(time.Duration(r.BootVisibleMS) * time.Millisecond)
		ps, err := t.Phases(visible, visible.Add(time.Duration(r.ReloadLatencyMS)*time.Millisecond))
		if err != nil {
			if c.Verdict != scenarios.Pass {
				b.Log(err)
				continue
			}
			b.Fatal(err)
		}
		for i, p := range ps {
			k := fmt.Sprintf("phase-%d-%s", i+1, p.Name)
			phases[k] = append(phases[k], float64(p.Duration.Microseconds())/1000)
		}
		uncertainty = append(uncertainty, float64(t.Uncertainty.Microseconds())/1000)
		b.Logf("reboot into %s: reset -> loaded %dms: %v (guest clock placed within %s)", r.NewBootID, r.BootVisibleMS-r.StartMS+r.ReloadLatencyMS, ps, t.Uncertainty)
	}
	if c.Verdict != scenarios.Pass {
		return
	}
	if len(loaded) != reboots {
		b.Fatalf("%d reboots measured, want %d", len(loaded), reboots)
	}
	hb, ld, rl := reports.Summarize("ms", heartbeat), reports.Summarize("ms", loaded), reports.Summarize("ms", reload)
	b.ReportMetric(ld.P50, vm.Accel+"-reset-to-loaded-p50-ms")
	b.ReportMetric(ld.Max, vm.Accel+"-reset-to-loaded-max-ms")
	figures := map[string]reports.Distribution{"reset-to-heartbeat": hb, "reset-to-loaded": ld, "reload-latency": rl, "clock-placement-uncertainty": reports.Summarize("ms", uncertainty)}
	for k, v := range phases {
		figures[k] = reports.Summarize("ms", v)
	}
	if dir := os.Getenv(reports.EnvBenchDir); dir != "" {
		err := reports.WriteBench(dir, reports.BenchResult{
			Name: "libvirt-reboot-" + vm.Accel,
			Description: fmt.Sprintf("one libvirt VM node (%s, guest kernel %s booted as %s, firmware %s) hard-reset %d times with no extra downtime, bootid subject in-process, embedded cluster (grace period 30s, fast timing profile); "+
				"reset -> heartbeat = reset until the new bootID is visible in the API; reset -> loaded = reset until the module is loaded in the new boot (the guest's /proc/modules); reload = new bootID visible -> loaded.",
				vm.Accel, vm.KernelVersion, bootKernel(vm.Kernel), cmp.Or(vm.Firmware, "SeaBIOS (QEMU's default)"), reboots),
			Date: time.Now(), Machine: reports.MachineDescription(),
			Figures: figures,
			Notes: []string{
				fmt.Sprintf("goal: reset -> loaded under 10s with TCG, under 3s with KVM; case wall time %s; load average %s at the start, %s at the end.", wall.Round(time.Second), load0, loadAverage()),
				"boot phases (they add up to reset -> loaded, but for the agent request before the reset; a phase whose ends the clock placement puts out of order by less than its uncertainty counts as 0): " +
					"phase-1-firmware = the domain's reset -> the guest kernel starts its clock (QEMU reset, firmware, kernel load and decompression); " +
					"phase-2-kernel = -> the kernel runs /init (its 'Run /init as init process' in the kernel log); " +
					"phase-3-agent-start = -> the agent starts its kubelet (Go runtime, boot modules, network); " +
					"phase-4-first-heartbeat = -> the new bootID is visible in the API (the observer's watch); " +
					"phase-5-reload = -> the module is loaded again (the guest's /proc/modules). " +
					"The guest's milestones are on its CLOCK_BOOTTIME, placed on the host's clock by an agent answer after the new boot was visible: clock-placement-uncertainty is half that request's round trip.",
			},
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// bootKernel names the kernel image the domains boot.
func bootKernel(path string) string {
	if path == "" {
		return "its bzImage"
	}
	return "its uncompressed ELF at the PVH entry"
}
