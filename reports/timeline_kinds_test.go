package reports

import (
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/scenarios"
	"github.com/bootproof/bootproof/scenarios/trace"
)

// TestTimelineShadesEveryDisruption draws each action kind of the
// vocabulary as the engine records it: every node disruption (pause-node
// included) gets its grace-period window shaded and labelled, and no
// other action does.
func TestTimelineShadesEveryDisruption(t *testing.T) {
	kinds := scenarios.ActionKinds()
	disruptions := 0
	for _, name := range kinds {
		kind := scenarios.ActionKind(name)
		t.Run(name, func(t *testing.T) {
			var ev trace.Event
			if scenarios.Disrupts(kind) {
				disruptions++
				ev = trace.DisruptionEvent("node-0", kind, trace.PhaseStart, 2*time.Second)
			} else {
				ev = trace.Event{Kind: trace.KindAction, Node: "node-0", Action: kind, Detail: name}
			}
			ev.TMS = 1000
			c := scenarios.CaseResult{Scenario: "s", Subject: "bootid", DurationMS: 20000, GracePeriodMS: 8000, Trace: []trace.Event{
				{TMS: 0, Kind: trace.KindReady, Node: "node-0", Ready: "True"}, ev,
				trace.DisruptionEvent("node-0", kind, trace.PhaseDone, 0)}}
			c.Trace[2].TMS = 3000
			p := BuildTimeline(c)
			shaded := 0
			for _, r := range p.Rects {
				if r.Opacity > 0 && strings.Contains(r.Title, "grace period window") {
					shaded++
				}
			}
			labelled := false
			for _, tx := range p.Texts {
				labelled = labelled || tx.Text == name+" / grace window"
			}
			switch {
			case scenarios.Disrupts(kind) && (shaded != 1 || !labelled):
				t.Errorf("disruption %s: %d shaded windows, labelled %v; want one, labelled", name, shaded, labelled)
			case !scenarios.Disrupts(kind) && (shaded != 0 || labelled):
				t.Errorf("action %s is no disruption, yet %d windows shaded", name, shaded)
			}
		})
	}
	for _, want := range []scenarios.ActionKind{scenarios.ActReboot, scenarios.ActRestartKubelet, scenarios.ActNetworkBlip, scenarios.ActPauseNode} {
		if !scenarios.Disrupts(want) {
			t.Errorf("%s is not counted as a disruption", want)
		}
	}
	if disruptions < 4 {
		t.Errorf("%d disruption kinds in %v", disruptions, kinds)
	}
}
