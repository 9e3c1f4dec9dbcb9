package runner_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/fakes"
	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/internal/backend"
	"github.com/bootproof/bootproof/internal/bench"
	"github.com/bootproof/bootproof/internal/runner"
	"github.com/bootproof/bootproof/internal/subject"
	kmmcontroller "github.com/bootproof/bootproof/kmm/controller"
	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/reports"
	"github.com/bootproof/bootproof/scenarios"
	"github.com/bootproof/bootproof/scenarios/trace"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// BenchmarkReloadLatency runs fast-reboot-0.5g over N nodes (default 100,
// BOOTPROOF_BENCH_LATENCY_NODES) rebooted together R times (default 5,
// BOOTPROOF_BENCH_LATENCY_REBOOTS) with the bootid subject and the fast
// timing profile, and reports the distribution of detection latency (new
// bootID visible -> loader pod created) and reload latency (new bootID
// visible -> module loaded in the new boot, ground truth), with the API
// writes per reload. BOOTPROOF_BENCH_LATENCY_POD (a duration) shortens the
// simulated worker's pod start and action, 100ms each in the fast profile,
// which are fixed simulation time inside every reload.
func BenchmarkReloadLatency(b *testing.B) {
	cptest.RequireBinaries(b)
	nodes, reboots := 100, 5
	if v, err := strconv.Atoi(os.Getenv("BOOTPROOF_BENCH_LATENCY_NODES")); err == nil && v > 0 {
		nodes = v
	}
	if v, err := strconv.Atoi(os.Getenv("BOOTPROOF_BENCH_LATENCY_REBOOTS")); err == nil && v > 0 {
		reboots = v
	}
	fast, err := fakes.TimingProfile(nodeapi.TimingFast)
	if err != nil {
		b.Fatal(err)
	}
	podStart, action := fast.PodStartLatency, fast.ActionLatency
	podLatency := ""
	if v, err := time.ParseDuration(os.Getenv("BOOTPROOF_BENCH_LATENCY_POD")); err == nil && v > 0 {
		podStart, action = v, v
		podLatency = fmt.Sprintf("podLatency: %s\n", v)
	}
	// The first loads' results are recorded and their pods released in
	// the settling sleep, before the first reboot opens the window in
	// which API writes are counted per reload.
	yaml := fmt.Sprintf("apiVersion: bootproof.dev/v1alpha1\nkind: Scenario\nname: bench-fast-reboot-0.5g\nnodes: %d\nmodules: [{name: dummy}]\ntiming: fast\n%sprecondition: fast\ndeadline: 120s\nexpect: {bootid: pass}\nactions:\n  - wait-reloaded: {}\n  - sleep: {duration: %s}\n",
		nodes, podLatency, settleBeforeReboots)
	for range reboots {
		yaml += "  - reboot: {downtime: 0.5g}\n  - wait-reloaded: {}\n"
	}
	sc, err := scenarios.Decode("bench", []byte(yaml))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		emb, err := cluster.StartEmbedded(context.Background(), controlplane.Config{GracePeriod: 10 * time.Second, MonitorPeriod: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		counted := &countedCluster{Embedded: emb}
		sub, _ := subject.New(subject.BootID, counted)
		start := time.Now()
		res := runner.Run(context.Background(), runner.Config{Cluster: counted, Backend: &backend.Fake{Cluster: counted},
			Subjects: []scenarios.Subject{sub}, Scenarios: []*scenarios.Scenario{sc}})
		wall := time.Since(start)
		closed, err := closedWatchers(emb.RESTConfig())
		emb.Stop()
		if err != nil {
			b.Fatal(err)
		}
		c := res.Cases[0]
		if c.Verdict != scenarios.Pass {
			b.Fatalf("verdict %s: %s", c.Verdict, c.Message)
		}
		det, rel := reports.Latencies(res, "")
		d, r := reports.Summarize("ms", det), reports.Summarize("ms", rel)
		d.Samples, r.Samples = nil, nil
		b.ReportMetric(r.P50, "reload-p50-ms")
		b.ReportMetric(r.P99, "reload-p99-ms")
		b.ReportMetric(d.P99, "detect-p99-ms")
		created, running := reloadStages(c)
		b.Logf("stages: detection p50 %.0f p99 %.0f; created->Running p50 %.0f p99 %.0f; Running->loaded p50 %.0f p99 %.0f ms",
			d.P50, d.P99, created.P50, created.P99, running.P50, running.P99)
		b.Logf("watches closed by kube-apiserver for slow clients: %s", closed)
		rs := reconcileStatsNow()
		b.Logf("reconciler: %d reconciles (%.1f per reload), %d errors, queue wait mean %.1f ms, reconcile mean %.1f ms",
			rs.reconciles, float64(rs.reconciles)/float64(max(1, r.Count)), rs.errors, rs.queueMeanMS, rs.workMeanMS)
		reqs := reloadRequests(&counted.n, c)
		for _, row := range bench.Tally(counted.n.Requests(reqs.From, reqs.To), reqs.Units, false) {
			if (row.Verb == "get" || row.Verb == "list") && row.Client != harnessClient && row.PerUnit >= 0.05 {
				b.Logf("reads per reload: %-10s %-7s %-40s %6.2f", row.Client, row.Verb, row.Resource, row.PerUnit)
			}
		}
		for _, row := range reqs.Rows {
			if row.Client != harnessClient && row.PerUnit >= 0.05 {
				b.Logf("writes per reload: %-10s %-7s %-40s %6.2f", row.Client, row.Verb, row.Resource, row.PerUnit)
			}
		}
		if dir := os.Getenv(reports.EnvBenchDir); dir != "" {
			err := reports.WriteBench(dir, reports.BenchResult{
				Name: "reload-latency",
				Description: fmt.Sprintf("fast-reboot-0.5g on %d simulated nodes rebooted together %d times (downtime 5s, grace period 10s, fast timing profile, simulated pod start %s and action %s), bootid subject in-process; "+
					"detection = new bootID visible in the API -> loader pod created; reload = new bootID visible -> module loaded in the new boot (ground truth).", nodes, reboots, podStart, action),
				Date: time.Now(), Machine: reports.MachineDescription(),
				Figures: map[string]reports.Distribution{"detection-latency": d, "reload-latency": r,
					"reload-stage-created-to-running": created, "reload-stage-running-to-loaded": running},
				Requests: reqs,
				Notes: []string{fmt.Sprintf("%d reboots measured; case wall time %s; load average at the end %s.", r.Count, wall.Round(time.Second), loadAverage()),
					fmt.Sprintf("Reload stages: detection, then loader pod created -> Running (simulated pod start %s), then Running -> module seen loaded (simulated action %s, ground-truth publication).",
						podStart, action),
					fmt.Sprintf("Reconciler (whole case, setup included): %d reconciles, %d errors, mean queue wait %.0f ms, mean reconcile %.0f ms.",
						rs.reconciles, rs.errors, rs.queueMeanMS, rs.workMeanMS),
					"Watches kube-apiserver closed because their clients did not keep up (apiserver_terminated_watchers_total; " +
						"each client's reflector watches again from its last resourceVersion, so no event is lost): " + closed.String() + "."},
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// settleBeforeReboots is the benchmark's pause between the first loads
// and the first reboot.
const settleBeforeReboots = 3 * time.Second

// watchClosures counts the watches kube-apiserver closed because the
// client did not read its events in time, by resource.
type watchClosures map[string]float64

func (w watchClosures) String() string {
	total := 0.0
	keys := slices.Sorted(maps.Keys(w))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		total += w[k]
		parts = append(parts, fmt.Sprintf("%s ×%.0f", k, w[k]))
	}
	if total == 0 {
		return "none"
	}
	return fmt.Sprintf("%.0f (%s)", total, strings.Join(parts, ", "))
}

// closedWatchers reads from kube-apiserver's /metrics the watches its
// watch cache closed for unresponsiveness since it started.
func closedWatchers(cfg *rest.Config) (watchClosures, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("count closed watches: %w", err)
	}
	data, err := bench.FetchMetrics(context.Background(), client.CoreV1().RESTClient())
	if err != nil {
		return nil, fmt.Errorf("count closed watches: %w", err)
	}
	c, err := bench.ParseCounter(data, bench.MetricTerminatedWatchers, bench.ResourceKey)
	if err != nil {
		return nil, fmt.Errorf("count closed watches: %w", err)
	}
	return watchClosures(c), nil
}

func TestWatchClosuresString(t *testing.T) {
	if s := (watchClosures{"pods": 2, "nodes": 1}).String(); s != "3 (nodes ×1, pods ×2)" {
		t.Errorf("String = %q", s)
	}
	if s := (watchClosures{"pods": 0}).String(); s != "none" {
		t.Errorf("no closures: %q, want none", s)
	}
}

// Client names of the API requests BenchmarkReloadLatency counts.
const (
	harnessClient    = "harness"    // the engine: observer, setup, teardown
	reconcilerClient = "reconciler" // the bootid subject
	kubeletClient    = "kubelet"    // the simulated kubelets, as their nodes
	fleetClient      = "fleet"      // the fleet's shared pod informer
)

// countedCluster is the embedded cluster whose clients' requests are
// counted, by who makes them.
type countedCluster struct {
	*cluster.Embedded
	n bench.APICounter
}

func (c *countedCluster) RESTConfig() *rest.Config {
	return c.n.Wrap(c.Embedded.RESTConfig(), harnessClient)
}

func (c *countedCluster) NodeRESTConfig(node string) (*rest.Config, error) {
	rc, err := c.Embedded.NodeRESTConfig(node)
	if err != nil {
		return nil, err
	}
	return c.n.Wrap(rc, kubeletClient), nil
}

func (c *countedCluster) UserRESTConfig(user string, groups ...string) (*rest.Config, error) {
	rc, err := c.Embedded.UserRESTConfig(user, groups...)
	if err != nil {
		return nil, err
	}
	client := user
	switch {
	case user == fakes.FleetUser:
		client = fleetClient
	case strings.HasPrefix(user, "bootproof:kmm:"):
		client = reconcilerClient
	}
	return c.n.Wrap(rc, client), nil
}

// reloadRequests counts the API writes of every client from the first
// planned reboot to the end of the case, per reload measured in it.
func reloadRequests(n *bench.APICounter, c scenarios.CaseResult) *reports.RequestTable {
	from := c.StartedAt.Add(time.Duration(c.DurationMS) * time.Millisecond)
	reloads := 0
	for _, m := range c.Reboots {
		if !m.Planned {
			continue
		}
		if at := c.StartedAt.Add(time.Duration(m.StartMS) * time.Millisecond); at.Before(from) {
			from = at
		}
		if m.ReloadLatencyMS >= 0 {
			reloads++
		}
	}
	to := c.StartedAt.Add(time.Duration(c.DurationMS) * time.Millisecond)
	return &reports.RequestTable{Unit: "reload", Units: reloads, From: from, To: to,
		Window: "writes (create, update, patch, delete) from the first reboot to the end of the case, teardown included; " +
			"kubelet leases are renewals (every 2s per node) and ground-truth publications, kubelet nodes/status the status posts",
		Rows: bench.Tally(n.Requests(from, to), reloads, true)}
}

// reloadStages splits each reload after detection into its stages from
// the case's trace: loader pod created -> Running (the simulated pod
// start) and Running -> module seen loaded (the simulated action and the
// ground-truth publication).
func reloadStages(c scenarios.CaseResult) (created, running reports.Distribution) {
	var startMS, loadMS []float64
	for _, m := range c.Reboots {
		if m.DetectionLatencyMS < 0 || m.ReloadLatencyMS < 0 {
			continue
		}
		at := m.BootVisibleMS + m.DetectionLatencyMS
		pod := ""
		for _, e := range c.Trace {
			if e.Kind != trace.KindPod || e.TMS < at {
				continue
			}
			if pod == "" && e.Node == m.Node && e.Detail == "Load created" {
				pod = e.Pod
			} else if pod != "" && e.Pod == pod && e.Detail == "Load Running" {
				startMS = append(startMS, float64(e.TMS-at))
				loadMS = append(loadMS, float64(m.BootVisibleMS+m.ReloadLatencyMS-e.TMS))
				break
			}
		}
	}
	created, running = reports.Summarize("ms", startMS), reports.Summarize("ms", loadMS)
	created.Samples, running.Samples = nil, nil
	return created, running
}

// reconcileStats are the reconciler's controller-runtime metrics.
type reconcileStats struct {
	reconciles, errors      int
	queueMeanMS, workMeanMS float64
}

// reconcileStatsNow reads the reconciler's metrics from
// controller-runtime's registry: they count every case of the process.
func reconcileStatsNow() reconcileStats {
	var s reconcileStats
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return s
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			ours := false
			for _, l := range m.GetLabel() {
				if (l.GetName() == "controller" || l.GetName() == "name") && l.GetValue() == kmmcontroller.Name {
					ours = true
				}
			}
			if !ours {
				continue
			}
			switch f.GetName() {
			case "controller_runtime_reconcile_total":
				s.reconciles += int(m.GetCounter().GetValue())
			case "controller_runtime_reconcile_errors_total":
				s.errors += int(m.GetCounter().GetValue())
			case "workqueue_queue_duration_seconds":
				if h := m.GetHistogram(); h.GetSampleCount() > 0 {
					s.queueMeanMS = 1000 * h.GetSampleSum() / float64(h.GetSampleCount())
				}
			case "workqueue_work_duration_seconds":
				if h := m.GetHistogram(); h.GetSampleCount() > 0 {
					s.workMeanMS = 1000 * h.GetSampleSum() / float64(h.GetSampleCount())
				}
			}
		}
	}
	return s
}

// loadAverage is the 1, 5 and 15 minute load average, for the notes:
// the machine may be shared.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
