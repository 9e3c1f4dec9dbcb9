package bench_test

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/internal/bench"
	"github.com/bootproof/bootproof/reports"
)

// Knobs of BenchmarkFleetMax ('make bench-fleet-max').
const (
	// envFleetMaxSteps lists the node counts of the ramp, increasing
	// (default defaultFleetMaxSteps).
	envFleetMaxSteps = "BOOTPROOF_BENCH_FLEETMAX_STEPS"
	// envFleetMaxSettle is the time after all Ready, before the window (default 20s).
	envFleetMaxSettle = "BOOTPROOF_BENCH_FLEETMAX_SETTLE"
	// envFleetMaxWindow is each step's measured window (default 60s).
	envFleetMaxWindow = "BOOTPROOF_BENCH_FLEETMAX_WINDOW"
	// envFleetMaxCPU is the share of the machine's CPU the plane and the
	// fleet together may use before the machine counts as saturated (default 0.9).
	envFleetMaxCPU = "BOOTPROOF_BENCH_FLEETMAX_CPU"
	// envFleetMaxLateness is the highest lease-renewal lateness p99 a step
	// may show (default 2s: five times the fleet's renew jitter ceiling).
	envFleetMaxLateness = "BOOTPROOF_BENCH_FLEETMAX_LATENESS"
	// envFleetMaxAPIP99 is the highest p99 of kube-apiserver's mutating
	// requests a step may show (default 1s, the Kubernetes scalability
	// SLO); raise it, and the lateness limit, to ramp on to the hard
	// limits (false NotReady, a control-plane restart).
	envFleetMaxAPIP99 = "BOOTPROOF_BENCH_FLEETMAX_API_P99"

	defaultFleetMaxSteps = "1000,2000,3000,4000,5000,6000,8000,10000"
	// mutatingP99SLO is Kubernetes' scalability SLO for mutating API
	// calls: p99 at most 1s.
	mutatingP99SLO = 1.0
)

type fleetMaxConfig struct {
	fleetBenchConfig
	steps  []int
	limits bench.Limits
}

func fleetMaxConfigFromEnv(b *testing.B) fleetMaxConfig {
	c := fleetMaxConfig{
		fleetBenchConfig: fleetConfig(b),
		limits:           bench.Limits{Cores: runtime.NumCPU(), CPUFraction: 0.9, LatenessP99Ms: 2000, MutatingP99: mutatingP99SLO},
	}
	c.settle, c.window = 20*time.Second, 60*time.Second
	steps := defaultFleetMaxSteps
	if s := os.Getenv(envFleetMaxSteps); s != "" {
		steps = s
	}
	var err error
	if c.steps, err = bench.ParseSteps(steps); err != nil {
		b.Fatalf("%s=%q: %v", envFleetMaxSteps, steps, err)
	}
	for env, dst := range map[string]*time.Duration{envFleetMaxSettle: &c.settle, envFleetMaxWindow: &c.window} {
		if s := os.Getenv(env); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				b.Fatalf("%s=%q: want a positive duration", env, s)
			}
			*dst = d
		}
	}
	if s := os.Getenv(envFleetMaxCPU); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v <= 0 || v > 1 {
			b.Fatalf("%s=%q: want a share of the machine's CPU in (0, 1]", envFleetMaxCPU, s)
		}
		c.limits.CPUFraction = v
	}
	if s := os.Getenv(envFleetMaxLateness); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			b.Fatalf("%s=%q: want a positive duration", envFleetMaxLateness, s)
		}
		c.limits.LatenessP99Ms = float64(d.Milliseconds())
	}
	if s := os.Getenv(envFleetMaxAPIP99); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			b.Fatalf("%s=%q: want a positive duration", envFleetMaxAPIP99, s)
		}
		c.limits.MutatingP99 = d.Seconds()
	}
	return c
}

// fleetMaxStep is one step of the ramp: what was measured, and the verdict.
type fleetMaxStep struct {
	nodes   int
	figs    fleetFigures
	ready   bool
	verdict string // why the machine does not hold it; "" when it does
}

func (s fleetMaxStep) benchStep() bench.Step {
	return bench.Step{Nodes: s.nodes, Ready: s.ready, Restarted: s.figs.restarted, FleetCPU: s.figs.cpu, PlaneCPU: s.figs.planeTotal(),
		NotReady: s.figs.observed.NotReadyObservations, Renewals: s.figs.observed.Renewals,
		LatenessP99Ms: reports.Summarize("ms", s.figs.observed.LatenessMs).P99, MutatingP99: s.figs.latency.mutating.Quantile(0.99)}
}

