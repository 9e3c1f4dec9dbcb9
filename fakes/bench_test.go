package fakes_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/bootproof/bootproof/fakes"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/internal/bench"
	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/reports"
)

// BenchmarkFleetScale runs N simulated nodes at kubelet-defaults timing,
// each with its own system:node identity, against an embedded control
// plane with Kubernetes' default grace period, and measures false
// NotReady/Unknown transitions, lease-renewal lateness, and CPU and memory.
// BOOTPROOF_BENCH_FLEET_SIZES (default 100,500,1000) and
// BOOTPROOF_BENCH_FLEET_DURATION (default 3m) set the sizes and the soak.
func BenchmarkFleetScale(b *testing.B) {
	cptest.RequireBinaries(b)
	sizes := []int{100, 500, 1000}
	if s := os.Getenv("BOOTPROOF_BENCH_FLEET_SIZES"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatalf("BOOTPROOF_BENCH_FLEET_SIZES %q: %v", s, err)
			}
			sizes = append(sizes, n)
		}
	}
	soak := 3 * time.Minute
	if s := os.Getenv("BOOTPROOF_BENCH_FLEET_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatalf("BOOTPROOF_BENCH_FLEET_DURATION %q: %v", s, err)
		}
		soak = d
	}
	result := reports.BenchResult{
		Name: "fakes-scale",
		Description: fmt.Sprintf("Simulated nodes at kubelet-defaults timing (Lease 40s renewed every 10s, status every 10s) for %s "+
			"against the embedded control plane (grace period %s, monitor period %s); one process runs the fleet, each node with its own system:node identity.",
			soak, controlplane.DefaultGracePeriod, controlplane.DefaultMonitorPeriod),
		Date: time.Now(), Machine: reports.MachineDescription(), Figures: map[string]reports.Distribution{},
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			for b.Loop() {
				figs, note := soakFleet(b, n, soak)
				for k, v := range figs {
					result.Figures[fmt.Sprintf("nodes=%05d %s", n, k)] = v
				}
				result.Notes = append(result.Notes, note)
				b.ReportMetric(figs["false-not-ready"].Max, "false-notready")
				b.ReportMetric(figs["lease-lateness"].P99, "renew-late-p99-ms")
			}
		})
	}
	if dir := os.Getenv(reports.EnvBenchDir); dir != "" {
		if err := reports.WriteBench(dir, result); err != nil {
			b.Fatal(err)
		}
	}
}

func one(unit string, v float64) reports.Distribution { return reports.Summarize(unit, []float64{v}) }

func cpuOf(b *testing.B, pid int) float64 {
	v, err := bench.CPUSeconds(pid)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

func soakFleet(b *testing.B, n int, soak time.Duration) (map[string]reports.Distribution, string) {
	cp := cptest.Start(b, controlplane.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	role, binding := fakes.FleetRBAC(fakes.FleetUser)
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	fc, err := cp.ClientCredentials(fakes.FleetUser)
	if err != nil {
		b.Fatal(err)
	}
	fleet, err := fakes.NewFleet(fakes.FleetConfig{Count: n, Client: kubernetes.NewForConfigOrDie(fc.RESTConfig),
		NodeClient: func(name string) (kubernetes.Interface, error) {
			c, err := cp.NodeCredentials(name)
			if err != nil {
				return nil, err
			}
			return kubernetes.NewForConfig(c.RESTConfig)
		}})
	if err != nil {
		b.Fatal(err)
	}
	regStart := time.Now()
	done := make(chan error, 1)
	go func() { done <- fleet.Start(ctx) }()
	if err := fleet.WaitRegistered(ctx); err != nil {
		b.Fatal(err)
	}
	registration := time.Since(regStart)

	// Count every Ready transition away from True, from the watch.
	obs, err := bench.Observe(ctx, admin, func(string) bool { return true }, fakes.TimingProfiles[nodeapi.TimingKubeletDefaults].RenewInterval)
	if err != nil {
		b.Fatal(err)
	}
	obs.Record(true)

	pids, self := cp.Pids(), os.Getpid()
	cpu0, api0, etcd0 := cpuOf(b, self), cpuOf(b, pids[controlplane.BinKubeAPIServer]), cpuOf(b, pids[controlplane.BinEtcd])
	time.Sleep(soak)
	cpu1, api1, etcd1 := cpuOf(b, self), cpuOf(b, pids[controlplane.BinKubeAPIServer]), cpuOf(b, pids[controlplane.BinEtcd])
	mem, err := bench.MemoryOf(self)
	if err != nil {
		b.Fatal(err)
	}
	rss := mem.RSS

	var late []float64
	renewals := 0
	for _, k := range fleet.Kubelets() {
		s := k.Stats()
		renewals += s.LeaseRenewals
		for _, l := range s.LateRenewals {
			late = append(late, float64(l.Milliseconds()))
		}
	}
	cancel()
	if err := <-done; err != nil {
		b.Errorf("fleet: %v", err)
	}
	fnr := obs.Figures().NotReadyTransitions
	per1k := 1000 / float64(n)
	figs := map[string]reports.Distribution{
		"false-not-ready":             one("transitions", float64(fnr)),
		"lease-lateness":              reports.Summarize("ms", late),
		"fleet-cpu-per-1000-nodes":    one("CPU s/min", (cpu1-cpu0)*per1k/soak.Minutes()),
		"fleet-rss-per-1000-nodes":    one("MiB", rss*per1k),
		"apiserver-cpu":               one("CPU s/min", (api1-api0)/soak.Minutes()),
		"etcd-cpu":                    one("CPU s/min", (etcd1-etcd0)/soak.Minutes()),
		"registration-of-all-nodes":   one("s", registration.Seconds()),
		"lease-renewals-per-node-min": one("renewals", float64(renewals)/float64(n)/soak.Minutes()),
	}
	figs["lease-lateness"] = withoutSamples(figs["lease-lateness"])
	note := fmt.Sprintf("nodes=%d: %d false NotReady/Unknown transitions; lease lateness p50 %.0f ms p99 %.0f ms over %d renewals; fleet process CPU %.2f s/min, RSS %.0f MiB; kube-apiserver %.2f CPU s/min, etcd %.2f CPU s/min.",
		n, fnr, figs["lease-lateness"].P50, figs["lease-lateness"].P99, len(late), (cpu1-cpu0)/soak.Minutes(), rss, (api1-api0)/soak.Minutes(), (etcd1-etcd0)/soak.Minutes())
	return figs, note
}

func withoutSamples(d reports.Distribution) reports.Distribution {
	d.Samples = nil
	return d
}
