package bench_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/bootproof/bootproof/fakes"
	"github.com/bootproof/bootproof/harness/bench"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/reports"
)

// Knobs of BenchmarkFleetVsKWOK ('make bench-fleet').
const (
	envFleetNodes  = "BOOTPROOF_BENCH_FLEET_NODES"  // nodes per fleet (default 1000)
	envFleetSettle = "BOOTPROOF_BENCH_FLEET_SETTLE" // after all Ready, before the window (default 30s)
	envFleetWindow = "BOOTPROOF_BENCH_FLEET_WINDOW" // the measured steady window (default 120s)
	// envFleetKWOKFirst=1 measures KWOK first, to see whether the order matters.
	envFleetKWOKFirst = "BOOTPROOF_BENCH_FLEET_KWOK_FIRST"
)

type fleetBenchConfig struct {
	nodes          int
	settle, window time.Duration
	binDir         string
	timing         fakes.Timing
}

func fleetConfig(b *testing.B) fleetBenchConfig {
	c := fleetBenchConfig{nodes: 1000, settle: 30 * time.Second, window: 120 * time.Second,
		timing: fakes.TimingProfiles[fakes.TimingKubeletDefaults]}
	if s := os.Getenv(envFleetNodes); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want a positive number", envFleetNodes, s)
		}
		c.nodes = n
	}
	for env, dst := range map[string]*time.Duration{envFleetSettle: &c.settle, envFleetWindow: &c.window} {
		if s := os.Getenv(env); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				b.Fatalf("%s=%q: want a positive duration", env, s)
			}
			*dst = d
		}
	}
	c.binDir = os.Getenv(controlplane.EnvBinDir)
	if c.binDir == "" {
		c.binDir, _ = filepath.Abs(filepath.Join("..", "..", "bin"))
	}
	return c
}

// fleetSide is one simulated fleet: how to start its process against a
// control plane, and the prefix of its Node names.
type fleetSide struct {
	name   string
	binary string
	prefix string
	start  func(b *testing.B, ctx context.Context, cp *controlplane.ControlPlane, c fleetBenchConfig, dir string) *exec.Cmd
}

// fleetFigures is what one side measured.
type fleetFigures struct {
	cpu          float64 // fleet process, CPU s/min over the window
	mem          bench.Memory
	plane        map[string]float64 // CPU s/min per control-plane process
	observed     bench.Figures
	registration time.Duration // process start -> all N Ready
	prepare      time.Duration // creating the Nodes beforehand (KWOK)
	note         string
}

func (f fleetFigures) planeTotal() float64 {
	t := 0.0
	for _, v := range f.plane {
		t += v
	}
	return t
}

// BenchmarkFleetVsKWOK runs bootproof's simulated fleet ('bootproof nodes
// run --timing kubelet-defaults') and KWOK (bin/kwok, stages
// node-initialize and node-heartbeat-with-lease, lease duration 40s,
// log level ERROR) one after the other, each as its own process with N
// nodes against its own fresh embedded control plane with the same build
// and settings, and measures each fleet's CPU and memory, the plane's CPU,
// false NotReady and lease-renewal lateness over a steady window after a
// settling time. It writes reports/bench/fleet-vs-kwok.{json,md}.
func BenchmarkFleetVsKWOK(b *testing.B) {
	cptest.RequireBinaries(b)
	c := fleetConfig(b)
	sides := []fleetSide{bootproofSide(), kwokSide()}
	for _, s := range sides {
		if _, err := os.Stat(filepath.Join(c.binDir, s.binary)); err != nil {
			b.Fatalf("%s: %v (build it: 'make bench-fleet' does)", s.name, err)
		}
	}
	var figs [2]fleetFigures
	order := []int{0, 1}
	if os.Getenv(envFleetKWOKFirst) == "1" {
		order = []int{1, 0}
	}
	for b.Loop() {
		for _, i := range order {
			figs[i] = measureFleet(b, c, sides[i])
			b.Logf("%s", figs[i].note)
		}
	}
	b.ReportMetric(figs[0].cpu/figs[1].cpu, "cpu-ratio")
	b.ReportMetric(figs[0].mem.RSS/figs[1].mem.RSS, "rss-ratio")
	result := fleetResult(c, sides, figs)
	if dir := os.Getenv(reports.EnvBenchDir); dir != "" {
		if err := reports.WriteBench(dir, result); err != nil {
			b.Fatal(err)
		}
	}
}

func matchPrefix(p string) func(string) bool {
	return func(name string) bool { return strings.HasPrefix(name, p) }
}

