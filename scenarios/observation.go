package scenarios

import (
	"fmt"
	"strings"
	"time"

	"github.com/bootproof/bootproof/scenarios/observe"
)

// checkObservation makes the case an error when its observation cannot
// be trusted: a node's ground truth could not be read (a fault of the
// backend), or a watch gap overlaps the case between its first
// disruption and its judgement at until (an invalid run).
func (c *caseRun) checkObservation(until time.Time) error {
	if c.obs == nil || c.baseAt.IsZero() {
		return nil
	}
	if err := c.obs.Err(); err != nil {
		return infra("observer: %w", err)
	}
	return gapError(c.obs.Gaps(c.firstDisruption(), until), c.start)
}

// gapError is the invalid run of watch gaps, their times relative to the
// case's start; nil without gaps.
func gapError(gaps []observe.WatchGap, start time.Time) error {
	if len(gaps) == 0 {
		return nil
	}
	var parts []string
	for _, g := range gaps {
		to := "the judgement"
		if !g.To.IsZero() {
			to = fmt.Sprintf("%.1fs", g.To.Sub(start).Seconds())
		}
		parts = append(parts, fmt.Sprintf("the %s watch was broken from %.1fs to %s (%s)", g.What, g.From.Sub(start).Seconds(), to, g.Err))
	}
	return &invalidRunError{"observation gap: " + strings.Join(parts, "; ") +
		": a short NotReady or a worker pod that came and went may have been missed"}
}

// firstDisruption is when the case's first disruption began, or, without
// one, when its nodes were up.
func (c *caseRun) firstDisruption() time.Time {
	if at := c.dis.first(); !at.IsZero() {
		return at
	}
	return c.baseAt
}
