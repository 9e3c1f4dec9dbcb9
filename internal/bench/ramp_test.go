package bench_test

import (
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/internal/bench"
)

func TestParseSteps(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  string
	}{
		{in: "1000", want: []int{1000}},
		{in: "1000, 2000,4000", want: []int{1000, 2000, 4000}},
		{in: "1000,1000", err: "increasing"},
		{in: "2000,1000", err: "increasing"},
		{in: "0", err: "positive"},
		{in: "1000,,2000", err: "positive"},
		{in: "1k", err: "positive"},
	} {
		got, err := bench.ParseSteps(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSteps(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseSteps(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestVerdict(t *testing.T) {
	l := bench.Limits{Cores: 2, CPUFraction: 0.9, LatenessP99Ms: 2000, MutatingP99: 1}
	ok := bench.Step{Nodes: 1000, Ready: true, FleetCPU: 7, PlaneCPU: 45, Renewals: 6000, LatenessP99Ms: 380, MutatingP99: 0.05}
	with := func(f func(*bench.Step)) bench.Step { s := ok; f(&s); return s }
	for _, tc := range []struct {
		name string
		step bench.Step
		want string // substring; "" means holds
	}{
		{"holds", ok, ""},
		{"just under the CPU budget", with(func(s *bench.Step) { s.PlaneCPU, s.FleetCPU = 90, 17.9 }), ""},
		{"CPU budget reached", with(func(s *bench.Step) { s.PlaneCPU, s.FleetCPU = 90, 18 }), "CPU saturated"},
		{"not Ready", with(func(s *bench.Step) { s.Ready = false; s.PlaneCPU = 200 }), "not all 1000 nodes Ready"},
		{"restart", with(func(s *bench.Step) { s.Restarted = "kube-controller-manager exited"; s.NotReady = 1 }), "control plane restarted: kube-controller-manager exited"},
		{"false NotReady before CPU", with(func(s *bench.Step) { s.NotReady = 3; s.PlaneCPU = 200 }), "false NotReady: 3"},
		{"no renewals", with(func(s *bench.Step) { s.Renewals = 0 }), "no lease renewal"},
		{"lateness at the limit holds", with(func(s *bench.Step) { s.LatenessP99Ms = 2000 }), ""},
		{"lateness beyond", with(func(s *bench.Step) { s.LatenessP99Ms = 2001 }), "lateness p99 2001 ms > 2000 ms"},
		{"API latency beyond", with(func(s *bench.Step) { s.MutatingP99 = 1.2 }), "mutating-request p99 1.20 s"},
	} {
		got := l.Verdict(tc.step)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: Verdict = %q, want %q", tc.name, got, tc.want)
		}
	}
}

const sampleMetrics = `# HELP etcd_request_duration_seconds [ALPHA] Etcd request latency in seconds for each operation and object type.
# TYPE etcd_request_duration_seconds histogram
etcd_request_duration_seconds_bucket{operation="update",type="leases.coordination.k8s.io",le="0.005"} 80
etcd_request_duration_seconds_bucket{operation="update",type="leases.coordination.k8s.io",le="0.025"} 95
etcd_request_duration_seconds_bucket{operation="update",type="leases.coordination.k8s.io",le="0.1"} 100
etcd_request_duration_seconds_bucket{operation="update",type="leases.coordination.k8s.io",le="+Inf"} 100
etcd_request_duration_seconds_sum{operation="update",type="leases.coordination.k8s.io"} 0.5
etcd_request_duration_seconds_count{operation="update",type="leases.coordination.k8s.io"} 100
etcd_request_duration_seconds_bucket{operation="get",type="nodes",le="0.005"} 0
etcd_request_duration_seconds_bucket{operation="get",type="nodes",le="0.025"} 0
etcd_request_duration_seconds_bucket{operation="get",type="nodes",le="0.1"} 50
etcd_request_duration_seconds_bucket{operation="get",type="nodes",le="+Inf"} 100
etcd_request_duration_seconds_sum{operation="get",type="nodes"} 20
etcd_request_duration_seconds_count{operation="get",type="nodes"} 100
# HELP up whatever
# TYPE up gauge
up 1
`

const sampleCounters = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",resource="nodes",subresource="",verb="GET"} 600
apiserver_request_total{code="404",component="apiserver",resource="nodes",subresource="",verb="GET"} 5
apiserver_request_total{code="200",component="apiserver",resource="nodes",subresource="status",verb="PATCH"} 10
apiserver_request_total{code="200",component="apiserver",resource="leases",subresource="",verb="PUT"} 1200
apiserver_request_total{code="200",component="apiserver",resource="",subresource="",verb="GET"} 7
# HELP apiserver_terminated_watchers_total [ALPHA] Counter of watchers closed due to unresponsiveness broken by resource type.
# TYPE apiserver_terminated_watchers_total counter
apiserver_terminated_watchers_total{group="",resource="pods"} 24
apiserver_terminated_watchers_total{group="coordination.k8s.io",resource="leases"} 2
`

func TestParseCounter(t *testing.T) {
	got, err := bench.ParseCounter([]byte(sampleCounters), bench.MetricAPIRequestTotal, bench.RequestKey)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"GET nodes": 605, "PATCH nodes/status": 10, "PUT leases": 1200}
	if !maps.Equal(got, want) {
		t.Errorf("ParseCounter = %v, want %v (codes summed, /metrics left out)", got, want)
	}
	earlier := map[string]float64{"GET nodes": 5, "PUT leases": 200}
	d, err := bench.SubCounters(got, earlier)
	if err != nil || !maps.Equal(d, map[string]float64{"GET nodes": 600, "PATCH nodes/status": 10, "PUT leases": 1000}) {
		t.Errorf("SubCounters = %v, %v", d, err)
	}
	if _, err := bench.SubCounters(earlier, got); err == nil {
		t.Error("a counter that fell: no error")
	}
	closed, err := bench.ParseCounter([]byte(sampleCounters), bench.MetricTerminatedWatchers, bench.ResourceKey)
	if want := map[string]float64{"pods": 24, "leases.coordination.k8s.io": 2}; err != nil || !maps.Equal(closed, want) {
		t.Errorf("terminated watchers by resource = %v, %v; want %v", closed, err, want)
	}
	if none, err := bench.ParseCounter([]byte(sampleMetrics), bench.MetricAPIRequestTotal, bench.RequestKey); err != nil || len(none) != 0 {
		t.Errorf("absent counter: %v, %v", none, err)
	}
	if _, err := bench.ParseCounter([]byte(sampleMetrics), bench.MetricEtcdRequest, bench.RequestKey); err == nil {
		t.Error("a histogram parsed as a counter")
	}
}

func TestParseHistogram(t *testing.T) {
	all, err := bench.ParseHistogram([]byte(sampleMetrics), bench.MetricEtcdRequest, nil)
	if err != nil {
		t.Fatal(err)
	}
	if all.Count != 200 || all.Sum != 20.5 || !slices.Equal(all.Counts, []float64{80, 95, 150, 200}) || !math.IsInf(all.Bounds[3], 1) {
		t.Errorf("all series: %+v", all)
	}
	updates, err := bench.ParseHistogram([]byte(sampleMetrics), bench.MetricEtcdRequest, func(l map[string]string) bool { return l["operation"] == "update" })
	if err != nil || updates.Count != 100 || updates.Mean() != 0.005 {
		t.Errorf("updates: %+v, %v", updates, err)
	}
	none, err := bench.ParseHistogram([]byte(sampleMetrics), bench.MetricAPIRequest, nil)
	if err != nil || none.Count != 0 || none.Quantile(0.99) != 0 || none.Mean() != 0 {
		t.Errorf("absent metric: %+v, %v", none, err)
	}
	if _, err := bench.ParseHistogram([]byte(sampleMetrics), "up", nil); err == nil {
		t.Error("a gauge parsed as a histogram")
	}
	if _, err := bench.ParseHistogram([]byte("bad metric{"), "up", nil); err == nil {
		t.Error("malformed text: no error")
	}
}

func TestHistogramQuantile(t *testing.T) {
	inf := math.Inf(1)
	h := bench.Histogram{Bounds: []float64{0.005, 0.025, 0.1, inf}, Counts: []float64{80, 95, 150, 200}, Count: 200}
	for _, tc := range []struct {
		q, want float64
	}{
		{0.2, 0.0025},             // rank 40 of the 80 in [0, 0.005]
		{0.4, 0.005},              // rank 80: the first bucket's top
		{0.5, 0.025 + 0.075*5/55}, // rank 100: the 5th of the 55 in (0.025, 0.1]
		{0.75, 0.1},               // rank 150
		{0.99, 0.1},               // rank 198, in +Inf: the highest finite bound
		{0.475, 0.025},            // rank 95
	} {
		if got := h.Quantile(tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

func TestHistogramSub(t *testing.T) {
	inf := math.Inf(1)
	later := bench.Histogram{Bounds: []float64{0.1, inf}, Counts: []float64{10, 12}, Count: 12, Sum: 1.5}
	earlier := bench.Histogram{Bounds: []float64{0.1, inf}, Counts: []float64{4, 5}, Count: 5, Sum: 0.5}
	d, err := later.Sub(earlier)
	if err != nil || d.Count != 7 || d.Sum != 1 || !slices.Equal(d.Counts, []float64{6, 7}) {
		t.Errorf("Sub = %+v, %v", d, err)
	}
	if d, err := later.Sub(bench.Histogram{}); err != nil || d.Count != 12 {
		t.Errorf("Sub(empty) = %+v, %v", d, err)
	}
	if _, err := earlier.Sub(later); err == nil || !strings.Contains(err.Error(), "fell") {
		t.Errorf("counts falling: %v", err)
	}
	if _, err := later.Sub(bench.Histogram{Bounds: []float64{0.2, inf}, Counts: []float64{1, 1}}); err == nil {
		t.Error("other buckets: no error")
	}
	if _, err := (bench.Histogram{}).Sub(earlier); err == nil {
		t.Error("histogram gone: no error")
	}
}

func TestParseLoadAverage(t *testing.T) {
	got, err := bench.ParseLoadAverage("0.92 0.87 0.91 2/345 12345\n")
	if err != nil || got != [3]float64{0.92, 0.87, 0.91} {
		t.Errorf("ParseLoadAverage = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0.1 0.2", "0.1 x 0.3 1/2 3"} {
		if _, err := bench.ParseLoadAverage(bad); err == nil {
			t.Errorf("ParseLoadAverage(%q): no error", bad)
		}
	}
	if l, err := bench.LoadAverage(); err != nil || l[0] < 0 {
		t.Errorf("LoadAverage() = %v, %v", l, err)
	}
}

func TestParseMachineCPU(t *testing.T) {
	for _, tc := range []struct {
		line        string
		busy, total float64
		err         bool
	}{
		// user nice system idle iowait irq softirq steal guest guest_nice
		{line: "cpu  100 10 50 800 20 5 5 10 300 3", busy: 1.8, total: 10},
		{line: "cpu 100 0 100 800 0", busy: 2, total: 10},
		{line: "cpu0 100 0 100 800 0", err: true},
		{line: "cpu 100 x 100 800 0", err: true},
		{line: "cpu 1 2", err: true},
	} {
		busy, total, err := bench.ParseMachineCPU(tc.line)
		if tc.err != (err != nil) || math.Abs(busy-tc.busy) > 1e-9 || math.Abs(total-tc.total) > 1e-9 {
			t.Errorf("ParseMachineCPU(%q) = %v, %v, %v; want %v, %v, error %v", tc.line, busy, total, err, tc.busy, tc.total, tc.err)
		}
	}
	if busy, total, err := bench.MachineCPU(); err != nil || busy <= 0 || total < busy {
		t.Errorf("MachineCPU() = %v, %v, %v", busy, total, err)
	}
}