// BenchmarkFleetMax ramps bootproof's simulated fleet alone ('bootproof
// nodes run --timing kubelet-defaults') through increasing node counts,
// each step on a fresh embedded control plane, measures at each what
// BenchmarkFleetVsKWOK measures plus etcd and API request latency, and
// stops at the first step the machine does not hold (bench.Limits.Verdict:
// not all Ready, false NotReady, CPU saturated, lease lateness or API
// latency beyond its limit). It writes _output/bench/fleet-max.{json,md}
// after every step.
func BenchmarkFleetMax(b *testing.B) {
	cptest.RequireBinaries(b)
	c := fleetMaxConfigFromEnv(b)
	side := bootproofSide()
	if _, err := os.Stat(c.binDir + "/" + side.binary); err != nil {
		b.Fatalf("%s: %v (build it: 'make bench-fleet-max' does)", side.name, err)
	}
	var steps []fleetMaxStep
	for b.Loop() {
		steps = steps[:0]
		for _, n := range c.steps {
			sc := c.fleetBenchConfig
			sc.nodes = n
			sc.register = 2*time.Minute + time.Duration(n)*60*time.Millisecond
			f, err := measureFleet(b, sc, side)
			step := fleetMaxStep{nodes: n, figs: f, ready: err == nil}
			if err != nil && !errors.Is(err, errNotAllReady) {
				writeFleetMax(b, c, steps)
				b.Fatal(err)
			}
			step.verdict = c.limits.Verdict(step.benchStep())
			if err != nil {
				step.verdict += " (" + err.Error() + ")"
				b.Logf("%d nodes: %v", n, err)
			} else {
				b.Logf("%s", f.note)
			}
			steps = append(steps, step)
			writeFleetMax(b, c, steps)
			if step.verdict != "" {
				b.Logf("%d nodes: limit reached: %s", n, step.verdict)
				break
			}
		}
	}
	if held := largestHeld(steps); held != nil {
		b.ReportMetric(float64(held.nodes), "nodes-held")
	}
}

func writeFleetMax(b *testing.B, c fleetMaxConfig, steps []fleetMaxStep) {
	dir := os.Getenv(reports.EnvBenchDir)
	if dir == "" {
		return
	}
	if err := reports.WriteBench(dir, fleetMaxResult(c, steps)); err != nil {
		b.Fatal(err)
	}
}

// firstHeld is the first step the machine held, nil if none.
func firstHeld(steps []fleetMaxStep) *fleetMaxStep {
	for i := range steps {
		if steps[i].verdict == "" {
			return &steps[i]
		}
	}
	return nil
}

// largestHeld is the last step the machine held, nil if none.
func largestHeld(steps []fleetMaxStep) *fleetMaxStep {
	var held *fleetMaxStep
	for i := range steps {
		if steps[i].verdict == "" {
			held = &steps[i]
		}
	}
	return held
}

var fleetMaxColumns = []reports.TableColumn{
	{Name: "nodes"}, {Name: "fleet CPU", Unit: "CPU s/min"}, {Name: "fleet RSS", Unit: "MiB"}, {Name: "fleet RSS per node", Unit: "KiB"},
	{Name: "false NotReady", Unit: "Node updates"}, {Name: "lease renewals"}, {Name: "lateness p50", Unit: "ms"}, {Name: "lateness p99", Unit: "ms"},
	{Name: "all Ready after start", Unit: "s"}, {Name: "machine busy", Unit: "%"}, {Name: "load 1m"}, {Name: "load 5m"},
	// Past here a step with a control-plane restart shows "-".
	{Name: "plane CPU", Unit: "CPU s/min"}, {Name: "kube-apiserver", Unit: "CPU s/min"}, {Name: "etcd", Unit: "CPU s/min"},
	{Name: "kube-controller-manager", Unit: "CPU s/min"}, {Name: "plane CPU per 1000 nodes", Unit: "CPU s/min"},
	{Name: "other processes' CPU", Unit: "CPU s/min"},
	{Name: "etcd request mean", Unit: "ms"}, {Name: "etcd request p99", Unit: "ms"},
	{Name: "apiserver mutating mean", Unit: "ms"}, {Name: "apiserver mutating p99", Unit: "ms"},
}

