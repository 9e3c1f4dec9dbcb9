package controlplane_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/reports"
)

// BenchmarkStart measures process start -> ready of the embedded control
// plane. Run with -benchtime Nx for N starts; with BOOTPROOF_BENCH_DIR set
// it writes controlplane-start.{json,md} there.
func BenchmarkStart(b *testing.B) {
	cptest.RequireBinaries(b)
	var samples []float64
	for b.Loop() {
		start := time.Now()
		cp, err := controlplane.Start(context.Background(), controlplane.Config{GracePeriod: 8 * time.Second, MonitorPeriod: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(start).Seconds())
		b.StopTimer()
		cp.Stop()
		b.StartTimer()
	}
	d := reports.Summarize("s", samples)
	b.ReportMetric(d.Min, "min-s")
	b.ReportMetric(d.P50, "median-s")
	b.ReportMetric(d.Max, "max-s")
	if dir := os.Getenv(reports.EnvBenchDir); dir != "" {
		err := reports.WriteBench(dir, reports.BenchResult{
			Name:        "controlplane-start",
			Description: "Embedded control plane: controlplane.Start from the first process start to ready (etcd healthy, /readyz, controller manager healthy, RBAC bootstrap and default namespace present).",
			Date:        time.Now(),
			Machine:     reports.MachineDescription(),
			Figures:     map[string]reports.Distribution{"start-to-ready": d},
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
