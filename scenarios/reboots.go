package scenarios

import (
	"time"

	"github.com/bootproof/bootproof/scenarios/judging"
)

// invalidRunError marks a run that did not test what the scenario claims
// for a reason the assertions do not cover (a reboot nobody asked for in
// a no-reboot control).
type invalidRunError struct{ msg string }

func (e *invalidRunError) Error() string { return e.msg }

// rebootMetrics lists the case's reboots as seen so far.
func (c *caseRun) rebootMetrics() []RebootMetric {
	return judging.RebootMetrics(c.facts(time.Now()), c.obs.Record())
}

// checkUnplanned makes a no-reboot control with a reboot nobody asked
// for an invalid run (judging.Unplanned).
// unplannedBefore keeps the reboots that began before failedAt (all of
// them when it is zero): a reboot nobody asked for after an assertion
// failed cannot have caused the failure, which stands.
func (c *caseRun) unplannedBefore(reboots []RebootMetric, failedAt time.Time) []RebootMetric {
	if failedAt.IsZero() {
		return reboots
	}
	var out []RebootMetric
	for _, m := range reboots {
		if m.Planned || c.start.Add(time.Duration(m.StartMS)*time.Millisecond).Before(failedAt) {
			out = append(out, m)
		}
	}
	return out
}

func (c *caseRun) checkUnplanned(reboots []RebootMetric) error {
	if msg := judging.Unplanned(c.s.Labels, reboots); msg != "" {
		return &invalidRunError{msg}
	}
	return nil
}