// measureFleet starts a fresh control plane, runs one side's fleet on it,
// measures it and stops both.
func measureFleet(b *testing.B, c fleetBenchConfig, s fleetSide) fleetFigures {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := b.TempDir()
	startCtx, startCancel := context.WithTimeout(ctx, 3*time.Minute)
	cp, err := controlplane.Start(startCtx, controlplane.Config{Dir: filepath.Join(dir, "plane"), BinDir: c.binDir})
	startCancel()
	if err != nil {
		b.Fatalf("%s: start control plane: %v", s.name, err)
	}
	defer cp.Stop()
	admin := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	obs, err := bench.Observe(ctx, admin, matchPrefix(s.prefix), c.timing.RenewInterval)
	if err != nil {
		b.Fatalf("%s: %v", s.name, err)
	}
	var f fleetFigures
	prep := time.Now()
	cmd := s.start(b, ctx, cp, c, dir)
	f.prepare = time.Since(prep) // set by kwok's Node creation; bootproof starts at once
	started := time.Now()
	exited := make(chan struct{}) // closed when the process has ended
	go func() { _ = cmd.Wait(); close(exited) }()
	defer stopFleet(b, s.name, cmd, exited)

	regCtx, regCancel := context.WithTimeout(ctx, 5*time.Minute+time.Duration(c.nodes)*300*time.Millisecond)
	go func() {
		select {
		case <-exited:
			b.Errorf("%s exited before its nodes were Ready; log %s", s.name, filepath.Join(dir, s.name+".log"))
			regCancel()
		case <-regCtx.Done():
		}
	}()
	err = obs.WaitReady(regCtx, c.nodes)
	regCancel()
	if err != nil {
		b.Fatalf("%s: %v; log tail:\n%s", s.name, err, logTail(filepath.Join(dir, s.name+".log")))
	}
	f.registration = time.Since(started)
	sleepAlive(b, s.name, c.settle, exited)

	pids := cp.Pids()
	cpu0, plane0 := mustCPU(b, cmd.Process.Pid), planeCPU(b, pids)
	obs.Record(true)
	sleepAlive(b, s.name, c.window, exited)
	obs.Record(false)
	cpu1, plane1 := mustCPU(b, cmd.Process.Pid), planeCPU(b, pids)
	if f.mem, err = bench.MemoryOf(cmd.Process.Pid); err != nil {
		b.Fatalf("%s: %v", s.name, err)
	}
	f.observed = obs.Figures()
	perMin := c.window.Minutes()
	f.cpu = (cpu1 - cpu0) / perMin
	f.plane = map[string]float64{}
	for name := range plane0 {
		f.plane[name] = (plane1[name] - plane0[name]) / perMin
	}
	if !maps.Equal(pids, cp.Pids()) {
		b.Errorf("%s: a control-plane process restarted during the window (%v -> %v): its CPU is not comparable", s.name, pids, cp.Pids())
	}
	f.note = sideNote(s.name, c, f)
	return f
}

func mustCPU(b *testing.B, pid int) float64 {
	v, err := bench.CPUSeconds(pid)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

func planeCPU(b *testing.B, pids map[string]int) map[string]float64 {
	out := map[string]float64{}
	for name, pid := range pids {
		out[name] = mustCPU(b, pid)
	}
	return out
}

// sleepAlive sleeps d, and fails b if the fleet's process ends meanwhile.
func sleepAlive(b *testing.B, name string, d time.Duration, exited <-chan struct{}) {
	select {
	case <-time.After(d):
	case <-exited:
		b.Fatalf("%s exited while measured", name)
	}
}

// stopFleet sends SIGINT (bootproof deletes its Nodes and Leases, KWOK
// stops) and SIGKILL after a minute.
func stopFleet(b *testing.B, name string, cmd *exec.Cmd, exited <-chan struct{}) {
	select {
	case <-exited:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-exited:
	case <-time.After(time.Minute):
		b.Logf("%s did not stop within a minute of SIGINT: killed", name)
		_ = cmd.Process.Kill()
		<-exited
	}
}

func logTail(path string) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

// startLogged starts bin/<binary> with args, stdout and stderr to
// dir/<name>.log, and env added to the environment.
func startLogged(b *testing.B, c fleetBenchConfig, name, binary, dir string, env []string, args ...string) *exec.Cmd {
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { log.Close() })
	cmd := exec.Command(filepath.Join(c.binDir, binary), args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s: %v", name, err)
	}
	return cmd
}

func bootproofSide() fleetSide {
	return fleetSide{name: "bootproof", binary: "bootproof", prefix: "bp-node-",
		start: func(b *testing.B, _ context.Context, cp *controlplane.ControlPlane, c fleetBenchConfig, dir string) *exec.Cmd {
			return startLogged(b, c, "bootproof", "bootproof", dir, nil, "nodes", "run", "--kubeconfig", cp.Kubeconfig(),
				"--count", strconv.Itoa(c.nodes), "--prefix", "bp-node-", "--timing", fakes.TimingKubeletDefaults,
				"--control-socket", filepath.Join(dir, "nodes.sock"))
		}}
}

func sideNote(name string, c fleetBenchConfig, f fleetFigures) string {
	l := reports.Summarize("ms", f.observed.LatenessMs)
	return fmt.Sprintf("%s, %d nodes: fleet %.2f CPU s/min, RSS %.1f MiB (peak %.1f MiB, %.0f KiB per node); control plane %.2f CPU s/min "+
		"(kube-apiserver %.2f, etcd %.2f, kube-controller-manager %.2f); %d Node updates with Ready not True (%d transitions); "+
		"%d lease renewals, lateness p50 %.0f ms p99 %.0f ms max %.0f ms; all Ready %.1f s after start%s.",
		name, c.nodes, f.cpu, f.mem.RSS, f.mem.Peak, f.mem.RSS*1024/float64(c.nodes), f.planeTotal(),
		f.plane[controlplane.BinKubeAPIServer], f.plane[controlplane.BinEtcd], f.plane[controlplane.BinKubeControllerManager],
		f.observed.NotReadyObservations, f.observed.NotReadyTransitions, f.observed.Renewals, l.P50, l.P99, l.Max,
		f.registration.Seconds(), prepared(f.prepare))
}

func prepared(d time.Duration) string {
	if d < time.Second {
		return ""
	}
	return fmt.Sprintf(" (its Node objects created beforehand in %.1f s)", d.Seconds())
}
