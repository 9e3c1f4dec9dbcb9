package reports

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/scenarios"
	"github.com/bootproof/bootproof/scenarios/judging"
	"github.com/bootproof/bootproof/scenarios/trace"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// twoNodeCase is a realistic case on two nodes that draws every kind of
// shape the timeline knows: heartbeats, Ready True/False/Unknown, two boots
// on one node, a module lost and loaded again, loader and unloader pods, a
// failed pod, the grace window of a reboot, a kubelet restart and a network
// blip, a cluster fault and a watch gap across every lane, a planned reboot
// with its reload latency and an unplanned one.
func twoNodeCase() scenarios.CaseResult {
	const a, b, c, d = "aaaaaaaa-0001", "bbbbbbbb-0002", "cccccccc-0003", "dddddddd-0004"
	var tr []trace.Event
	add := func(e ...trace.Event) { tr = append(tr, e...) }
	for _, n := range []string{"worker-1", "worker-0"} {
		add(trace.Event{TMS: 0, Kind: trace.KindReady, Node: n, Ready: "True"})
	}
	add(
		trace.Event{TMS: 0, Kind: trace.KindAction, Detail: "NodeModulesConfigs created"},
		trace.Event{TMS: 0, Kind: trace.KindBoot, Node: "worker-0", BootID: a},
		trace.Event{TMS: 0, Kind: trace.KindBoot, Node: "worker-1", BootID: c},
		trace.Event{TMS: 0, Kind: trace.KindTruth, Node: "worker-0", BootID: a},
		trace.Event{TMS: 0, Kind: trace.KindTruth, Node: "worker-1", BootID: c},
	)
	for ms := int64(250); ms < 21000; ms += 1000 {
		if ms < 3000 || ms > 5200 {
			add(trace.Event{TMS: ms, Kind: trace.KindHeartbeat, Node: "worker-0"})
		}
		if ms < 4000 || ms > 5000 {
			add(trace.Event{TMS: ms + 130, Kind: trace.KindHeartbeat, Node: "worker-1"})
		}
	}
	add(
		trace.Event{TMS: 180, Kind: trace.KindPod, Node: "worker-0", Pod: "kmm-worker-worker-0-dummy", WorkerAction: contract.ActionLoad, Phase: trace.PhaseCreated, Detail: "Load created"},
		trace.Event{TMS: 190, Kind: trace.KindPod, Node: "worker-1", Pod: "kmm-worker-worker-1-dummy", WorkerAction: contract.ActionLoad, Phase: trace.PhaseCreated, Detail: "Load created"},
		trace.Event{TMS: 412, Kind: trace.KindLoad, Node: "worker-0", Pod: "kmm-worker-worker-0-dummy", Module: "dummy", BootID: a, WorkerAction: contract.ActionLoad, Detail: "Load"},
		trace.Event{TMS: 415, Kind: trace.KindTruth, Node: "worker-0", BootID: a, Modules: []string{"dummy"}, Detail: "dummy"},
		trace.Event{TMS: 433, Kind: trace.KindLoad, Node: "worker-1", Pod: "kmm-worker-worker-1-dummy", Module: "dummy", BootID: c, WorkerAction: contract.ActionLoad, Detail: "Load"},
		trace.Event{TMS: 436, Kind: trace.KindTruth, Node: "worker-1", BootID: c, Modules: []string{"dummy"}, Detail: "dummy"},
		trace.Event{TMS: 500, Kind: trace.KindStatus, Node: "worker-0", Module: "dummy", BootID: a, Detail: "loaded"},
		trace.Event{TMS: 3000, Kind: trace.KindAction, Node: "worker-0", Action: scenarios.ActReboot, Phase: trace.PhaseStart, DowntimeMS: 2200, Detail: "reboot (downtime 2.2s)"},
		trace.Event{TMS: 3000, Kind: trace.KindTruth, Node: "worker-0", BootID: a},
		trace.Event{TMS: 4000, Kind: trace.KindAction, Node: "worker-1", Action: scenarios.ActRestartKubelet, Phase: trace.PhaseStart, DowntimeMS: 1000, Detail: "restart-kubelet (downtime 1s)"},
		trace.Event{TMS: 5000, Kind: trace.KindAction, Node: "worker-1", Action: scenarios.ActRestartKubelet, Phase: trace.PhaseDone, Detail: "restart-kubelet done"},
		trace.Event{TMS: 5200, Kind: trace.KindBoot, Node: "worker-0", BootID: b},
		trace.Event{TMS: 5200, Kind: trace.KindAction, Node: "worker-0", Action: scenarios.ActReboot, Phase: trace.PhaseDone, Detail: "reboot done"},
		trace.Event{TMS: 5200, Kind: trace.KindReady, Node: "worker-0", Ready: "False"},
		trace.Event{TMS: 5210, Kind: trace.KindTruth, Node: "worker-0", BootID: b},
		trace.Event{TMS: 5340, Kind: trace.KindPod, Node: "worker-0", Pod: "kmm-worker-worker-0-dummy", WorkerAction: contract.ActionLoad, Phase: trace.PhaseCreated, Detail: "Load created"},
		trace.Event{TMS: 5600, Kind: trace.KindPod, Node: "worker-0", Pod: "kmm-worker-worker-0-dummy", WorkerAction: contract.ActionLoad, Phase: trace.PhaseFailed, Detail: "Load Failed"},
		trace.Event{TMS: 5700, Kind: trace.KindReady, Node: "worker-0", Ready: "True"},
		trace.Event{TMS: 5900, Kind: trace.KindPod, Node: "worker-0", Pod: "kmm-worker-worker-0-dummy", WorkerAction: contract.ActionLoad, Phase: trace.PhaseCreated, Detail: "Load created"},
		trace.Event{TMS: 6150, Kind: trace.KindLoad, Node: "worker-0", Pod: "kmm-worker-worker-0-dummy", Module: "dummy", BootID: b, WorkerAction: contract.ActionLoad, Detail: "Load"},
		trace.Event{TMS: 6160, Kind: trace.KindTruth, Node: "worker-0", BootID: b, Modules: []string{"dummy"}, Detail: "dummy"},
		trace.Event{TMS: 9000, Kind: trace.KindAction, Node: "worker-1", Action: scenarios.ActNetworkBlip, Phase: trace.PhaseStart, DowntimeMS: 500, Detail: "network-blip (downtime 500ms)"},
		trace.Event{TMS: 9500, Kind: trace.KindAction, Node: "worker-1", Action: scenarios.ActRemoveModule, Detail: "remove-module dummy"},
		trace.Event{TMS: 10000, Kind: trace.KindCluster, Detail: "kube-apiserver down"},
		trace.Event{TMS: 10800, Kind: trace.KindCluster, Detail: "kube-apiserver back"},
		trace.Event{TMS: 11000, Kind: trace.KindWatch, Detail: "pods watch failed; relisted"},
		trace.Event{TMS: 12000, Kind: trace.KindPod, Node: "worker-1", Pod: "kmm-worker-worker-1-dummy", WorkerAction: contract.ActionUnload, Phase: trace.PhaseCreated, Detail: "Unload created"},
		trace.Event{TMS: 12300, Kind: trace.KindLoad, Node: "worker-1", Pod: "kmm-worker-worker-1-dummy", Module: "dummy", BootID: c, WorkerAction: contract.ActionUnload, Detail: "Unload"},
		trace.Event{TMS: 12310, Kind: trace.KindTruth, Node: "worker-1", BootID: c},
		trace.Event{TMS: 15000, Kind: trace.KindReady, Node: "worker-1", Ready: "Unknown"},
		trace.Event{TMS: 15500, Kind: trace.KindBoot, Node: "worker-1", BootID: d},
		trace.Event{TMS: 15500, Kind: trace.KindTruth, Node: "worker-1", BootID: d},
		trace.Event{TMS: 16000, Kind: trace.KindReady, Node: "worker-1", Ready: "True"},
	)
	return scenarios.CaseResult{
		Scenario: "fast-reboot-0.3g", Description: "A hard reset shorter than the grace period; the node never shows NotReady.",
		Labels: []string{"fast"}, Subject: "bootid", Cluster: "embedded", Nodes: "fake", NodeCount: 2,
		Expected: "pass", Observed: "fail", Verdict: "fail", Message: "consistency: worker-1 rebooted without an action <unplanned>",
		Notes:      []string{"ran alone: it pauses the subject"},
		DurationMS: 21000, GracePeriodMS: 8000,
		Assertions: []scenarios.AssertionResult{{Name: "precondition", OK: true}, {Name: "reload", OK: true},
			{Name: "no-extra-work", OK: true}, {Name: "consistency", OK: false, Message: "worker-1: boot dddddddd not expected"}},
		Reboots: []scenarios.RebootMetric{
			{Node: "worker-0", OldBootID: a, NewBootID: b, Planned: true, DowntimeMS: 2200, NotReadySeen: false,
				DetectionLatencyMS: 140, ReloadLatencyMS: 960, StartMS: 3000, BootVisibleMS: 5200},
			{Node: "worker-1", OldBootID: c, NewBootID: d, Planned: false, DowntimeMS: -1, NotReadySeen: true,
				DetectionLatencyMS: -1, ReloadLatencyMS: -1, StartMS: 15500, BootVisibleMS: 15500},
		},
		Trace: tr,
	}
}

