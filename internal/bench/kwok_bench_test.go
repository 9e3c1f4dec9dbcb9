package bench_test

import (
	"context"
	_ "embed"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/reports"
)

// KWOK's stages, copied from sigs.k8s.io/kwok@v0.8.0 (testdata/kwok/ORIGIN.md).
var (
	//go:embed testdata/kwok/node-initialize.yaml
	kwokNodeInitialize []byte
	//go:embed testdata/kwok/node-heartbeat-with-lease.yaml
	kwokNodeHeartbeatWithLease []byte
)

const (
	kwokPrefix = "kwok-node-"
	// kwokLabel marks the Nodes KWOK manages (--manage-nodes-with-label-selector).
	kwokLabel = "bootproof.dev/bench-fleet"
)

func kwokSide() fleetSide {
	return fleetSide{name: "kwok", binary: "kwok", prefix: kwokPrefix, start: startKWOK}
}

// startKWOK creates the N Nodes KWOK is to manage, as KWOK users do, writes
// its configuration (the two stages) and starts it with the fleet's lease
// duration and log level ERROR. HOME is the run directory, so no
// ~/.kwok/kwok.yaml of this machine is read.
func startKWOK(b *testing.B, ctx context.Context, cp *controlplane.ControlPlane, c fleetBenchConfig, dir string) *exec.Cmd {
	rc := cp.RESTConfig()
	rc.QPS, rc.Burst = 500, 1000
	createKWOKNodes(b, ctx, kubernetes.NewForConfigOrDie(rc), c.nodes)
	conf := filepath.Join(dir, "kwok.yaml")
	data := append(append(append([]byte(nil), kwokNodeInitialize...), "\n---\n"...), kwokNodeHeartbeatWithLease...)
	if err := os.WriteFile(conf, data, 0o644); err != nil {
		b.Fatal(err)
	}
	lease := strconv.Itoa(int(c.timing.LeaseDuration / time.Second))
	return startLogged(b, c, "kwok", "kwok", dir, []string{"HOME=" + dir},
		"--kubeconfig", cp.Kubeconfig(), "--config", conf,
		"--manage-nodes-with-label-selector", kwokLabel+"=kwok",
		"--node-lease-duration-seconds", lease, "-v", "ERROR")
}

// kwokNode is a Node as KWOK's documentation creates one: tainted so
// nothing real lands on it, with capacity, and no conditions (KWOK's
// node-initialize stage makes it Ready).
func kwokNode(i int) *corev1.Node {
	name := fmt.Sprintf("%s%04d", kwokPrefix, i)
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{kwokLabel: "kwok", "type": "kwok", corev1.LabelHostname: name,
				corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res, Phase: corev1.NodeRunning,
			NodeInfo: corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux", KubeletVersion: "fake"}},
	}
}

func createKWOKNodes(b *testing.B, ctx context.Context, client kubernetes.Interface, n int) {
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				if _, err := client.CoreV1().Nodes().Create(ctx, kwokNode(i), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatalf("create KWOK's Nodes: %v", err)
	}
}

// fleetResult is the side-by-side report.
func fleetResult(c fleetBenchConfig, sides []fleetSide, f [2]fleetFigures) reports.BenchResult {
	r := reports.BenchResult{
		Name: "fleet-vs-kwok",
		Description: fmt.Sprintf("bootproof's simulated fleet ('bootproof nodes run --timing kubelet-defaults': Lease %s renewed every %s, status computed every %s and posted on change or every %s) "+
			"and KWOK v0.8.0 (stages node-initialize and node-heartbeat-with-lease, --node-lease-duration-seconds %d so renewals every %s, log level ERROR), "+
			"%d nodes each, one after the other (%s first), each fleet its own process with the plane's admin kubeconfig, each on a fresh embedded control plane of the same build and settings "+
			"(grace period %s, monitor period %s). Per side: all Nodes Ready, %s settling, then a %s window in which the fleet's CPU (utime+stime), "+
			"the plane's CPU, Node updates with Ready not True and Lease renewals (renewTime gap minus %s) are counted from the API; RSS (VmRSS, VmHWM) at the window's end.",
			c.timing.LeaseDuration, c.timing.RenewInterval, c.timing.StatusInterval, c.timing.ReportInterval,
			int(c.timing.LeaseDuration/time.Second), c.timing.RenewInterval, c.nodes, first(sides),
			controlplane.DefaultGracePeriod, controlplane.DefaultMonitorPeriod, c.settle, c.window, c.timing.RenewInterval),
		Date: time.Now(), Machine: reports.MachineDescription(), Figures: map[string]reports.Distribution{},
	}
	one := func(unit string, v float64) reports.Distribution { return reports.Summarize(unit, []float64{v}) }
	for i, s := range sides {
		x := f[i]
		late := reports.Summarize("ms", x.observed.LatenessMs)
		late.Samples = nil
		for k, v := range map[string]reports.Distribution{
			"fleet-cpu": one("CPU s/min", x.cpu), "fleet-rss": one("MiB", x.mem.RSS), "fleet-rss-peak": one("MiB", x.mem.Peak),
			"fleet-rss-per-node": one("KiB", x.mem.RSS*1024/float64(c.nodes)), "plane-cpu": one("CPU s/min", x.planeTotal()),
			"apiserver-cpu": one("CPU s/min", x.plane[controlplane.BinKubeAPIServer]), "etcd-cpu": one("CPU s/min", x.plane[controlplane.BinEtcd]),
			"controller-manager-cpu": one("CPU s/min", x.plane[controlplane.BinKubeControllerManager]),
			"false-not-ready":        one("Node updates", float64(x.observed.NotReadyObservations)),
			"not-ready-transitions":  one("transitions", float64(x.observed.NotReadyTransitions)),
			"lease-renewals":         one("renewals", float64(x.observed.Renewals)), "lease-lateness": late,
			"all-ready-after-start": one("s", x.registration.Seconds()),
		} {
			r.Figures[s.name+" "+k] = v
		}
		r.Notes = append(r.Notes, x.note)
	}
	r.Comparison = fleetComparison(c, sides, f)
	for _, row := range r.Comparison.Rows {
		if row.Ratio != nil {
			r.Figures["ratio "+sides[0].name+"/"+sides[1].name+" "+row.Figure] = one("ratio", *row.Ratio)
		}
	}
	return r
}

