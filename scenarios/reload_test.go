package scenarios

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/nodeapi"
)

func TestReloadBoundResolve(t *testing.T) {
	grace := 10 * time.Second
	for _, tc := range []struct {
		name               string
		b                  ReloadBound
		firstLoad, timeout time.Duration
		want               time.Duration
	}{
		{"not measured yet: the full timeout", ReloadBound{}, 0, 30 * time.Second, 30 * time.Second},
		{"fast first load: the floor", ReloadBound{}, 200 * time.Millisecond, 30 * time.Second, DefaultReloadAtLeast},
		{"ten times the first load", ReloadBound{}, 1200 * time.Millisecond, 30 * time.Second, 12 * time.Second},
		{"never past the wait's timeout", ReloadBound{}, 4 * time.Second, 30 * time.Second, 30 * time.Second},
		{"a timeout under the floor stays", ReloadBound{}, 100 * time.Millisecond, 3 * time.Second, 3 * time.Second},
		{"the scenario's own factor", ReloadBound{FirstLoadTimes: 3}, 2 * time.Second, 30 * time.Second, 6 * time.Second},
		{"the scenario's own floor, in g", ReloadBound{AtLeast: Duration{Grace: 0.2, Set: true}}, 10 * time.Millisecond, 30 * time.Second, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.b.Resolve(tc.firstLoad, tc.timeout, grace); got != tc.want {
				t.Errorf("Resolve(%s, %s) = %s, want %s", tc.firstLoad, tc.timeout, got, tc.want)
			}
		})
	}
	if got, want := (ReloadBound{}).String(), "10 x the slowest load measured, at least 5s"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

// A node rebooted from a to b at 10-12s; its Node shows b from 12.5s.
func reloadRecord(truths ...TruthSeen) Record {
	return Record{Nodes: map[string]NodeRecord{"n0": {
		BootSeen:      map[string]time.Time{"a": at(1), "b": at(12.5)},
		TruthBootSeen: map[string]time.Time{"a": at(1), "b": at(12)},
		Truths:        truths,
	}}}
}

func reloadFacts(waits ...caseWait) caseFacts {
	return caseFacts{names: []string{"n0"}, start: t0, baseAt: at(2), grace: 10 * time.Second, subjectAt: at(2), firstLoad: 500 * time.Millisecond,
		baseBoot: map[string]string{"n0": "a"},
		spec:     map[string][]Module{"n0": {{Name: "dummy", ModuleName: "dummy"}}},
		disrupted: []disruption{{kind: "reboot", node: "n0", start: at(10), end: at(12), completed: true,
			outcome: nodeapi.RebootOutcome{OldBootID: "a", NewBootID: "b"}}},
		waits: waits}
}

func reloadWait(start, timeout, end float64) caseWait {
	return caseWait{kind: waitReload, what: "wait-reloaded at line 9", nodes: []string{"n0"},
		spec: map[string][]Module{"n0": {{Name: "dummy", ModuleName: "dummy"}}}, start: at(start),
		timeout: time.Duration(timeout * float64(time.Second)), end: at(end), why: "the reload bound: 10 x the slowest load measured, at least 5s; the first load took 0.50s",
		last: map[string]string{"n0": "Ready=True boot=b"}}
}

// Reload is judged from the Record alone: loaded in the boot the node
// had to be in, with the Node showing it, at some moment of the wait's
// window.
func TestJudgeWait(t *testing.T) {
	first := TruthSeen{At: at(1), BootID: "a"}
	loadedA := TruthSeen{At: at(2.5), BootID: "a", Modules: []string{"dummy"}}
	newBoot := TruthSeen{At: at(12), BootID: "b"}
	for _, tc := range []struct {
		name   string
		truths []TruthSeen
		wait   caseWait
		held   bool
		loaded time.Time
	}{
		{"reloaded inside the window", []TruthSeen{first, loadedA, newBoot, {At: at(13.25), BootID: "b", Modules: []string{"dummy"}}},
			reloadWait(12, 5, 13.3), true, at(13.25)},
		{"loaded in the kernel before the Node shows the boot: from when it does", []TruthSeen{first, loadedA, {At: at(12.2), BootID: "b", Modules: []string{"dummy"}}},
			reloadWait(12, 5, 12.6), true, at(12.5)},
		{"loaded after the window", []TruthSeen{first, loadedA, newBoot, {At: at(17.5), BootID: "b", Modules: []string{"dummy"}}},
			reloadWait(12, 5, 17.2), false, time.Time{}},
		{"never reloaded: the old boot's load does not count", []TruthSeen{first, loadedA, newBoot},
			reloadWait(12, 5, 17.2), false, time.Time{}},
		{"loaded, then gone before the window", []TruthSeen{first, loadedA, newBoot, {At: at(13), BootID: "b", Modules: []string{"dummy"}}, {At: at(14), BootID: "b"}},
			reloadWait(15, 5, 20.1), false, time.Time{}},
		{"loaded before the window and still loaded", []TruthSeen{first, loadedA, newBoot, {At: at(13), BootID: "b", Modules: []string{"dummy"}}},
			reloadWait(15, 5, 15.1), true, at(13)},
		{"the first load, in the base boot", []TruthSeen{first, loadedA},
			reloadWait(2, 30, 2.6), true, at(2.5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := reloadFacts()
			if tc.wait.start.Before(at(12)) {
				f.disrupted = nil // before the reboot
			}
			jr := judgeWait(f, reloadRecord(tc.truths...), tc.wait)
			if jr.held != tc.held || len(jr.nodes) != 1 || !jr.nodes[0].loaded.Equal(tc.loaded) {
				t.Errorf("judgeWait = %+v, want held=%v loaded at %v", jr, tc.held, tc.loaded)
			}
			if !tc.held && (len(jr.nodes[0].missing) != 1 || jr.nodes[0].boot != "b") {
				t.Errorf("missing %v in boot %q, want dummy in b", jr.nodes[0].missing, jr.nodes[0].boot)
			}
		})
	}
}

