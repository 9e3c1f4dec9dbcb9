package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/nodeapi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The assertions are pure functions of caseFacts and a Record: these
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
	reboot := disruption{kind: "reboot", node: "n0", start: at(10), end: at(12), downtime: 2 * time.Second, completed: true}
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
			f := caseFacts{claim: tc.claim, names: []string{"n0"}, start: t0, baseAt: at(5), now: at(60), grace: 10 * time.Second,
				disrupted: []disruption{reboot}}
			got := judgePrecondition(f, Record{Nodes: map[string]NodeRecord{"n0": tc.node}})
			if got.Name != AssertPrecondition || got.OK != tc.ok || !strings.Contains(got.Message, tc.saying) {
				t.Errorf("got %+v, want ok=%v saying %q", got, tc.ok, tc.saying)
			}
		})
	}
}

func TestJudgeExtraWork(t *testing.T) {
	l := func(node, mod, action, boot string) load {
		return load{node: node, moduleName: mod, action: action, boot: boot}
	}
	truth := func(node, boot, mod string, loads, unloads int) map[string]NodeRecord {
		return map[string]NodeRecord{node: {TruthActions: map[string]map[string]ActionCount{boot: {mod: {Loads: loads, Unloads: unloads}}}}}
	}
	cases := []struct {
		name   string
		loads  []load
		nodes  map[string]NodeRecord
		ok     bool
		saying string
	}{
		{"none", nil, nil, true, "0 loads"},
		// The kernel's count is the ground truth: an extra load made by a
		// pod the observer never saw (another pod of the same name, or no
		// worker pod at all) is still one.
		{"kernel counts a load no pod explains", []load{l("n0", "m", "Load", "a")}, truth("n0", "a", "m", 2, 0), false,
			"module m loaded 2 times in boot a of node n0 (0 unloads; the kernel counted 2 loads, worker pods 1)"},
		{"kernel counts a load, no pod seen", nil, truth("n0", "a", "m", 2, 0), false, "the kernel counted 2 loads, worker pods 0"},
		{"kernel agrees", []load{l("n0", "m", "Load", "a")}, truth("n0", "a", "m", 1, 0), true, "1 loads, none repeated within a boot (from the kernels' counts"},
		{"kernel: reload after an unload", nil, truth("n0", "a", "m", 2, 1), true, "2 loads, none repeated"},
		{"pods count more than a kernel that lags", []load{l("n0", "m", "Load", "a"), l("n0", "m", "Load", "a")}, truth("n0", "a", "m", 1, 0), false, "worker pods 2"},
		{"one per boot", []load{l("n0", "m", "Load", "a"), l("n0", "m", "Load", "b"), l("n1", "m", "Load", "a")}, nil, true, "3 loads, none repeated"},
		{"reload after an unload", []load{l("n0", "m", "Load", "a"), l("n0", "m", "Unload", "a"), l("n0", "m", "Load", "a")}, nil, true, "none repeated"},
		{"twice in one boot", []load{l("n0", "m", "Load", "a"), l("n0", "m", "Load", "a")}, nil, false, "module m loaded 2 times in boot a of node n0 (0 unloads; the kernel counted 0 loads, worker pods 2)"},
		{"two modules, each its own count", []load{l("n0", "m", "Load", "a"), l("n0", "k", "Load", "a")}, nil, true, "2 loads"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeExtraWork(tc.loads, tc.nodes)
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
		sn       NodeSnapshot
		spec     []Module
		bootOK   bool
		want     []string
		declared []Module
	}{
		{"consistent", NodeSnapshot{TruthBoot: "b", TruthModules: []string{"dummy"}, Status: []StatusEntry{entry("dummy", "b")}}, []Module{dummy}, true, nil, nil},
		{"stale boot", NodeSnapshot{TruthBoot: "b", TruthModules: []string{"dummy"}, Status: []StatusEntry{entry("dummy", "a")}}, []Module{dummy}, true,
			[]string{"node n0: status says dummy was loaded in boot a, the node is in boot b"}, nil},
		{"stale boot, boot part not applicable", NodeSnapshot{TruthBoot: "b", TruthModules: []string{"dummy"}, Status: []StatusEntry{entry("dummy", "a")}}, []Module{dummy}, false, nil, nil},
		{"claims a module the kernel lacks", NodeSnapshot{TruthBoot: "b", Status: []StatusEntry{entry("dummy", "b")}}, []Module{dummy}, true,
			[]string{"node n0: status says dummy is loaded in boot b, the kernel has []"}, nil},
		{"no entry for a spec module", NodeSnapshot{TruthBoot: "b"}, []Module{dummy}, true, []string{"node n0: spec has dummy but status has no entry"}, nil},
		{"removed from the spec but loaded and listed", NodeSnapshot{TruthBoot: "b", TruthModules: []string{"dummy", "other"}, Status: []StatusEntry{entry("dummy", "b"), entry("other", "b")}},
			[]Module{dummy}, true, []string{"node n0: other was removed from the spec but is loaded", "node n0: other was removed from the spec but has a status entry"}, []Module{dummy, other}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := inconsistencies("n0", tc.sn, tc.spec, tc.declared, tc.bootOK)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestRebootMetricsFromRecord(t *testing.T) {
	f := caseFacts{names: []string{"n0"}, start: t0, baseAt: at(5), now: at(60), grace: 10 * time.Second,
		spec:     map[string][]Module{"n0": {{Name: "dummy", ModuleName: "dummy"}}},
		baseBoot: map[string]string{"n0": "a"},
		disrupted: []disruption{{kind: "reboot", node: "n0", start: at(10), end: at(12), downtime: 2 * time.Second, completed: true,
			outcome: nodeapi.RebootOutcome{OldBootID: "a", NewBootID: "b"}}}}
	r := Record{Nodes: map[string]NodeRecord{"n0": {
		BootSeen:      map[string]time.Time{"a": at(1), "b": at(12.5)},
		TruthBootSeen: map[string]time.Time{"a": at(1), "b": at(12), "c": at(30)},
		ModuleSeen:    map[string]time.Time{"b/dummy": at(13.25), "c/dummy": at(31)},
		NotReadyAt:    []time.Time{at(29)},
	}}, Pods: []podObs{
		{node: "n0", action: "Load", created: at(0)},
		{node: "n0", action: "Unload", created: at(12.6)},
		{node: "n0", action: "Load", created: at(12.75)},
		{node: "n1", action: "Load", created: at(30.1)},
		{node: "n0", action: "Load", created: at(30.5)},
	}}
	got := rebootMetrics(f, r)
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
	if err := unplannedError([]string{LabelNoReboot}, got); err == nil || !strings.Contains(err.Error(), "node n0 from boot b to c at 30.0s") {
		t.Errorf("no-reboot control: %v", err)
	}
	if err := unplannedError(nil, got); err != nil {
		t.Errorf("reboot scenario: %v", err)
	}
	// A reload never seen keeps -1.
	r.Nodes["n0"].ModuleSeen["b/dummy"] = time.Time{}
	delete(r.Nodes["n0"].ModuleSeen, "b/dummy")
	if m := rebootMetrics(f, r)[0]; m.ReloadLatencyMS != -1 {
		t.Errorf("no reload seen: %+v", m)
	}
}

func TestCurrentBoot(t *testing.T) {
	nr := NodeRecord{BootSeen: map[string]time.Time{"a": at(1), "b": at(10)}, TruthBootSeen: map[string]time.Time{"c": at(20), "z": at(0)}}
	cases := []struct {
		name, rebooted string
		sn             NodeSnapshot
		want           string
	}{
		{"no reboot: the API's boot", "", NodeSnapshot{BootID: "a", TruthBoot: "a"}, "a"},
		{"the last reboot's boot over the API's", "b", NodeSnapshot{BootID: "a", TruthBoot: "b"}, "b"},
		{"no ground truth yet", "b", NodeSnapshot{BootID: "a"}, "b"},
		{"a later boot in the kernel wins", "b", NodeSnapshot{BootID: "b", TruthBoot: "c"}, "c"},
		{"an older boot in the kernel does not", "b", NodeSnapshot{BootID: "b", TruthBoot: "z"}, "b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := currentBoot(tc.rebooted, tc.sn, nr); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// A Record is a copy: what the observer sees later does not change it.
func TestRecordIsACopy(t *testing.T) {
	o := newObserver(t0, []string{"n0"}, scriptedBackend{})
	node := func(ready corev1.ConditionStatus, boot string) {
		o.onNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n0"}, Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}, NodeInfo: corev1.NodeSystemInfo{BootID: boot}}})
	}
	node(corev1.ConditionTrue, "a")
	r := o.Record()
	node(corev1.ConditionUnknown, "b")
	if n := r.Nodes["n0"]; len(n.NotReadyAt) != 0 || len(n.BootSeen) != 1 {
		t.Errorf("record changed after it was taken: %+v", n)
	}
	if n := o.Record().Nodes["n0"]; len(n.NotReadyAt) != 1 || len(n.BootSeen) != 2 {
		t.Errorf("a new record misses the later events: %+v", n)
	}
}