func first(sides []fleetSide) string {
	if os.Getenv(envFleetKWOKFirst) == "1" {
		return sides[1].name
	}
	return sides[0].name
}

func fleetComparison(c fleetBenchConfig, sides []fleetSide, f [2]fleetFigures) *reports.BenchComparison {
	a, k := f[0], f[1]
	la, lk := reports.Summarize("ms", a.observed.LatenessMs), reports.Summarize("ms", k.observed.LatenessMs)
	perNode := func(x fleetFigures) float64 { return x.mem.RSS * 1024 / float64(c.nodes) }
	cmp := &reports.BenchComparison{Sides: [2]string{sides[0].name, sides[1].name}, Rows: []reports.ComparisonRow{
		reports.RatioRow("fleet CPU", "CPU s/min", a.cpu, k.cpu),
		reports.RatioRow("fleet RSS (VmRSS)", "MiB", a.mem.RSS, k.mem.RSS),
		reports.RatioRow("fleet RSS peak (VmHWM)", "MiB", a.mem.Peak, k.mem.Peak),
		reports.RatioRow("fleet RSS per node", "KiB", perNode(a), perNode(k)),
		reports.RatioRow("control-plane CPU", "CPU s/min", a.planeTotal(), k.planeTotal()),
		reports.RatioRow("kube-apiserver CPU", "CPU s/min", a.plane[controlplane.BinKubeAPIServer], k.plane[controlplane.BinKubeAPIServer]),
		reports.RatioRow("etcd CPU", "CPU s/min", a.plane[controlplane.BinEtcd], k.plane[controlplane.BinEtcd]),
		reports.RatioRow("kube-controller-manager CPU", "CPU s/min", a.plane[controlplane.BinKubeControllerManager], k.plane[controlplane.BinKubeControllerManager]),
		reports.Row("false NotReady (Node updates with Ready not True)", "count", float64(a.observed.NotReadyObservations), float64(k.observed.NotReadyObservations)),
		reports.Row("Ready True -> not True transitions", "count", float64(a.observed.NotReadyTransitions), float64(k.observed.NotReadyTransitions)),
		reports.Row("lease renewals in the window", "count", float64(a.observed.Renewals), float64(k.observed.Renewals)),
		reports.Row("lease-renewal lateness p50", "ms", la.P50, lk.P50),
		reports.Row("lease-renewal lateness p99", "ms", la.P99, lk.P99),
		reports.Row("all nodes Ready after process start", "s", a.registration.Seconds(), k.registration.Seconds()),
	}}
	cmp.Rows = append(cmp.Rows, requestRows(c.window, a.latency.requests, k.latency.requests)...)
	return cmp
}

// requestRows compares the API requests each side's plane served in the
// window (apiserver_request_total), per second, by verb and resource:
// where the plane's CPU differs, these say which requests differ. Rates
// under 0.1/s on both sides are left out.
func requestRows(window time.Duration, a, k map[string]float64) []reports.ComparisonRow {
	keys := slices.Collect(maps.Keys(a))
	for key := range k {
		if _, ok := a[key]; !ok {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	var rows []reports.ComparisonRow
	sec := window.Seconds()
	for _, key := range keys {
		ra, rk := a[key]/sec, k[key]/sec
		if ra < 0.1 && rk < 0.1 {
			continue
		}
		rows = append(rows, reports.Row("API requests: "+key, "per s", ra, rk))
	}
	return rows
}
