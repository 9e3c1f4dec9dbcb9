package scenarios

import (
	"fmt"
	"strings"
	"time"

	"github.com/bootproof/bootproof/scenarios/health"
	"github.com/bootproof/bootproof/scenarios/trace"
)

// clusterFaultError marks a case whose window overlaps a cluster fault.
type clusterFaultError struct{ msg string }

func (e *clusterFaultError) Error() string { return e.msg }

// checkCluster returns a clusterFaultError when a cluster fault overlaps
// the case between its first disruption (or, without one, the moment its
// nodes were up) and its judgement at until. Call it once the monitor has
// probed after until (WaitFresh).
func (c *caseRun) checkCluster(until time.Time) error {
	if c.baseAt.IsZero() {
		return nil // the timeline never ran
	}
	faults := c.e.Health.Faults(c.firstDisruption(), until)
	if len(faults) == 0 {
		return nil
	}
	var parts []string
	for _, f := range faults {
		parts = append(parts, c.describeFault(f))
	}
	return &clusterFaultError{"cluster fault during the case: " + strings.Join(parts, "; ")}
}

// describeFault is "kube-apiserver down from 12.3s to 15.1s (why)".
func (c *caseRun) describeFault(f health.Fault) string {
	to := "the judgement"
	if !f.To.IsZero() {
		to = fmt.Sprintf("%.1fs", f.To.Sub(c.start).Seconds())
	}
	return fmt.Sprintf("%s down from %.1fs to %s (%s)", f.Component, f.From.Sub(c.start).Seconds(), to, f.Detail)
}

// traceFaults adds every cluster fault during the case to its trace.
func (c *caseRun) traceFaults() {
	if c.obs == nil || c.e.Health == nil {
		return
	}
	for _, f := range c.e.Health.Faults(c.start, time.Now()) {
		c.obs.Add(trace.Event{Kind: trace.KindCluster, Detail: c.describeFault(f)}, f.From)
		if !f.To.IsZero() {
			c.obs.Add(trace.Event{Kind: trace.KindCluster, Detail: f.Component + " back"}, f.To)
		}
	}
}
