package judging

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/nodeapi"
)

// The assertions are pure functions of Facts and a Record: these
// tests build both by hand, with no observer, informer or lock.

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func every(from, to, step float64) []time.Time {
	var out []time.Time
	for s := from; s <= to; s += step {
		out = append(out, at(s))
	}
	return out
}

func TestJudgePrecondition(t *testing.T) {
	reboot := Disruption{Kind: "reboot", Reboot: true, Node: "n0", Start: at(10), End: at(12), Downtime: 2 * time.Second, Completed: true}
	cases := []struct {
		name   string
		claim  Precondition
		node   NodeRecord
		ok     bool
		saying string
	}{
		{"fast, NotReady after the baseline", "fast", NodeRecord{NotReadyAt: []time.Time{at(11)}, RenewSeen: every(5, 60, 2)}, false, "node n0 showed Ready!=True at 11.0s"},
		{"fast, NotReady only before the baseline", "fast", NodeRecord{NotReadyAt: []time.Time{at(1)}, RenewSeen: every(5, 60, 2)}, true, "every node's Lease was renewed"},
		{"fast, renewals pause longer than grace", "fast", NodeRecord{RenewSeen: append(every(5, 20, 2), every(40, 60, 2)...)}, false, "no renewal of its Lease was seen for 21.0s from 19.0s"},
		{"fast, no renewal at all", "fast", NodeRecord{}, false, "no renewal of its Lease was seen for 55.0s from 5.0s"},
		{"slow, NotReady during the reboot", "slow", NodeRecord{NotReadyAt: []time.Time{at(11)}}, true, "NotReady seen for every disruption"},
		{"slow, NotReady just after the end counts", "slow", NodeRecord{NotReadyAt: []time.Time{at(13.5)}}, true, "NotReady seen"},
		{"slow, NotReady too late", "slow", NodeRecord{NotReadyAt: []time.Time{at(15)}}, false, "node n0 stayed Ready through its reboot of 2s"},
		{"slow, NotReady before the reboot", "slow", NodeRecord{NotReadyAt: []time.Time{at(9)}}, false, "stayed Ready"},
		{"recorded", "", NodeRecord{NotReadyAt: []time.Time{at(11)}}, true, "recorded, not required: n0 reboot 2s: NotReady seen true"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := Facts{Claim: tc.claim, Names: []string{"n0"}, Start: t0, BaseAt: at(5), Now: at(60), Grace: 10 * time.Second,
				Disrupted: []Disruption{reboot}}
			got := JudgePrecondition(f, Record{Nodes: map[string]NodeRecord{"n0": tc.node}})
			if got.Name != AssertPrecondition || got.OK != tc.ok || !strings.Contains(got.Message, tc.saying) {
				t.Errorf("got %+v, want ok=%v saying %q", got, tc.ok, tc.saying)
			}
		})
	}
}