func (s fleetMaxStep) row() reports.TableRow {
	note := "holds"
	if s.verdict != "" {
		note = "limit: " + s.verdict
	}
	if !s.ready {
		return reports.TableRow{Values: []float64{float64(s.nodes)}, Note: note}
	}
	f, k := s.figs, float64(s.nodes)/1000
	late := reports.Summarize("ms", f.observed.LatenessMs)
	row := reports.TableRow{Note: note, Values: []float64{
		float64(s.nodes), f.cpu, f.mem.RSS, f.mem.RSS * 1024 / float64(s.nodes),
		float64(f.observed.NotReadyObservations), float64(f.observed.Renewals), late.P50, late.P99,
		f.registration.Seconds(), f.machineBusy * 100, f.load[0], f.load[1],
	}}
	if f.restarted != "" {
		return row // the plane's CPU and latency are not comparable
	}
	row.Values = append(row.Values,
		f.planeTotal(), f.plane[controlplane.BinKubeAPIServer], f.plane[controlplane.BinEtcd], f.plane[controlplane.BinKubeControllerManager],
		f.planeTotal()/k, othersCPU(f, runtime.NumCPU()),
		f.latency.etcd.Mean()*1000, f.latency.etcd.Quantile(0.99)*1000,
		f.latency.mutating.Mean()*1000, f.latency.mutating.Quantile(0.99)*1000)
	return row
}

// othersCPU is the CPU s/min the machine spent busy in the window on
// anything but the plane and the fleet (other work on a shared machine),
// on a machine of cores CPUs.
func othersCPU(f fleetFigures, cores int) float64 {
	return max(0, f.machineBusy*float64(cores)*60-f.planeTotal()-f.cpu)
}

