package reports

import (
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/scenarios"
)

// The reload bound a case ran with, and its passing reload assertion with
// the latencies, are in the HTML report and in JUnit.
func TestReloadBoundShown(t *testing.T) {
	reload := scenarios.AssertionResult{Name: scenarios.AssertReload, OK: true,
		Message: "every module loaded in each node's current boot in 2 wait(s); first load 520 ms; reload latency (new boot visible -> loaded), 1 reload(s), worst per node: n0 310 ms",
		Reloads: []scenarios.ReloadLatency{{Node: "n0", BootID: "b", LatencyMS: 310}}}
	r := scenarios.Results{Cases: []scenarios.CaseResult{{Scenario: "fast-reboot-0.5g", Subject: "bootid", Cluster: "embedded", Nodes: "fake",
		Expected: "pass", Observed: "pass", Verdict: "pass", DurationMS: 6000,
		ReloadBound: &scenarios.ReloadBoundResult{Rule: "10 x the first load, at least 5s", FirstLoadMS: 520, BoundMS: 5000, DeadlineMS: 30000},
		Assertions:  []scenarios.AssertionResult{reload}}}}
	want := "5.0 s (10 x the first load, at least 5s: first load 520 ms; the deadline 30 s caps it)"
	html, err := RenderHTML(r, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Reload bound, the same for every subject: " + want, "worst per node: n0 310 ms"} {
		if !strings.Contains(string(html), w) {
			t.Errorf("report lacks %q", w)
		}
	}
	tc := BuildJUnit("bootproof", r, time.Now()).Suites[0].Cases[0]
	for _, w := range []string{"reload bound: " + want, "ok   reload: every module loaded", "n0 310 ms"} {
		if !strings.Contains(tc.SystemOut, w) {
			t.Errorf("JUnit system-out lacks %q:\n%s", w, tc.SystemOut)
		}
	}
	// Not measured: every wait had the deadline.
	none := scenarios.ReloadBoundResult{Rule: "10 x the first load, at least 5s", FirstLoadMS: -1, BoundMS: -1, DeadlineMS: 30000}
	if got := none.String(); got != "the deadline 30s (10 x the first load, at least 5s, but no first load was measured before a reboot)" {
		t.Errorf("unmeasured bound: %q", got)
	}
}
