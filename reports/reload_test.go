package reports

import (
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/scenarios"
)

// The reload service level a case ran with, and its passing reload
// assertion with the latencies, are in the HTML report and in JUnit.
func TestReloadBoundShown(t *testing.T) {
	reload := scenarios.AssertionResult{Name: scenarios.AssertReload, OK: true,
		Message: "every module loaded in each node's current boot in 2 wait(s); first load 520 ms; reload latency (new boot visible -> loaded), 1 reload(s), worst per node: n0 310 ms",
		Reloads: []scenarios.ReloadLatency{{Node: "n0", BootID: "b", LatencyMS: 310}}}
	r := scenarios.Results{Cases: []scenarios.CaseResult{{Scenario: "fast-reboot-0.5g", Subject: "bootid", Cluster: "embedded", Nodes: "fake",
		Expected: "pass", Observed: "pass", Verdict: "pass", DurationMS: 6000,
		ReloadBound: &scenarios.ReloadBoundResult{Rule: "10 x the first load, at least 15s", FirstLoadMS: 520, BoundMS: 15000, DeadlineMS: 30000},
		Assertions:  []scenarios.AssertionResult{reload}}}}
	want := "15 s (10 x the first load, at least 15s: first load 520 ms); missed after the deadline 30 s"
	html, err := RenderHTML(r, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Reload service level (a reload later than it fails reload-slo; one not there by the deadline fails reload): " + want, "worst per node: n0 310 ms"} {
		if !strings.Contains(string(html), w) {
			t.Errorf("report lacks %q", w)
		}
	}
	tc := BuildJUnit("bootproof", r, time.Now()).Suites[0].Cases[0]
	for _, w := range []string{"reload service level: " + want, "ok   reload: every module loaded", "n0 310 ms"} {
		if !strings.Contains(tc.SystemOut, w) {
			t.Errorf("JUnit system-out lacks %q:\n%s", w, tc.SystemOut)
		}
	}
	// Not measured: the rule's floor.
	none := scenarios.ReloadBoundResult{Rule: "10 x the first load, at least 15s", FirstLoadMS: -1, BoundMS: 15000, DeadlineMS: 30000}
	if got := none.String(); got != "15s (10 x the first load, at least 15s; no first load was measured before a reboot); missed after the deadline 30s" {
		t.Errorf("unmeasured bound: %q", got)
	}
}