func TestJudgeExtraWork(t *testing.T) {
	l := func(node, mod, action, boot string) Load {
		return Load{Node: node, ModuleName: mod, Action: action, Boot: boot}
	}
	truth := func(node, boot, mod string, loads, unloads int) map[string]NodeRecord {
		return map[string]NodeRecord{node: {TruthActions: map[string]map[string]ActionCount{boot: {mod: {Loads: loads, Unloads: unloads}}}}}
	}
	cases := []struct {
		name   string
		loads  []Load
		nodes  map[string]NodeRecord
		ok     bool
		saying string
	}{
		{"none", nil, nil, true, "0 loads"},
		// The kernel's count is the ground truth: an extra load made by a
		// pod the observer never saw (another pod of the same name, or no
		// worker pod at all) is still one.
		{"kernel counts a load no pod explains", []Load{l("n0", "m", "Load", "a")}, truth("n0", "a", "m", 2, 0), false,
			"a load without a boot change on node n0: module m loaded 2 times in boot a (0 unloads; the kernel counted 2 loads, worker pods 1)"},
		{"kernel counts a load, no pod seen", nil, truth("n0", "a", "m", 2, 0), false, "the kernel counted 2 loads, worker pods 0"},
		{"kernel agrees", []Load{l("n0", "m", "Load", "a")}, truth("n0", "a", "m", 1, 0), true, "1 loads, none repeated within a boot (from the kernels' counts"},
		{"kernel: reload after an unload", nil, truth("n0", "a", "m", 2, 1), true, "2 loads, none repeated"},
		{"pods count more than a kernel that lags", []Load{l("n0", "m", "Load", "a"), l("n0", "m", "Load", "a")}, truth("n0", "a", "m", 1, 0), false, "worker pods 2"},
		{"one per boot", []Load{l("n0", "m", "Load", "a"), l("n0", "m", "Load", "b"), l("n1", "m", "Load", "a")}, nil, true, "3 loads, none repeated"},
		{"reload after an unload", []Load{l("n0", "m", "Load", "a"), l("n0", "m", "Unload", "a"), l("n0", "m", "Load", "a")}, nil, true, "none repeated"},
		{"twice in one boot", []Load{l("n0", "m", "Load", "a"), l("n0", "m", "Load", "a")}, nil, false, "a load without a boot change on node n0: module m loaded 2 times in boot a (0 unloads; the kernel counted 0 loads, worker pods 2)"},
		{"two modules, each its own count", []Load{l("n0", "m", "Load", "a"), l("n0", "k", "Load", "a")}, nil, true, "2 loads"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := JudgeExtraWork(Record{Loads: tc.loads, Nodes: tc.nodes})
			if got.Name != AssertNoExtraWork || got.OK != tc.ok || !strings.Contains(got.Message, tc.saying) {
				t.Errorf("got %+v, want ok=%v saying %q", got, tc.ok, tc.saying)
			}
		})
	}
}

