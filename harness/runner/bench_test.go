package runner_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/bootproof/bootproof/harness/backend"
	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/harness/runner"
	"github.com/bootproof/bootproof/harness/subject"
	"github.com/bootproof/bootproof/reports"
	"github.com/bootproof/bootproof/scenarios"
)

// BenchmarkReloadLatency runs fast-reboot-0.5g over N nodes (default 100,
// BOOTPROOF_BENCH_LATENCY_NODES) rebooted together R times (default 5,
// BOOTPROOF_BENCH_LATENCY_REBOOTS) with the bootid subject and the fast
// timing profile, and reports the distribution of detection latency (new
// bootID visible -> loader pod created) and reload latency (new bootID
// visible -> module loaded in the new boot, ground truth).
func BenchmarkReloadLatency(b *testing.B) {
	cptest.RequireBinaries(b)
	nodes, reboots := 100, 5
	if v, err := strconv.Atoi(os.Getenv("BOOTPROOF_BENCH_LATENCY_NODES")); err == nil && v > 0 {
		nodes = v
	}
	if v, err := strconv.Atoi(os.Getenv("BOOTPROOF_BENCH_LATENCY_REBOOTS")); err == nil && v > 0 {
		reboots = v
	}
	yaml := fmt.Sprintf("name: bench-fast-reboot-0.5g\nnodes: %d\nmodules: [{name: dummy}]\ntiming: fast\nprecondition: fast\ndeadline: 120s\nexpect: {bootid: pass}\nactions:\n  - wait-reloaded: {}\n", nodes)
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
		sub, _ := subject.New(subject.BootID, emb)
		start := time.Now()
		res := runner.Run(context.Background(), runner.Config{Cluster: emb, Backend: &backend.Fake{Cluster: emb},
			Subjects: []scenarios.Subject{sub}, Scenarios: []*scenarios.Scenario{sc}})
		wall := time.Since(start)
		emb.Stop()
		c := res.Cases[0]
		if c.Verdict != scenarios.Pass {
			b.Fatalf("verdict %s: %s", c.Verdict, c.Message)
		}
		det, rel := reports.Latencies(res, "")
		d, r := reports.Summarize("ms", det), reports.Summarize("ms", rel)
		d.Samples, r.Samples = nil, nil
		b.ReportMetric(r.P99, "reload-p99-ms")
		b.ReportMetric(d.P99, "detect-p99-ms")
		if dir := os.Getenv(reports.EnvBenchDir); dir != "" {
			err := reports.WriteBench(dir, reports.BenchResult{
				Name: "reload-latency",
				Description: fmt.Sprintf("fast-reboot-0.5g on %d simulated nodes rebooted together %d times (downtime 5s, grace period 10s, fast timing profile), bootid subject in-process; "+
					"detection = new bootID visible in the API -> loader pod created; reload = new bootID visible -> module loaded in the new boot (ground truth).", nodes, reboots),
				Date: time.Now(), Machine: reports.MachineDescription(),
				Figures: map[string]reports.Distribution{"detection-latency": d, "reload-latency": r},
				Notes:   []string{fmt.Sprintf("%d reboots measured; case wall time %s.", r.Count, wall.Round(time.Second))},
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
