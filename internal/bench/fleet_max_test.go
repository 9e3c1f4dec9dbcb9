package bench_test

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/fakes"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/internal/bench"
	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/reports"
)

func fleetMaxTestConfig() fleetMaxConfig {
	return fleetMaxConfig{
		fleetBenchConfig: fleetBenchConfig{settle: 20 * time.Second, window: time.Minute, timing: fakes.TimingProfiles[nodeapi.TimingKubeletDefaults]},
		steps:            []int{1000, 2000, 3000},
		limits:           bench.Limits{Cores: 2, CPUFraction: 0.9, LatenessP99Ms: 2000, MutatingP99: 1},
	}
}

func heldStep(nodes int, fleet, plane float64) fleetMaxStep {
	f := fleetFigures{cpu: fleet, mem: bench.Memory{RSS: float64(nodes) * 10 / 1024, Peak: float64(nodes) * 20 / 1024},
		plane:    map[string]float64{controlplane.BinKubeAPIServer: plane / 2, controlplane.BinEtcd: plane / 4, controlplane.BinKubeControllerManager: plane / 4},
		observed: bench.Figures{Renewals: nodes * 6, LatenessMs: []float64{10, 20, 300}}}
	return fleetMaxStep{nodes: nodes, figs: f, ready: true}
}

// TestFleetMaxReport: the report has a row per step ("-" past what a step
// that never got Ready measured), states the largest count held and why
// the next did not hold, and derives the cost per 1000 nodes and the
// fleet host's size from the largest held step.
func TestFleetMaxReport(t *testing.T) {
	c := fleetMaxTestConfig()
	for _, tc := range []struct {
		name  string
		steps []fleetMaxStep
		want  []string
		not   []string
		held  float64 // largest-nodes-held figure; 0: none
	}{
		{
			name: "stops at CPU",
			steps: []fleetMaxStep{heldStep(1000, 6, 45), heldStep(2000, 12, 90),
				func() fleetMaxStep { s := heldStep(3000, 18, 100); s.verdict = "CPU saturated: x"; return s }()},
			want: []string{"largest fleet this machine held is 2000 nodes; at 3000 nodes: CPU saturated: x.",
				"at 1000 nodes (the first step held):",
				"control plane 45.0 CPU s/min (kube-apiserver 22.5, etcd 11.2, kube-controller-manager 11.2)",
				"the fleet 6.00 CPU s/min", "10 KiB of RSS per node", "The plane costs 7.5 times what the fleet does",
				"one core kept at 50% busy carries about 5000 nodes", "10,000 nodes need about 2.0 cores",
				"| 2000 | 12 | 19.53 | 10 | 0 | 12000 | 20 | 300 | 0 | 0 | 0 | 0 | 90 | 45 | 22.5 | 22.5 | 45 | 0 |", "| limit: CPU saturated: x |", "| holds |"},
			held: 2000,
		},
		{
			name:  "not Ready at the first step",
			steps: []fleetMaxStep{{nodes: 1000, verdict: "not all 1000 nodes Ready in time"}},
			want:  []string{"did not hold even the first step, 1000 nodes: not all 1000 nodes Ready in time.", "| 1000 | - | - |"},
		},
		{
			name:  "every step held",
			steps: []fleetMaxStep{heldStep(1000, 6, 45), heldStep(3000, 18, 120)},
			want:  []string{"not reached: the machine held every step up to 3000 nodes"},
			not:   []string{"Shared machine"},
			held:  3000,
		},
		{
			name: "shared machine",
			steps: []fleetMaxStep{func() fleetMaxStep { s := heldStep(1000, 6, 45); s.figs.machineBusy = 0.99; return s }(),
				{nodes: 1500, verdict: "not all 1500 nodes Ready in time (bootproof exited: TLS handshake timeout)"}},
			want: []string{"largest fleet this machine held is 1000 nodes; at 1500 nodes: not all 1500 nodes Ready in time (bootproof exited: TLS handshake timeout).",
				"other processes took up to 68 CPU s/min of the machine's 120", "the machine was 99% busy in the 1000-node window"},
			held: 1000,
		},
		{
			name: "restart",
			steps: []fleetMaxStep{heldStep(1000, 6, 45),
				func() fleetMaxStep {
					s := heldStep(2000, 12, 80)
					s.figs.restarted, s.verdict = "kube-controller-manager exited", "control plane restarted: kube-controller-manager exited"
					return s
				}()},
			want: []string{"| 2000 | 12 | 19.53 | 10 | 0 | 12000 | 20 | 300 | 0 | 0 | 0 | 0 | - | - | - | - | - | - | - | - | - | - | limit: control plane restarted"},
			held: 1000,
		},
	} {
		dir := t.TempDir()
		r := fleetMaxResult(c, tc.steps)
		if err := reports.WriteBench(dir, r); err != nil {
			t.Fatal(err)
		}
		md := readFile(t, dir+"/fleet-max.md")
		for _, w := range tc.want {
			if !strings.Contains(md, w) {
				t.Errorf("%s: fleet-max.md lacks %q:\n%s", tc.name, w, md)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(md, w) {
				t.Errorf("%s: fleet-max.md has %q:\n%s", tc.name, w, md)
			}
		}
		if len(r.Table.Rows) != len(tc.steps) {
			t.Errorf("%s: %d rows for %d steps", tc.name, len(r.Table.Rows), len(tc.steps))
		}
		if got := r.Figures["largest-nodes-held"].Max; got != tc.held {
			t.Errorf("%s: largest-nodes-held %v, want %v", tc.name, got, tc.held)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestOthersCPU(t *testing.T) {
	for _, tc := range []struct {
		busy, fleet, plane float64
		cores              int
		want               float64
	}{
		{busy: 0.99, fleet: 7, plane: 41, cores: 2, want: 70.8}, // 118.8 busy
		{busy: 0.5, fleet: 10, plane: 50, cores: 2, want: 0},
		{busy: 0.4, fleet: 10, plane: 50, cores: 2, want: 0}, // sampling noise: never negative
		{busy: 0.5, fleet: 10, plane: 50, cores: 4, want: 60},
	} {
		f := fleetFigures{machineBusy: tc.busy, cpu: tc.fleet, plane: map[string]float64{controlplane.BinEtcd: tc.plane}}
		if got := othersCPU(f, tc.cores); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("othersCPU(busy %v, fleet %v, plane %v, %d cores) = %v, want %v", tc.busy, tc.fleet, tc.plane, tc.cores, got, tc.want)
		}
	}
}

func TestLastFatal(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		log, want string
	}{
		{log: "I1201 ok\nE1201 12:00:00 leaderelection.go:1] \"leaderelection lost\"\nI1201 bye\n", want: "E1201 12:00:00 leaderelection.go:1] \"leaderelection lost\""},
		{log: "I1201 ok\nF1201 12:00:00 server.go:1] boom\nFoo\n", want: "F1201 12:00:00 server.go:1] boom"},
		{log: "I1201 ok\nFoo bar\n", want: ""},
	} {
		path := dir + "/x.log"
		if err := os.WriteFile(path, []byte(tc.log), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := lastFatal(path); got != tc.want {
			t.Errorf("lastFatal(%q) = %q, want %q", tc.log, got, tc.want)
		}
	}
}