// manyNodeCase has more nodes than the timeline shows, and a reboot whose
// grace window runs past the end of the case.
func manyNodeCase() scenarios.CaseResult {
	var tr []trace.Event
	for i := 9; i >= 0; i-- {
		n := fmt.Sprintf("node-%02d", i)
		boot := fmt.Sprintf("%08x-boot", i)
		tr = append(tr,
			trace.Event{TMS: int64(i), Kind: trace.KindReady, Node: n, Ready: "True"},
			trace.Event{TMS: int64(i), Kind: trace.KindBoot, Node: n, BootID: boot},
			trace.Event{TMS: 100 + int64(i), Kind: trace.KindHeartbeat, Node: n},
			trace.Event{TMS: 200 + int64(i)*10, Kind: trace.KindTruth, Node: n, BootID: boot, Modules: []string{"dummy"}, Detail: "dummy"},
		)
	}
	tr = append(tr, trace.Event{TMS: 700, Kind: trace.KindAction, Node: "node-03", Action: scenarios.ActReboot, Phase: trace.PhaseStart, DowntimeMS: 300, Detail: "reboot (downtime 300ms)"})
	// Every node rebooted and none loaded dummy again: the message names
	// the first few, the details all ten.
	var details []scenarios.Detail
	for i := 9; i >= 0; i-- {
		details = append(details, scenarios.Detail{Node: fmt.Sprintf("node-%02d", i), Evidence: fmt.Sprintf("module dummy not loaded in boot %08x (last state: Ready=True)", i+16)})
	}
	msg := judging.Summarize("10 module(s) not reloaded within 5s (the reload bound) in actions[2] wait-reloaded (line 12)", details)
	return scenarios.CaseResult{
		Scenario: "fleet-reboot", Subject: "legacy", Cluster: "kind", Nodes: "fake", NodeCount: 10,
		Expected: "fail", ExpectedAssertions: []string{"reload"}, Observed: "fail", Verdict: "pass",
		DurationMS: 1500, GracePeriodMS: 40000,
		Message:    "failed as expected (reload: " + msg + ")",
		Assertions: []scenarios.AssertionResult{{Name: "reload", OK: false, Message: msg, Details: details}},
		Trace:      tr,
	}
}

func goldenResults() scenarios.Results {
	r := sample()
	r.Cases = append(r.Cases, twoNodeCase(), manyNodeCase())
	return r
}

// checkGolden compares got with testdata/name (go test -update rewrites it).
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("output differs from %s (run go test -update to accept it)", golden)
	}
}

// TestHTMLGolden renders index.html for fixed results and a fixed time and
// compares it byte for byte with testdata/index.html.golden.
func TestHTMLGolden(t *testing.T) {
	html, err := RenderHTML(goldenResults(), time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "index.html.golden", html)
}

// TestTimelineGolden lays out every case's timeline and compares the shapes,
// with full float precision, with testdata/timelines.json.golden.
func TestTimelineGolden(t *testing.T) {
	var tls []Picture
	for _, c := range goldenResults().Cases {
		tls = append(tls, BuildTimeline(c))
	}
	got, err := json.MarshalIndent(tls, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "timelines.json.golden", append(got, '\n'))
}
