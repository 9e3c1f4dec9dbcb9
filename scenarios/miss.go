package scenarios

import (
	"fmt"
	"slices"
	"time"
)

// The miss deadline. A subject the scenario expects to fail through
// reload (legacy on a fast reboot) is not waited for until the scenario's
// full deadline once it has shown how long a load takes: after the case's
// first load succeeded, each later reload wait of that subject ends after
// MissMargin times that first load, never under MissFloor and never past
// the wait's own timeout. The measured first load (subject started with
// the NodeModulesConfigs written -> every module loaded on every node)
// covers the same path as a reload (the subject sees work, its worker pod
// runs, the kernel loads),
// on the same cluster and nodes under the same load, so a subject that
// reloads at all does so well inside the margin. A subject expected to
// pass, and any subject before its first load, keeps the full deadline:
// the deadlines that judge a passing subject are unchanged.
const (
	MissMargin = 10
	MissFloor  = 5 * time.Second
)

// expectsReloadMiss reports whether exp expects the subject to fail
// through the reload assertion.
func expectsReloadMiss(exp Expectation) bool {
	return exp.Outcome == Fail && slices.Contains(exp.Assertions, AssertReload)
}

// missDeadline is the timeout of a reload wait whose own timeout is
// timeout, for a subject expected to miss reloads whose first load took
// firstLoad (0: not measured yet, the full timeout).
func missDeadline(timeout, firstLoad time.Duration) time.Duration {
	if firstLoad <= 0 {
		return timeout
	}
	return min(timeout, max(MissFloor, MissMargin*firstLoad))
}

// reloadTimeout is the timeout of a reload wait of this case whose own
// timeout is timeout, and, when the miss deadline shortened it, why.
func (c *caseRun) reloadTimeout(timeout time.Duration) (time.Duration, string) {
	if !c.missReload {
		return timeout, ""
	}
	c.mu.Lock()
	first := c.firstLoad
	c.mu.Unlock()
	d := missDeadline(timeout, first)
	if d == timeout {
		return timeout, ""
	}
	return d, fmt.Sprintf("the miss deadline %s (the subject is expected to fail reload: %d x its first load, %s, at least %s; the wait's timeout is %s)",
		d, MissMargin, first.Round(time.Millisecond), MissFloor, timeout)
}

// loaded records the first successful reload wait of the case: how long
// the first load took since the subject was started with the
// NodeModulesConfigs written (the wait polls, so this is an upper bound).
func (c *caseRun) loaded(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.firstLoad == 0 && !c.subjectAt.IsZero() {
		c.firstLoad = max(at.Sub(c.subjectAt), time.Millisecond)
	}
}
