package bench_test

import (
	"context"
	"errors"
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
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/internal/bench"
	"github.com/bootproof/bootproof/nodeapi"
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
	// register bounds process start -> all Ready (0: 5 min + 300 ms a node).
	register time.Duration
	binDir   string
	timing   fakes.Timing
}

func (c fleetBenchConfig) registerTimeout() time.Duration {
	if c.register > 0 {
		return c.register
	}
	return 5*time.Minute + time.Duration(c.nodes)*300*time.Millisecond
}

func fleetConfig(b *testing.B) fleetBenchConfig {
	c := fleetBenchConfig{nodes: 1000, settle: 30 * time.Second, window: 120 * time.Second,
		timing: fakes.TimingProfiles[nodeapi.TimingKubeletDefaults]}
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
	latency      planeLatency  // in the window, from kube-apiserver's /metrics
	machineBusy  float64       // share of the machine's CPU busy in the window (anyone's)
	load         [3]float64    // load averages at the window's end
	restarted    string        // which control-plane process restarted, and why; "" if none
	grace        time.Duration // the plane's node-monitor grace period
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
// settling time. It writes _output/bench/fleet-vs-kwok.{json,md}.
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
			f, err := measureFleet(b, c, sides[i])
			if err != nil {
				b.Fatal(err)
			}
			if f.restarted != "" {
				b.Errorf("%s: a control-plane process restarted during the window (%s): its CPU is not comparable", sides[i].name, f.restarted)
			}
			figs[i] = f
			b.Logf("%s", f.note)
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

// errNotAllReady: the fleet's nodes were not all Ready in time, or the
// fleet gave up before they were.
var errNotAllReady = errors.New("not all nodes Ready")

// measureFleet starts a fresh control plane, runs one side's fleet on it,
// measures it and stops both. An error wrapping errNotAllReady means the
// nodes did not all become Ready in time; any other error is broken
// infrastructure.
func measureFleet(b *testing.B, c fleetBenchConfig, s fleetSide) (fleetFigures, error) {
	var f fleetFigures
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := b.TempDir()
	startCtx, startCancel := context.WithTimeout(ctx, 3*time.Minute)
	cp, err := controlplane.Start(startCtx, controlplane.Config{Dir: filepath.Join(dir, "plane"), BinDir: c.binDir})
	startCancel()
	if err != nil {
		return f, fmt.Errorf("%s: start control plane: %w", s.name, err)
	}
	defer cp.Stop()
	f.grace = cp.Config().GracePeriod
	admin := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	obs, err := bench.Observe(ctx, admin, matchPrefix(s.prefix), c.timing.RenewInterval)
	if err != nil {
		return f, fmt.Errorf("%s: %w", s.name, err)
	}
	prep := time.Now()
	cmd := s.start(b, ctx, cp, c, dir)
	f.prepare = time.Since(prep) // set by kwok's Node creation; bootproof starts at once
	started := time.Now()
	exited := make(chan struct{}) // closed when the process has ended
	go func() { _ = cmd.Wait(); close(exited) }()
	defer stopFleet(b, s.name, cmd, exited)

	regCtx, regCancel := context.WithTimeout(ctx, c.registerTimeout())
	go func() {
		select {
		case <-exited:
			regCancel()
		case <-regCtx.Done():
		}
	}()
	err = obs.WaitReady(regCtx, c.nodes)
	regCancel()
	logPath := filepath.Join(dir, s.name+".log")
	select {
	case <-exited:
		// Say, its registration timed out against a starved API server.
		b.Logf("%s exited before its nodes were Ready; log tail:\n%s", s.name, logTail(logPath))
		return f, fmt.Errorf("%w: %s exited: %s", errNotAllReady, s.name, lastLine(logPath))
	default:
	}
	if err != nil {
		b.Logf("%s: not all Ready; log tail:\n%s", s.name, logTail(logPath))
		return f, fmt.Errorf("%w: %w", errNotAllReady, err)
	}
	f.registration = time.Since(started)
	if err := sleepAlive(s.name, c.settle, exited); err != nil {
		return f, err
	}

	pids := cp.Pids()
	lat0, err := scrapeLatency(ctx, admin)
	if err != nil {
		return f, fmt.Errorf("%s: %w", s.name, err)
	}
	busy0, total0, err := bench.MachineCPU()
	if err != nil {
		return f, err
	}
	cpu0, err := bench.CPUSeconds(cmd.Process.Pid)
	if err != nil {
		return f, err
	}
	plane0, err := planeCPU(pids)
	if err != nil {
		return f, err
	}
	obs.Record(true)
	if err := sleepAlive(s.name, c.window, exited); err != nil {
		return f, err
	}
	obs.Record(false)
	cpu1, err := bench.CPUSeconds(cmd.Process.Pid)
	if err != nil {
		return f, err
	}
	plane1, err := planeCPU(pids)
	if now := cp.Pids(); !maps.Equal(pids, now) {
		// A restarted process's CPU is not comparable: 0 for it, the
		// others' as measured.
		f.restarted = restartDetail(cp) + " (its CPU in the window not measured)"
		plane1, err = map[string]float64{}, nil
		for name, pid := range pids {
			plane1[name] = plane0[name]
			if now[name] == pid {
				if v, err := bench.CPUSeconds(pid); err == nil {
					plane1[name] = v
				}
			}
		}
	}
	if err != nil {
		return f, err
	}
	busy1, total1, err := bench.MachineCPU()
	if err != nil {
		return f, err
	}
	if f.load, err = bench.LoadAverage(); err != nil {
		return f, err
	}
	lat1, err := scrapeLatency(ctx, admin)
	if err != nil {
		return f, fmt.Errorf("%s: %w", s.name, err)
	}
	if f.mem, err = bench.MemoryOf(cmd.Process.Pid); err != nil {
		return f, fmt.Errorf("%s: %w", s.name, err)
	}
	if f.restarted == "" && (!maps.Equal(pids, cp.Pids()) || len(cp.Outages()) > 0) {
		f.restarted = restartDetail(cp)
	}
	if f.restarted == "" {
		if f.latency, err = lat1.sub(lat0); err != nil {
			return f, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	f.observed = obs.Figures()
	perMin := c.window.Minutes()
	f.cpu = (cpu1 - cpu0) / perMin
	f.plane = map[string]float64{}
	for name := range plane0 {
		f.plane[name] = (plane1[name] - plane0[name]) / perMin
	}
	if total1 > total0 {
		f.machineBusy = (busy1 - busy0) / (total1 - total0)
	}
	f.note = sideNote(s.name, c, f)
	return f, nil
}

// restartDetail names the control-plane processes that restarted and the
// last fatal line of each one's log (say kube-controller-manager's "leader
// election lost" on a starved machine).
func restartDetail(cp *controlplane.ControlPlane) string {
	var parts []string
	for _, o := range cp.Outages() {
		d := o.Process + " exited (" + o.Detail + ")"
		if line := lastFatal(filepath.Join(cp.Dir(), "logs", o.Process+".log")); line != "" {
			d += ": " + line
		}
		parts = append(parts, d)
	}
	if len(parts) == 0 {
		return "a control-plane process restarted"
	}
	return strings.Join(parts, "; ")
}

// lastFatal returns the last line of a log that says why the process
// ended: a klog fatal line (F...) or "leaderelection lost" (which
// kube-controller-manager logs as an error before it exits); "" if none.
func lastFatal(path string) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(string(data), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if (len(l) > 1 && l[0] == 'F' && l[1] >= '0' && l[1] <= '9') || strings.Contains(l, "leaderelection lost") {
			return l[:min(len(l), 300)]
		}
	}
	return ""
}

// planeLatency is what kube-apiserver's /metrics tells of request
// latency: its requests to etcd, and the mutating requests it serves.
type planeLatency struct {
	etcd, mutating bench.Histogram
	// requests counts the requests served, by bench.RequestKey.
	requests map[string]float64
}

// mutatingVerbs are the verbs of apiserver_request_duration_seconds that
// write.
var mutatingVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

func scrapeLatency(ctx context.Context, client kubernetes.Interface) (planeLatency, error) {
	var l planeLatency
	data, err := bench.FetchMetrics(ctx, client.CoreV1().RESTClient())
	if err != nil {
		return l, err
	}
	if l.etcd, err = bench.ParseHistogram(data, bench.MetricEtcdRequest, nil); err != nil {
		return l, err
	}
	if l.mutating, err = bench.ParseHistogram(data, bench.MetricAPIRequest, func(labels map[string]string) bool { return mutatingVerbs[labels["verb"]] }); err != nil {
		return l, err
	}
	l.requests, err = bench.ParseCounter(data, bench.MetricAPIRequestTotal, bench.RequestKey)
	return l, err
}

func (l planeLatency) sub(earlier planeLatency) (planeLatency, error) {
	var d planeLatency
	var err error
	if d.etcd, err = l.etcd.Sub(earlier.etcd); err != nil {
		return d, fmt.Errorf("%s: %w", bench.MetricEtcdRequest, err)
	}
	if d.mutating, err = l.mutating.Sub(earlier.mutating); err != nil {
		return d, fmt.Errorf("%s: %w", bench.MetricAPIRequest, err)
	}
	if d.requests, err = bench.SubCounters(l.requests, earlier.requests); err != nil {
		return d, fmt.Errorf("%s: %w", bench.MetricAPIRequestTotal, err)
	}
	return d, nil
}

func planeCPU(pids map[string]int) (map[string]float64, error) {
	out := map[string]float64{}
	for name, pid := range pids {
		v, err := bench.CPUSeconds(pid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

// sleepAlive sleeps d, or returns an error if the fleet's process ends
// meanwhile.
func sleepAlive(name string, d time.Duration, exited <-chan struct{}) error {
	select {
	case <-time.After(d):
		return nil
	case <-exited:
		return fmt.Errorf("%s exited while measured", name)
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

// lastLine is the last line of a log, at most 300 bytes.
func lastLine(path string) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	l := lines[len(lines)-1]
	return l[:min(len(l), 300)]
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
				"--count", strconv.Itoa(c.nodes), "--prefix", "bp-node-", "--timing", string(nodeapi.TimingKubeletDefaults),
				"--control-socket", filepath.Join(dir, "nodes.sock"))
		}}
}

func sideNote(name string, c fleetBenchConfig, f fleetFigures) string {
	l := reports.Summarize("ms", f.observed.LatenessMs)
	return fmt.Sprintf("%s, %d nodes: fleet %.2f CPU s/min, RSS %.1f MiB (peak %.1f MiB, %.0f KiB per node); control plane %.2f CPU s/min "+
		"(kube-apiserver %.2f, etcd %.2f, kube-controller-manager %.2f); %d Node updates with Ready not True (%d transitions); "+
		"%d lease renewals, lateness p50 %.0f ms p99 %.0f ms max %.0f ms; all Ready %.1f s after start%s; "+
		"etcd requests mean %.1f ms p99 %.0f ms, kube-apiserver mutating requests mean %.1f ms p99 %.0f ms (histograms of /metrics); "+
		"machine %.0f%% busy in the window, load average %.2f %.2f %.2f at its end.",
		name, c.nodes, f.cpu, f.mem.RSS, f.mem.Peak, f.mem.RSS*1024/float64(c.nodes), f.planeTotal(),
		f.plane[controlplane.BinKubeAPIServer], f.plane[controlplane.BinEtcd], f.plane[controlplane.BinKubeControllerManager],
		f.observed.NotReadyObservations, f.observed.NotReadyTransitions, f.observed.Renewals, l.P50, l.P99, l.Max,
		f.registration.Seconds(), prepared(f.prepare),
		f.latency.etcd.Mean()*1000, f.latency.etcd.Quantile(0.99)*1000, f.latency.mutating.Mean()*1000, f.latency.mutating.Quantile(0.99)*1000,
		f.machineBusy*100, f.load[0], f.load[1], f.load[2])
}

func prepared(d time.Duration) string {
	if d < time.Second {
		return ""
	}
	return fmt.Sprintf(" (its Node objects created beforehand in %.1f s)", d.Seconds())
}
