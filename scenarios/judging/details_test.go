package judging

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/nodeapi"
)

func TestCompareNames(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"node-2", "node-10", -1},
		{"node-10", "node-2", 1},
		{"node-02", "node-2", 0},
		{"node-2", "node-2", 0},
		{"a", "b", -1},
		{"n", "n0", -1},
		{"n9x", "n10a", -1},
		{"bp-1a2-3", "bp-1a2-12", -1},
		{"", "", 0},
		{"x1", "x", 1},
	} {
		if got := CompareNames(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareNames(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	d := func(node, ev string) Detail { return Detail{Node: node, Evidence: ev} }
	for _, tc := range []struct {
		name string
		in   []Detail
		want string
	}{
		{"none", nil, "it failed"},
		{"one node", []Detail{d("n0", "x")}, "it failed on node n0: x"},
		{"one node, several details, sorted", []Detail{d("n0", "y"), d("n0", "x")}, "it failed on node n0: x; y"},
		{"one node, more than shown", []Detail{d("n0", "a"), d("n0", "b"), d("n0", "c"), d("n0", "d"), d("n0", "e")},
			"it failed on node n0: a; b; c; and 2 more, every one in results.json"},
		{"two nodes, in node order", []Detail{d("n10", "y"), d("n2", "x")}, "it failed on 2 nodes: node n2: x; node n10: y"},
		{"four nodes", []Detail{d("n3", "w"), d("n1", "y"), d("n0", "z"), d("n2", "x")},
			"it failed on 4 nodes: node n0: z; node n1: y; node n2: x; and 1 more, every one in results.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize("it failed", slices.Clone(tc.in)); got != tc.want {
				t.Errorf("Summarize = %q\nwant        %q", got, tc.want)
			}
		})
	}
}

// storm is a reboot storm of n nodes, named as the engine names them
// (an index at the end), each rebooted from boot a<i> into b<i>: the
// facts, a record in which no node loaded its module again, and the
// reload wait after the reboots.
func storm(n int) (Facts, Record, Wait) {
	f := Facts{Start: t0, BaseAt: at(2), Grace: 10 * time.Second, FirstLoad: 500 * time.Millisecond,
		BaseBoot: map[string]string{}, Spec: map[string][]Module{}}
	r := Record{Nodes: map[string]NodeRecord{}}
	w := Wait{Kind: WaitReload, What: "actions[2] wait-reloaded (line 16)", Spec: map[string][]Module{}, Start: at(12),
		Timeout: 5 * time.Second, End: at(17.2), Why: "the reload bound", Last: map[string]string{}}
	dummy := []Module{{Name: "dummy", ModuleName: "dummy"}}
	for i := range n {
		node, a, b := fmt.Sprintf("bp-storm-%d", i), fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
		f.Names = append(f.Names, node)
		f.BaseBoot[node], f.Spec[node], w.Spec[node] = a, dummy, dummy
		f.Disrupted = append(f.Disrupted, Disruption{Kind: "reboot", Reboot: true, Node: node, Start: at(10), End: at(12), Completed: true,
			Outcome: nodeapi.RebootOutcome{OldBootID: a, NewBootID: b}})
		w.Nodes = append(w.Nodes, node)
		w.Last[node] = "Ready=True boot=" + b
		r.Nodes[node] = NodeRecord{BootSeen: map[string]time.Time{a: at(1), b: at(12.5)}, TruthBootSeen: map[string]time.Time{a: at(1), b: at(12)},
			Truths: []TruthSeen{{At: at(1), BootID: a}, {At: at(2.5), BootID: a, Modules: []string{"dummy"}}, {At: at(12), BootID: b}}}
	}
	f.Waits = []Wait{w}
	return f, r, w
}