// A wait is judged against the boot the node had to be in when it
// stopped: a reboot that came later does not move it.
func TestJudgeWaitKeepsItsBoot(t *testing.T) {
	f := reloadFacts()
	f.disrupted = append(f.disrupted, disruption{kind: "reboot", node: "n0", start: at(15), end: at(16), completed: true,
		outcome: nodeapi.RebootOutcome{OldBootID: "b", NewBootID: "c"}})
	r := reloadRecord(TruthSeen{At: at(1), BootID: "a"}, TruthSeen{At: at(12), BootID: "b"},
		TruthSeen{At: at(13), BootID: "b", Modules: []string{"dummy"}}, TruthSeen{At: at(16), BootID: "c"})
	r.Nodes["n0"].BootSeen["c"] = at(16.2)
	jr := judgeWait(f, r, reloadWait(12, 30, 13.1))
	if !jr.held || jr.nodes[0].boot != "b" {
		t.Errorf("judgeWait = %+v, want held in boot b", jr)
	}
}

func TestJudgeWorkerWait(t *testing.T) {
	w := caseWait{kind: waitWorker, what: "wait-worker at line 7", nodes: []string{"n0"}, worker: Action{WorkerAction: "Load", State: "running"},
		start: at(2), timeout: 5 * time.Second, end: at(7.1)}
	for _, tc := range []struct {
		name string
		pods []podObs
		held bool
	}{
		{"running in time", []podObs{{node: "n0", action: "Load", created: at(3), runningAt: at(4)}}, true},
		{"already done counts as running", []podObs{{node: "n0", action: "Load", created: at(3), succeededAt: at(3.5)}}, true},
		{"running too late", []podObs{{node: "n0", action: "Load", created: at(3), runningAt: at(7.5)}}, false},
		{"another action", []podObs{{node: "n0", action: "Unload", created: at(3), runningAt: at(4)}}, false},
		{"another node", []podObs{{node: "n1", action: "Load", created: at(3), runningAt: at(4)}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if jr := judgeWait(caseFacts{}, Record{Pods: tc.pods}, w); jr.held != tc.held {
				t.Errorf("held = %v, want %v (%s)", jr.held, tc.held, jr.why)
			}
		})
	}
}

// The reload assertion is recorded whether it holds or not: holding, it
// gives the first load and each node's reload latency; failing, the
// first wait that did not hold, its bound and the node's last state.
func TestJudgeReload(t *testing.T) {
	truths := []TruthSeen{{At: at(1), BootID: "a"}, {At: at(2.5), BootID: "a", Modules: []string{"dummy"}}, {At: at(12), BootID: "b"},
		{At: at(13.25), BootID: "b", Modules: []string{"dummy"}}}
	firstWait := reloadWait(2, 30, 2.6)
	ok := judgeReload(reloadFacts(firstWait, reloadWait(12, 5, 13.3)), reloadRecord(truths...))
	if !ok.OK || ok.Name != AssertReload {
		t.Fatalf("reload = %+v, want it to hold", ok)
	}
	// The wait before the reboot is the initial load's, not reload's.
	for _, want := range []string{"in 1 wait(s) after a disruption", "first load 500 ms", "1 reload(s)", "n0 750 ms"} {
		if !strings.Contains(ok.Message, want) {
			t.Errorf("message %q lacks %q", ok.Message, want)
		}
	}
	if len(ok.Reloads) != 1 || ok.Reloads[0] != (ReloadLatency{Node: "n0", BootID: "b", LatencyMS: 750, WaitMS: 5000}) {
		t.Errorf("reloads %+v, want n0 in b after 750ms, in a wait of 5s", ok.Reloads)
	}

	failed := judgeReload(reloadFacts(firstWait, reloadWait(12, 5, 17.2)), reloadRecord(truths[:3]...))
	wantFail(t, failed, "1 module(s) not reloaded within 5s (the reload bound: 10 x the slowest load measured, at least 5s; the first load took 0.50s) in wait-reloaded at line 9: "+
		"module dummy not loaded in boot b of node n0 (last state: Ready=True boot=b)")

	noReboot := judgeReload(reloadFacts(firstWait), reloadRecord(truths[:2]...))
	if !noReboot.OK || !strings.Contains(noReboot.Message, "no reboot to reload after") {
		t.Errorf("no reboot: %+v", noReboot)
	}
}