// fleetMaxResult is the ramp's report: a row per step, the largest node
// count held, why the next did not hold, and how to size beyond it.
func fleetMaxResult(c fleetMaxConfig, steps []fleetMaxStep) reports.BenchResult {
	grace := controlplane.DefaultGracePeriod
	for _, s := range steps {
		if s.figs.grace > 0 {
			grace = s.figs.grace
		}
	}
	r := reports.BenchResult{
		Name: "fleet-max",
		Description: fmt.Sprintf("The largest fleet this machine holds: bootproof's simulated fleet alone ('bootproof nodes run --timing kubelet-defaults': Lease %s renewed every %s, "+
			"status computed every %s and posted on change or every %s) at increasing node counts (%s), each step its own process with the plane's admin kubeconfig "+
			"on a fresh embedded control plane (grace period %s, monitor period %s) on the same machine. Per step: all Nodes Ready, %s settling, then a %s window in which "+
			"the fleet's and each control-plane process's CPU (utime+stime), the machine's busy share, Node updates with Ready not True, Lease renewals (renewTime gap minus %s) "+
			"and kube-apiserver's %s (all operations) and %s (verbs that write; mean from _sum/_count, p99 interpolated in the buckets as histogram_quantile does) are measured; "+
			"RSS and load average at the window's end. The ramp stops at the first step with: not all nodes Ready within 2 min + 60 ms a node, a control-plane restart, "+
			"false NotReady, plane + fleet CPU >= %.0f%% of the machine's %d cores (%.0f CPU s/min), lease-renewal lateness p99 > %.0f ms, "+
			"or kube-apiserver mutating-request p99 > %.1f s (the Kubernetes scalability SLO is 1 s).",
			c.timing.LeaseDuration, c.timing.RenewInterval, c.timing.StatusInterval, c.timing.ReportInterval, joinInts(c.steps),
			grace, controlplane.DefaultMonitorPeriod, c.settle, c.window, c.timing.RenewInterval,
			bench.MetricEtcdRequest, bench.MetricAPIRequest,
			c.limits.CPUFraction*100, c.limits.Cores, c.limits.CPUFraction*float64(c.limits.Cores)*60, c.limits.LatenessP99Ms, c.limits.MutatingP99),
		Date: time.Now(), Machine: reports.MachineDescription(), Figures: map[string]reports.Distribution{},
		Table: &reports.BenchTable{Columns: fleetMaxColumns},
	}
	for _, s := range steps {
		r.Table.Rows = append(r.Table.Rows, s.row())
	}
	r.Notes = append(r.Notes, fleetMaxConclusion(c, steps)...)
	one := func(unit string, v float64) reports.Distribution { return reports.Summarize(unit, []float64{v}) }
	if held, cost := largestHeld(steps), firstHeld(steps); held != nil {
		k := float64(cost.nodes) / 1000
		f := cost.figs
		for name, d := range map[string]reports.Distribution{
			"largest-nodes-held":              one("nodes", float64(held.nodes)),
			"cost-measured-at":                one("nodes", float64(cost.nodes)),
			"plane-cpu-per-1000-nodes":        one("CPU s/min", f.planeTotal()/k),
			"apiserver-cpu-per-1000-nodes":    one("CPU s/min", f.plane[controlplane.BinKubeAPIServer]/k),
			"etcd-cpu-per-1000-nodes":         one("CPU s/min", f.plane[controlplane.BinEtcd]/k),
			"controller-manager-cpu-per-1000": one("CPU s/min", f.plane[controlplane.BinKubeControllerManager]/k),
			"fleet-cpu-per-1000-nodes":        one("CPU s/min", f.cpu/k),
			"fleet-rss-per-node":              one("KiB", f.mem.RSS*1024/float64(cost.nodes)),
		} {
			r.Figures[name] = d
		}
	}
	return r
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// fleetMaxConclusion says how far the ramp got and why it stopped, and
// how to size a larger fleet: the control plane elsewhere, the fleet's
// host from the fleet's own cost per node.
func fleetMaxConclusion(c fleetMaxConfig, steps []fleetMaxStep) []string {
	if len(steps) == 0 {
		return nil
	}
	var out []string
	held, last := largestHeld(steps), steps[len(steps)-1]
	switch {
	case held == nil:
		out = append(out, fmt.Sprintf("**Limit:** the machine did not hold even the first step, %d nodes: %s.", last.nodes, last.verdict))
	case last.verdict == "":
		out = append(out, fmt.Sprintf("**Limit:** not reached: the machine held every step up to %d nodes (raise %s to go on).", last.nodes, envFleetMaxSteps))
	default:
		out = append(out, fmt.Sprintf("**Limit:** the largest fleet this machine held is %d nodes; at %d nodes: %s.", held.nodes, last.nodes, last.verdict))
	}
	if others := maxOthersCPU(steps, c.limits.Cores); others > 0.1*float64(c.limits.Cores)*60 {
		out = append(out, fmt.Sprintf("**Shared machine:** other processes took up to %.0f CPU s/min of the machine's %.0f during the windows "+
			"(the \"other processes' CPU\" column): the limit above is this machine's under that load, not what it holds alone.",
			others, float64(c.limits.Cores)*60))
	}
	if held == nil {
		return out
	}
	// The cost per node from the first step held: the one the fleet
	// itself loads least; on a saturated machine larger steps get less
	// CPU than they ask for.
	cost := firstHeld(steps)
	f, k := cost.figs, float64(cost.nodes)/1000
	fleetPerK, planePerK := f.cpu/k, f.planeTotal()/k
	kib := f.mem.RSS * 1024 / float64(cost.nodes)
	if f.machineBusy >= 0.95 {
		out = append(out, fmt.Sprintf("**Note:** the machine was %.0f%% busy in the %d-node window: the plane got no more CPU than it did, so its cost below is a lower bound.",
			f.machineBusy*100, cost.nodes))
	}
	out = append(out, fmt.Sprintf("**Cost per 1000 nodes at %d nodes (the first step held):** control plane %.1f CPU s/min (kube-apiserver %.1f, etcd %.1f, kube-controller-manager %.1f), "+
		"i.e. %.2f cores; the fleet %.2f CPU s/min (%.3f cores) and %.0f KiB of RSS per node. The plane costs %.1f times what the fleet does.",
		cost.nodes, planePerK, f.plane[controlplane.BinKubeAPIServer]/k, f.plane[controlplane.BinEtcd]/k, f.plane[controlplane.BinKubeControllerManager]/k,
		planePerK/60, fleetPerK, fleetPerK/60, kib, planePerK/max(fleetPerK, 1e-9)))
	out = append(out, fmt.Sprintf("**More nodes than one machine holds:** keep the fleet on its own host and move the control plane: point bootproof at a bigger cluster "+
		"(`bootproof run --cluster kubeconfig --kubeconfig K --grace-period G`, or `bootproof nodes run --kubeconfig K --count N` for a bare fleet) whose API servers and etcd are sized for N nodes "+
		"(this embedded plane needed %.1f CPU s/min per 1000 nodes; a production plane's cost differs). "+
		"Size the fleet's host from the fleet's own cost measured here: %.2f CPU s/min and %.1f MiB of RSS per 1000 nodes, so one core kept at 50%% busy carries about %.0f nodes, "+
		"and 10,000 nodes need about %.1f cores (at 50%%) and %.1f GiB of RSS before headroom.",
		planePerK, fleetPerK, kib*1000/1024, fleetNodesPerCore(fleetPerK), 10000/fleetNodesPerCore(fleetPerK), kib*10000/1024/1024))
	return out
}

// fleetNodesPerCore is how many nodes one core carries at 50% busy (so
// heartbeats never queue) when 1000 nodes cost perK CPU s/min.
func fleetNodesPerCore(perK float64) float64 {
	return 0.5 * 60 * 1000 / max(perK, 1e-9)
}

// maxOthersCPU is the most CPU other processes took in a measured step's
// window.
func maxOthersCPU(steps []fleetMaxStep, cores int) float64 {
	m := 0.0
	for _, s := range steps {
		if s.ready {
			m = max(m, othersCPU(s.figs, cores))
		}
	}
	return m
}
