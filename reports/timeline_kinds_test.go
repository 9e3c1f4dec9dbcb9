package reports

import (
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/scenarios"
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
			var ev scenarios.TraceEvent
			if kind.Disrupts() {
				disruptions++
				ev = scenarios.DisruptionEvent("node-0", kind, scenarios.PhaseStart, 2*time.Second)
			} else {
				ev = scenarios.TraceEvent{Kind: scenarios.TraceAction, Node: "node-0", Action: kind, Detail: name}
			}
			ev.TMS = 1000
			c := scenarios.CaseResult{Scenario: "s", Subject: "bootid", DurationMS: 20000, GracePeriodMS: 8000, Trace: []scenarios.TraceEvent{
				{TMS: 0, Kind: scenarios.TraceReady, Node: "node-0", Ready: "True"}, ev,
				scenarios.DisruptionEvent("node-0", kind, scenarios.PhaseDone, 0)}}
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
			case kind.Disrupts() && (shaded != 1 || !labelled):
				t.Errorf("disruption %s: %d shaded windows, labelled %v; want one, labelled", name, shaded, labelled)
			case !kind.Disrupts() && (shaded != 0 || labelled):
				t.Errorf("action %s is no disruption, yet %d windows shaded", name, shaded)
			}
		})
	}
	for _, want := range []scenarios.ActionKind{scenarios.ActReboot, scenarios.ActRestartKubelet, scenarios.ActNetworkBlip, scenarios.ActPauseNode} {
		if !want.Disrupts() {
			t.Errorf("%s is not counted as a disruption", want)
		}
	}
	if disruptions < 4 {
		t.Errorf("%d disruption kinds in %v", disruptions, kinds)
	}
}