// The waits before a case's first disruption are the initial load's, the
// worker waits the worker assertion's, and neither is judged by reload.
func TestJudgeInitialLoadAndWorkerWaits(t *testing.T) {
	truths := []TruthSeen{{At: at(1), BootID: "a"}, {At: at(2.5), BootID: "a", Modules: []string{"dummy"}}, {At: at(12), BootID: "b"},
		{At: at(13.25), BootID: "b", Modules: []string{"dummy"}}}
	worker := caseWait{kind: waitWorker, what: "wait-worker at line 3", nodes: []string{"n0"}, worker: Action{WorkerAction: "Load", State: "running"},
		start: at(2), timeout: 5 * time.Second, end: at(7.1)}
	f := reloadFacts(reloadWait(2, 30, 2.6), worker, reloadWait(12, 5, 13.3))
	if !f.initialWait(f.waits[0]) || f.initialWait(f.waits[1]) || f.initialWait(f.waits[2]) {
		t.Errorf("initial waits: %v %v %v, want only the first", f.initialWait(f.waits[0]), f.initialWait(f.waits[1]), f.initialWait(f.waits[2]))
	}
	r := reloadRecord(truths...)
	r.Pods = []podObs{{node: "n0", action: "Load", created: at(2.1), runningAt: at(2.2)}}
	if a := judgeInitialLoad(f, r); !a.OK || !strings.Contains(a.Message, "in 1 wait(s) before the first disruption; first load 500 ms") {
		t.Errorf("initial-load %+v", a)
	}
	if a := judgeWorkerWaits(f, r); !a.OK || a.Message != "1 worker wait(s) held" {
		t.Errorf("worker %+v", a)
	}

	// Never loaded: the initial load fails, the reload too, separately.
	never := reloadRecord(truths[0], truths[2])
	never.Pods = r.Pods
	if a := judgeInitialLoad(f, never); a.OK || !strings.Contains(a.Message, "module dummy not loaded in boot a of node n0") {
		t.Errorf("initial-load of a subject that never loads: %+v", a)
	}
	if a := judgeReload(f, never); a.OK || !strings.Contains(a.Message, "module dummy not loaded in boot b of node n0") {
		t.Errorf("reload of a subject that never loads: %+v", a)
	}

	// No worker pod: the worker assertion fails, not reload.
	noPod := reloadRecord(truths...)
	if a := judgeWorkerWaits(f, noPod); a.OK || !strings.Contains(a.Message, "no Load worker pod running on node n0") {
		t.Errorf("worker without a pod: %+v", a)
	}
	if a := judgeReload(f, noPod); !a.OK {
		t.Errorf("reload judged a worker wait: %+v", a)
	}
	if a := judgeWorkerWaits(reloadFacts(), noPod); !a.OK || a.Message != "no worker wait in the timeline" {
		t.Errorf("worker with no wait: %+v", a)
	}
}

// TestBootsNotVisible: a reload wait's window waits for the new boot of
// each node's last completed reboot to show in its Node status; nodes
// without a completed reboot, or whose new boot shows, hold nothing back.
func TestBootsNotVisible(t *testing.T) {
	t0 := time.Unix(1000, 0)
	reboot := func(node, newBoot string, completed bool) disruption {
		return disruption{kind: "reboot", node: node, completed: completed, outcome: nodeapi.RebootOutcome{OldBootID: "a", NewBootID: newBoot}}
	}
	r := Record{Nodes: map[string]NodeRecord{
		"n1": {BootSeen: map[string]time.Time{"a": t0, "b": t0.Add(time.Second)}},
		"n2": {BootSeen: map[string]time.Time{"a": t0}},
	}}
	for _, tc := range []struct {
		name      string
		disrupted []disruption
		want      []string
	}{
		{"no reboot", nil, nil},
		{"new boot shown", []disruption{reboot("n1", "b", true)}, nil},
		{"new boot not shown yet", []disruption{reboot("n2", "b", true)}, []string{"n2"}},
		{"a reboot still running is not waited for", []disruption{reboot("n2", "b", false)}, nil},
		{"the last reboot counts", []disruption{reboot("n1", "b", true), reboot("n1", "c", true)}, []string{"n1"}},
		{"a kubelet restart is no reboot", []disruption{{kind: "restart-kubelet", node: "n2", completed: true}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := bootsNotVisible(caseFacts{disrupted: tc.disrupted}, r, []string{"n1", "n2"})
			if !slices.Equal(got, tc.want) {
				t.Errorf("bootsNotVisible = %v, want %v", got, tc.want)
			}
		})
	}
}