func TestInconsistencies(t *testing.T) {
	dummy := Module{Name: "dummy", ModuleName: "dummy"}
	other := Module{Name: "other", ModuleName: "other"}
	entry := func(name, boot string) StatusEntry { return StatusEntry{Name: name, ModuleName: name, BootID: boot} }
	cases := []struct {
		name     string
		sn       NodeState
		spec     []Module
		bootOK   bool
		want     []Detail
		declared []Module
	}{
		{"consistent", NodeState{TruthBoot: "b", TruthModules: []string{"dummy"}, Status: []StatusEntry{entry("dummy", "b")}}, []Module{dummy}, true, nil, nil},
		{"stale boot", NodeState{TruthBoot: "b", TruthModules: []string{"dummy"}, Status: []StatusEntry{entry("dummy", "a")}}, []Module{dummy}, true,
			[]Detail{{"n0", "status says dummy was loaded in boot a, the node is in boot b"}}, nil},
		{"stale boot, boot part not applicable", NodeState{TruthBoot: "b", TruthModules: []string{"dummy"}, Status: []StatusEntry{entry("dummy", "a")}}, []Module{dummy}, false, nil, nil},
		{"claims a module the kernel lacks", NodeState{TruthBoot: "b", Status: []StatusEntry{entry("dummy", "b")}}, []Module{dummy}, true,
			[]Detail{{"n0", "status says dummy is loaded in boot b, the kernel has []"}}, nil},
		{"no entry for a spec module", NodeState{TruthBoot: "b"}, []Module{dummy}, true, []Detail{{"n0", "spec has dummy but status has no entry"}}, nil},
		{"status and the last load at the spec's config", NodeState{TruthBoot: "b", TruthModules: []string{"dummy"},
			Status: []StatusEntry{{Name: "dummy", ModuleName: "dummy", BootID: "b", KernelVersion: "6.1", ContainerImage: "img:r1"}}, LastLoadImage: map[string]string{"dummy": "img:r1"}},
			[]Module{{Name: "dummy", ModuleName: "dummy", KernelVersion: "6.1", ContainerImage: "img:r1"}}, true, nil, nil},
		{"status and the last load at an old image and kernel", NodeState{TruthBoot: "b", TruthModules: []string{"dummy"},
			Status: []StatusEntry{{Name: "dummy", ModuleName: "dummy", BootID: "b", KernelVersion: "6.1", ContainerImage: "img"}}, LastLoadImage: map[string]string{"dummy": "img"}},
			[]Module{{Name: "dummy", ModuleName: "dummy", KernelVersion: "6.2", ContainerImage: "img:r1"}}, true, []Detail{
				{"n0", "status says dummy was loaded for kernel 6.1, the spec asks for 6.2"},
				{"n0", "status says dummy was loaded from image img, the spec asks for img:r1"},
				{"n0", "the last load of dummy in boot b ran image img, the spec asks for img:r1"}}, nil},
		{"a status without a config is not compared", NodeState{TruthBoot: "b", TruthModules: []string{"dummy"}, Status: []StatusEntry{entry("dummy", "b")}},
			[]Module{{Name: "dummy", ModuleName: "dummy", KernelVersion: "6.2", ContainerImage: "img:r1"}}, true, nil, nil},
		{"removed from the spec but loaded and listed", NodeState{TruthBoot: "b", TruthModules: []string{"dummy", "other"}, Status: []StatusEntry{entry("dummy", "b"), entry("other", "b")}},
			[]Module{dummy}, true, []Detail{{"n0", "other was removed from the spec but is loaded"}, {"n0", "other was removed from the spec but has a status entry"}}, []Module{dummy, other}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Inconsistencies("n0", tc.sn, tc.spec, tc.declared, tc.bootOK)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestLastLoadImages(t *testing.T) {
	r := Record{Loads: []Load{
		{Node: "n0", ModuleName: "dummy", Action: "Load", Boot: "a", Image: "img"},
		{Node: "n0", ModuleName: "dummy", Action: "Load", Boot: "b", Image: "img"},
		{Node: "n0", ModuleName: "dummy", Action: "Unload", Boot: "b", Image: "img"},
		{Node: "n0", ModuleName: "dummy", Action: "Load", Boot: "b", Image: "img:r1"},
		{Node: "n1", ModuleName: "dummy", Action: "Load", Boot: "b", Image: "other"},
		{Node: "n0", ModuleName: "bonding", Action: "Load", Boot: "b"},
	}}
	got := LastLoadImages(r, "n0", "b")
	if len(got) != 1 || got["dummy"] != "img:r1" {
		t.Errorf("LastLoadImages(n0, b) = %v, want dummy: img:r1 (the last load of the boot; none for a worker without an image)", got)
	}
}

func TestRebootMetricsFromRecord(t *testing.T) {
	f := Facts{Names: []string{"n0"}, Start: t0, BaseAt: at(5), Now: at(60), Grace: 10 * time.Second,
		Spec:     map[string][]Module{"n0": {{Name: "dummy", ModuleName: "dummy"}}},
		BaseBoot: map[string]string{"n0": "a"},
		Disrupted: []Disruption{{Kind: "reboot", Reboot: true, Node: "n0", Start: at(10), End: at(12), Downtime: 2 * time.Second, Completed: true,
			Outcome: nodeapi.RebootOutcome{OldBootID: "a", NewBootID: "b"}}}}
	r := Record{Nodes: map[string]NodeRecord{"n0": {
		BootSeen:      map[string]time.Time{"a": at(1), "b": at(12.5)},
		TruthBootSeen: map[string]time.Time{"a": at(1), "b": at(12), "c": at(30)},
		ModuleSeen:    map[string]time.Time{"b/dummy": at(13.25), "c/dummy": at(31)},
		NotReadyAt:    []time.Time{at(29)},
	}}, Pods: []Pod{
		{Node: "n0", Action: "Load", Created: at(0)},
		{Node: "n0", Action: "Unload", Created: at(12.6)},
		{Node: "n0", Action: "Load", Created: at(12.75)},
		{Node: "n1", Action: "Load", Created: at(30.1)},
		{Node: "n0", Action: "Load", Created: at(30.5)},
	}}
	got := RebootMetrics(f, r)
	if len(got) != 2 {
		t.Fatalf("got %d reboots, want a planned and an unplanned one: %+v", len(got), got)
	}
	planned, unplanned := got[0], got[1]
	want := RebootMetric{Node: "n0", OldBootID: "a", NewBootID: "b", Planned: true, DowntimeMS: 2000, StartMS: 10000,
		BootVisibleMS: 12500, DetectionLatencyMS: 250, ReloadLatencyMS: 750}
	if planned != want {
		t.Errorf("planned reboot\n got %+v\nwant %+v", planned, want)
	}
	// Boot c is seen only in the kernel's truth: visible from there.
	want = RebootMetric{Node: "n0", OldBootID: "b", NewBootID: "c", Planned: false, DowntimeMS: -1, StartMS: 30000, NotReadySeen: true,
		BootVisibleMS: 30000, DetectionLatencyMS: 500, ReloadLatencyMS: 1000}
	if unplanned != want {
		t.Errorf("unplanned reboot\n got %+v\nwant %+v", unplanned, want)
	}
	if msg := Unplanned([]string{LabelNoReboot}, got); !strings.Contains(msg, "node n0 from boot b to c at 30.0s") {
		t.Errorf("no-reboot control: %q", msg)
	}
	if msg := Unplanned(nil, got); msg != "" {
		t.Errorf("reboot scenario: %q", msg)
	}
	// A reload never seen keeps -1.
	r.Nodes["n0"].ModuleSeen["b/dummy"] = time.Time{}
	delete(r.Nodes["n0"].ModuleSeen, "b/dummy")
	if m := RebootMetrics(f, r)[0]; m.ReloadLatencyMS != -1 {
		t.Errorf("no reload seen: %+v", m)
	}
}

// apiAndKernel is the boot a Node shows and the one its kernel shows.
type apiAndKernel struct{ BootID, TruthBoot string }

func TestCurrentBoot(t *testing.T) {
	nr := NodeRecord{BootSeen: map[string]time.Time{"a": at(1), "b": at(10)}, TruthBootSeen: map[string]time.Time{"c": at(20), "z": at(0)}}
	cases := []struct {
		name, rebooted string
		sn             apiAndKernel
		want           string
	}{
		{"no reboot: the API's boot", "", apiAndKernel{BootID: "a", TruthBoot: "a"}, "a"},
		{"the last reboot's boot over the API's", "b", apiAndKernel{BootID: "a", TruthBoot: "b"}, "b"},
		{"no ground truth yet", "b", apiAndKernel{BootID: "a"}, "b"},
		{"a later boot in the kernel wins", "b", apiAndKernel{BootID: "b", TruthBoot: "c"}, "c"},
		{"an older boot in the kernel does not", "b", apiAndKernel{BootID: "b", TruthBoot: "z"}, "b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := currentBoot(tc.rebooted, tc.sn.BootID, tc.sn.TruthBoot, nr); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
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

func reloadFacts(waits ...Wait) Facts {
	return Facts{Names: []string{"n0"}, Start: t0, BaseAt: at(2), Grace: 10 * time.Second, SubjectAt: at(2), FirstLoad: 500 * time.Millisecond,
		BaseBoot: map[string]string{"n0": "a"},
		Spec:     map[string][]Module{"n0": {{Name: "dummy", ModuleName: "dummy"}}},
		Disrupted: []Disruption{{Kind: "reboot", Reboot: true, Node: "n0", Start: at(10), End: at(12), Completed: true,
			Outcome: nodeapi.RebootOutcome{OldBootID: "a", NewBootID: "b"}}},
		Waits: waits}
}

func reloadWait(start, timeout, end float64) Wait {
	return Wait{Kind: WaitReload, What: "wait-reloaded at line 9", Nodes: []string{"n0"},
		Spec: map[string][]Module{"n0": {{Name: "dummy", ModuleName: "dummy"}}}, Start: at(start),
		Timeout: time.Duration(timeout * float64(time.Second)), End: at(end), Why: "the scenario's deadline",
		SLO: time.Second, SLOWhy: "10 x the slowest load measured, at least 1s; the first load took 0.50s", Last: map[string]string{"n0": "Ready=True boot=b"}}
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
		wait   Wait
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
			if tc.wait.Start.Before(at(12)) {
				f.Disrupted = nil // before the reboot
			}
			jr := JudgeWait(f, reloadRecord(tc.truths...), tc.wait)
			if jr.Held != tc.held || len(jr.Nodes) != 1 || !jr.Nodes[0].Loaded.Equal(tc.loaded) {
				t.Errorf("JudgeWait = %+v, want held=%v loaded at %v", jr, tc.held, tc.loaded)
			}
			if !tc.held && (len(jr.Nodes[0].Missing) != 1 || jr.Nodes[0].Boot != "b") {
				t.Errorf("missing %v in boot %q, want dummy in b", jr.Nodes[0].Missing, jr.Nodes[0].Boot)
			}
		})
	}
}

// A wait is judged against the boot the node had to be in when it
// stopped: a reboot that came later does not move it.
func TestJudgeWaitKeepsItsBoot(t *testing.T) {
	f := reloadFacts()
	f.Disrupted = append(f.Disrupted, Disruption{Kind: "reboot", Reboot: true, Node: "n0", Start: at(15), End: at(16), Completed: true,
		Outcome: nodeapi.RebootOutcome{OldBootID: "b", NewBootID: "c"}})
	r := reloadRecord(TruthSeen{At: at(1), BootID: "a"}, TruthSeen{At: at(12), BootID: "b"},
		TruthSeen{At: at(13), BootID: "b", Modules: []string{"dummy"}}, TruthSeen{At: at(16), BootID: "c"})
	r.Nodes["n0"].BootSeen["c"] = at(16.2)
	jr := JudgeWait(f, r, reloadWait(12, 30, 13.1))
	if !jr.Held || jr.Nodes[0].Boot != "b" {
		t.Errorf("JudgeWait = %+v, want held in boot b", jr)
	}
}

func TestJudgeWorkerWait(t *testing.T) {
	w := Wait{Kind: WaitWorker, What: "wait-worker at line 7", Nodes: []string{"n0"}, Worker: WorkerMatch{Action: "Load", State: "running"},
		Start: at(2), Timeout: 5 * time.Second, End: at(7.1)}
	for _, tc := range []struct {
		name string
		pods []Pod
		held bool
	}{
		{"running in time", []Pod{{Node: "n0", Action: "Load", Created: at(3), RunningAt: at(4)}}, true},
		{"already done counts as running", []Pod{{Node: "n0", Action: "Load", Created: at(3), SucceededAt: at(3.5)}}, true},
		{"running too late", []Pod{{Node: "n0", Action: "Load", Created: at(3), RunningAt: at(7.5)}}, false},
		{"another action", []Pod{{Node: "n0", Action: "Unload", Created: at(3), RunningAt: at(4)}}, false},
		{"another node", []Pod{{Node: "n1", Action: "Load", Created: at(3), RunningAt: at(4)}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if jr := JudgeWait(Facts{}, Record{Pods: tc.pods}, w); jr.Held != tc.held {
				t.Errorf("held = %v, want %v (%s)", jr.Held, tc.held, jr.Why)
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
	ok := JudgeReload(reloadFacts(firstWait, reloadWait(12, 5, 13.3)), reloadRecord(truths...))
	if !ok.OK || ok.Name != AssertReload {
		t.Fatalf("reload = %+v, want it to hold", ok)
	}
	// The wait before the reboot is the initial load's, not reload's.
	for _, want := range []string{"in 1 wait(s) after a disruption", "first load 500 ms", "1 reload(s)", "n0 750 ms"} {
		if !strings.Contains(ok.Message, want) {
			t.Errorf("message %q lacks %q", ok.Message, want)
		}
	}
	if len(ok.Reloads) != 1 || ok.Reloads[0] != (ReloadLatency{Node: "n0", BootID: "b", LatencyMS: 750, WindowMS: 750, SLOMS: 1000, WaitMS: 5000}) {
		t.Errorf("reloads %+v, want n0 in b after 750ms, in a wait of 5s, within its service level of 1s", ok.Reloads)
	}

	failed := JudgeReload(reloadFacts(firstWait, reloadWait(12, 5, 17.2)), reloadRecord(truths[:3]...))
	wantFail(t, failed, "1 module(s) not reloaded within 5s (the scenario's deadline) in wait-reloaded at line 9 "+
		"on node n0: module dummy not loaded in boot b (last state: Ready=True boot=b)")

	noReboot := JudgeReload(reloadFacts(firstWait), reloadRecord(truths[:2]...))
	if !noReboot.OK || !strings.Contains(noReboot.Message, "no reboot to reload after") {
		t.Errorf("no reboot: %+v", noReboot)
	}
}

// reload-slo judges the reloads that came against their wait's service
// level, from the window's opening (the wait's start or the new boot
// showing, whichever is later); a missed reload is reload's, and
// reload-slo says it left it out.
func TestJudgeReloadSLO(t *testing.T) {
	truths := []TruthSeen{{At: at(1), BootID: "a"}, {At: at(2.5), BootID: "a", Modules: []string{"dummy"}}, {At: at(12), BootID: "b"},
		{At: at(13.25), BootID: "b", Modules: []string{"dummy"}}}
	firstWait := reloadWait(2, 30, 2.6)
	for _, tc := range []struct {
		name    string
		wait    Wait
		truths  []TruthSeen
		ok      bool
		message string
		late    bool
	}{
		{"within", reloadWait(12, 5, 13.3), truths, true, "1 reload(s) within the service level; closest: node n0 boot b, 750 ms of 1.0 s", false},
		{"late", func() Wait { w := reloadWait(12, 5, 13.3); w.SLO = 500 * time.Millisecond; return w }(), truths, false,
			"1 of 1 reload(s) late on node n0: boot b: loaded 750 ms after its window opened, over the service level 500 ms (750 ms after the new boot showed)", true},
		{"window opens at the wait's start when later than the boot", func() Wait { w := reloadWait(13, 5, 13.3); w.SLO = 300 * time.Millisecond; return w }(), truths, true,
			"1 reload(s) within the service level; closest: node n0 boot b, 250 ms of 300 ms", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := JudgeReloadSLO(reloadFacts(firstWait, tc.wait), reloadRecord(tc.truths...))
			if got.Name != AssertReloadSLO || got.OK != tc.ok || got.Message != tc.message || got.NotJudged != "" {
				t.Errorf("got %+v\nwant ok=%v message %q", got, tc.ok, tc.message)
			}
			if tc.late && (len(got.Reloads) != 1 || !got.Reloads[0].Late || len(got.Details) != 1) {
				t.Errorf("reloads %+v details %+v: want the late one marked", got.Reloads, got.Details)
			}
		})
	}
	missed := JudgeReloadSLO(reloadFacts(firstWait, reloadWait(12, 5, 17.2)), reloadRecord(truths[:3]...))
	if !missed.OK || missed.NotJudged != "the reload missed in wait-reloaded at line 9 (see reload)" {
		t.Errorf("missed: %+v, want it left to reload", missed)
	}
}

// The waits before a case's first disruption are the initial load's, the
// worker waits the worker assertion's, and neither is judged by reload.
func TestJudgeInitialLoadAndWorkerWaits(t *testing.T) {
	truths := []TruthSeen{{At: at(1), BootID: "a"}, {At: at(2.5), BootID: "a", Modules: []string{"dummy"}}, {At: at(12), BootID: "b"},
		{At: at(13.25), BootID: "b", Modules: []string{"dummy"}}}
	worker := Wait{Kind: WaitWorker, What: "wait-worker at line 3", Nodes: []string{"n0"}, Worker: WorkerMatch{Action: "Load", State: "running"},
		Start: at(2), Timeout: 5 * time.Second, End: at(7.1)}
	f := reloadFacts(reloadWait(2, 30, 2.6), worker, reloadWait(12, 5, 13.3))
	if !f.InitialWait(f.Waits[0]) || f.InitialWait(f.Waits[1]) || f.InitialWait(f.Waits[2]) {
		t.Errorf("initial waits: %v %v %v, want only the first", f.InitialWait(f.Waits[0]), f.InitialWait(f.Waits[1]), f.InitialWait(f.Waits[2]))
	}
	r := reloadRecord(truths...)
	r.Pods = []Pod{{Node: "n0", Action: "Load", Created: at(2.1), RunningAt: at(2.2)}}
	if a := JudgeInitialLoad(f, r); !a.OK || !strings.Contains(a.Message, "in 1 wait(s) before the first disruption; first load 500 ms") {
		t.Errorf("initial-load %+v", a)
	}
	if a := JudgeWorkerWaits(f, r); !a.OK || a.Message != "1 worker wait(s) held" {
		t.Errorf("worker %+v", a)
	}

	// Never loaded: the initial load fails, the reload too, separately.
	never := reloadRecord(truths[0], truths[2])
	never.Pods = r.Pods
	if a := JudgeInitialLoad(f, never); a.OK || !strings.Contains(a.Message, "on node n0: module dummy not loaded in boot a") {
		t.Errorf("initial-load of a subject that never loads: %+v", a)
	}
	if a := JudgeReload(f, never); a.OK || !strings.Contains(a.Message, "on node n0: module dummy not loaded in boot b") {
		t.Errorf("reload of a subject that never loads: %+v", a)
	}

	// No worker pod: the worker assertion fails, not reload.
	noPod := reloadRecord(truths...)
	if a := JudgeWorkerWaits(f, noPod); a.OK || !strings.Contains(a.Message, "no Load worker pod running within 5s on node n0: last state: ") {
		t.Errorf("worker without a pod: %+v", a)
	}
	if a := JudgeReload(f, noPod); !a.OK {
		t.Errorf("reload judged a worker wait: %+v", a)
	}
	if a := JudgeWorkerWaits(reloadFacts(), noPod); !a.OK || a.Message != "no worker wait in the timeline" {
		t.Errorf("worker with no wait: %+v", a)
	}
}

// TestBootsNotVisible: a reload wait's window waits for the new boot of
// each node's last completed reboot to show in its Node status; nodes
// without a completed reboot, or whose new boot shows, hold nothing back.
func TestBootsNotVisible(t *testing.T) {
	t0 := time.Unix(1000, 0)
	reboot := func(node, newBoot string, completed bool) Disruption {
		return Disruption{Kind: "reboot", Reboot: true, Node: node, Completed: completed, Outcome: nodeapi.RebootOutcome{OldBootID: "a", NewBootID: newBoot}}
	}
	r := Record{Nodes: map[string]NodeRecord{
		"n1": {BootSeen: map[string]time.Time{"a": t0, "b": t0.Add(time.Second)}},
		"n2": {BootSeen: map[string]time.Time{"a": t0}},
	}}
	for _, tc := range []struct {
		name      string
		disrupted []Disruption
		want      []string
	}{
		{"no reboot", nil, nil},
		{"new boot shown", []Disruption{reboot("n1", "b", true)}, nil},
		{"new boot not shown yet", []Disruption{reboot("n2", "b", true)}, []string{"n2"}},
		{"a reboot still running is not waited for", []Disruption{reboot("n2", "b", false)}, nil},
		{"the last reboot counts", []Disruption{reboot("n1", "b", true), reboot("n1", "c", true)}, []string{"n1"}},
		{"a kubelet restart is no reboot", []Disruption{{Kind: "restart-kubelet", Node: "n2", Completed: true}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := BootsNotVisible(Facts{Disrupted: tc.disrupted}, r, []string{"n1", "n2"})
			if !slices.Equal(got, tc.want) {
				t.Errorf("BootsNotVisible = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestUpdateClaims: a claim opens when an entry with a bootId appears or
// names another boot, and closes when it goes or changes; an entry
// without a bootId claims nothing.
func TestUpdateClaims(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	e := func(boot string) StatusEntry { return StatusEntry{Name: "dummy", ModuleName: "dummy", BootID: boot} }
	var c []StatusClaim
	c = UpdateClaims(c, []StatusEntry{e("A")}, at(1))
	c = UpdateClaims(c, []StatusEntry{e("A"), {Name: "other", ModuleName: "other"}}, at(2)) // no bootId: no claim
	c = UpdateClaims(c, []StatusEntry{e("B")}, at(3))
	c = UpdateClaims(c, nil, at(4))
	c = UpdateClaims(c, []StatusEntry{e("B")}, at(5))
	want := []StatusClaim{
		{Entry: "dummy", Module: "dummy", Boot: "A", From: at(1), Until: at(3)},
		{Entry: "dummy", Module: "dummy", Boot: "B", From: at(3), Until: at(4)},
		{Entry: "dummy", Module: "dummy", Boot: "B", From: at(5)},
	}
	if !slices.Equal(c, want) {
		t.Errorf("claims = %+v, want %+v", c, want)
	}
}

// TestJudgeStatusAfterLoad: a claim passes when the kernel had loaded the
// module by the claim plus the slack (by the observer's sighting or the
// kernel's own stamp), and fails when the load came later or never came
// while the node stayed in the boot.
func TestJudgeStatusAfterLoad(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	claim := func(boot string, from, until float64) StatusClaim {
		c := StatusClaim{Entry: "dummy", Module: "dummy", Boot: boot, From: at(from)}
		if until > 0 {
			c.Until = at(until)
		}
		return c
	}
	truths := []TruthSeen{{At: at(0), BootID: "A"}, {At: at(10), BootID: "B"}}
	for _, tc := range []struct {
		name   string
		nr     NodeRecord
		wantOK bool
		want   string
	}{
		{"no claims", NodeRecord{}, true, "no status entry claimed"},
		{"claim after the load", NodeRecord{Claims: []StatusClaim{claim("A", 3, 0)}, ModuleSeen: map[string]time.Time{"A/dummy": at(2)}, Truths: truths}, true, "1 status claims"},
		{"claim just ahead of the truth, within the slack", NodeRecord{Claims: []StatusClaim{claim("A", 3, 0)}, ModuleSeen: map[string]time.Time{"A/dummy": at(3.9)}, Truths: truths}, true, "none ahead"},
		{"truth late, the kernel's stamp before the claim", NodeRecord{Claims: []StatusClaim{claim("A", 3, 0)},
			ModuleSeen: map[string]time.Time{"A/dummy": at(6)}, KernelLoaded: map[string]time.Time{"A/dummy": at(2.5)}, Truths: truths}, true, "none ahead"},
		{"claim 3 s ahead of the load", NodeRecord{Claims: []StatusClaim{claim("A", 3, 0)},
			ModuleSeen: map[string]time.Time{"A/dummy": at(6)}, KernelLoaded: map[string]time.Time{"A/dummy": at(6)}, Truths: truths}, false, "3s before the kernel loaded it"},
		{"claim ahead, the observer saw the load within the slack", NodeRecord{Claims: []StatusClaim{claim("A", 3, 0)},
			ModuleSeen: map[string]time.Time{"A/dummy": at(3.5)}, KernelLoaded: map[string]time.Time{"A/dummy": at(6)}, Truths: truths}, true, "none ahead"},
		{"never loaded in the claimed boot, node still in it", NodeRecord{Claims: []StatusClaim{claim("A", 3, 0)}, Truths: truths}, false, "never did"},
		{"never loaded, claim gone within the slack", NodeRecord{Claims: []StatusClaim{claim("A", 3, 3.5)}, Truths: truths}, true, ""},
		{"stale claim of an earlier boot", NodeRecord{Claims: []StatusClaim{claim("A", 12, 0)}, Truths: truths}, true, ""},
		{"claim of a boot the node reached later, ahead of its load", NodeRecord{Claims: []StatusClaim{claim("B", 10, 0)},
			ModuleSeen: map[string]time.Time{"B/dummy": at(14)}, Truths: truths}, false, "4s before"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := JudgeStatusAfterLoad(Record{Nodes: map[string]NodeRecord{"n1": tc.nr}}, at(20))
			if got.Name != AssertStatusAfterLoad || got.OK != tc.wantOK || !strings.Contains(got.Message, tc.want) {
				t.Errorf("JudgeStatusAfterLoad = %+v, want ok %v and a message with %q", got, tc.wantOK, tc.want)
			}
		})
	}
}

func wantFail(t *testing.T, r AssertionResult, text string) {
	t.Helper()
	if r.OK || !strings.Contains(r.Message, text) {
		t.Errorf("%s: ok=%v message %q, want a failure saying %q", r.Name, r.OK, r.Message, text)
	}
}