// TestStormMessages: every assertion that fails on many nodes says how
// many, names the first DetailsShown in node order with their evidence,
// and keeps every node's evidence in Details, sorted.
func TestStormMessages(t *testing.T) {
	const nodes = 50
	f, r, _ := storm(nodes)
	twice := Record{Nodes: map[string]NodeRecord{}}
	var inconsistent []Detail
	var reboots []RebootMetric
	for i := nodes - 1; i >= 0; i-- { // backwards: the order must come from the judgement
		n := f.Names[i]
		twice.Nodes[n] = NodeRecord{TruthActions: map[string]map[string]ActionCount{"b": {"dummy": {Loads: 2}}}}
		inconsistent = append(inconsistent, Inconsistencies(n, NodeState{TruthBoot: "b"}, f.Spec[n], nil, true)...)
		reboots = append(reboots, RebootMetric{Node: n, OldBootID: "a", NewBootID: "b", StartMS: 3000})
	}
	for _, tc := range []struct {
		name  string
		got   AssertionResult
		first string
	}{
		{"reload", JudgeReload(f, r), "50 module(s) not reloaded within 5s (the reload bound) in actions[2] wait-reloaded (line 16) on 50 nodes: " +
			"node bp-storm-0: module dummy not loaded in boot b0 (last state: Ready=True boot=b0); node bp-storm-1: module dummy not loaded in boot b1"},
		{"no-extra-work", JudgeExtraWork(twice), "a load without a boot change on 50 nodes: node bp-storm-0: module dummy loaded 2 times in boot b"},
		{"consistency", JudgeConsistency(inconsistent), "NodeModulesConfig status differs from the kernel on 50 nodes: node bp-storm-0: spec has dummy but status has no entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.got
			if a.OK || !strings.HasPrefix(a.Message, tc.first) {
				t.Errorf("message %q\nwant it to start %q", a.Message, tc.first)
			}
			checkSummary(t, a.Message, nodes)
			if len(a.Details) != nodes {
				t.Fatalf("%d details, want one per node (%d)", len(a.Details), nodes)
			}
			for i, d := range a.Details {
				if want := fmt.Sprintf("bp-storm-%d", i); d.Node != want || d.Evidence == "" || strings.Contains(d.Evidence, want) {
					t.Errorf("details[%d] = %+v, want node %s's evidence without its name", i, d, want)
				}
			}
		})
	}
	t.Run("unplanned reboots", func(t *testing.T) {
		msg := Unplanned([]string{LabelNoReboot}, reboots)
		if !strings.HasPrefix(msg, "unplanned reboot on 50 nodes (node bp-storm-0 from boot a to b at 3.0s; node bp-storm-1") {
			t.Errorf("message %q", msg)
		}
		checkSummary(t, msg, nodes)
	})
}

// checkSummary: msg names the first DetailsShown nodes and none after,
// and says how many more results.json has.
func checkSummary(t *testing.T, msg string, nodes int) {
	t.Helper()
	for i := range nodes {
		named := strings.Contains(msg, fmt.Sprintf("node bp-storm-%d ", i)) || strings.Contains(msg, fmt.Sprintf("node bp-storm-%d:", i))
		if named != (i < DetailsShown) {
			t.Errorf("node bp-storm-%d named %v in %q", i, named, msg)
		}
	}
	if want := fmt.Sprintf("and %d more, every one in results.json", nodes-DetailsShown); !strings.Contains(msg, want) {
		t.Errorf("message %q lacks %q", msg, want)
	}
}

// A worker wait that fails on several nodes names them all in its
// details, each with its last state.
func TestWorkerWaitDetails(t *testing.T) {
	w := Wait{Kind: WaitWorker, What: "actions[0] wait-worker (line 7)", Nodes: []string{"n1", "n0"}, Worker: WorkerMatch{Action: "Load", State: "running"},
		Start: at(2), Timeout: 5 * time.Second, End: at(7.1), Last: map[string]string{"n0": "Ready=True boot=a", "n1": "Ready=True boot=c"}}
	a := JudgeWorkerWaits(Facts{Waits: []Wait{w}}, Record{})
	want := "waiting for a worker pod (actions[0] wait-worker (line 7)): no Load worker pod running within 5s on 2 nodes: " +
		"node n0: last state: Ready=True boot=a; node n1: last state: Ready=True boot=c"
	if a.OK || a.Message != want {
		t.Errorf("message %q\nwant    %q", a.Message, want)
	}
	if !slices.Equal(a.Details, []Detail{{"n0", "last state: Ready=True boot=a"}, {"n1", "last state: Ready=True boot=c"}}) {
		t.Errorf("details %+v", a.Details)
	}
}

// A reboot storm of 50 nodes none of which loaded its module again: the
// reload assertion's message names how many nodes and the first three
// with their evidence; Details holds all fifty.
func ExampleSummarize_rebootStorm() {
	f, r, _ := storm(50)
	a := JudgeReload(f, r)
	fmt.Println(a.Message)
	fmt.Println(len(a.Details), "details, the last:", a.Details[len(a.Details)-1].Node+":", a.Details[len(a.Details)-1].Evidence)
	// Output:
	// 50 module(s) not reloaded within 5s (the reload bound) in actions[2] wait-reloaded (line 16) on 50 nodes: node bp-storm-0: module dummy not loaded in boot b0 (last state: Ready=True boot=b0); node bp-storm-1: module dummy not loaded in boot b1 (last state: Ready=True boot=b1); node bp-storm-2: module dummy not loaded in boot b2 (last state: Ready=True boot=b2); and 47 more, every one in results.json
	// 50 details, the last: bp-storm-49: module dummy not loaded in boot b49 (last state: Ready=True boot=b49)
}
