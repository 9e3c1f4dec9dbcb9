package scenarios

import (
	"cmp"
	"slices"
	"time"
)

// perWait and perNode are what Cost counts for each wait, and for each
// node at the start and in each wait (its load), beyond the durations the
// timeline states.
const (
	perWait = time.Second
	perNode = 100 * time.Millisecond
)

// Cost estimates how long a case of s takes with grace, from what its
// timeline states: downtimes, pauses, blips, sleeps and staggers, plus a
// second per wait and a little per node and wait, and what a missed
// reload adds (missCost). It orders cases, longest first,
// so that parallel runs do not end on one long case started last; it is
// not a deadline.
func (s *Scenario) Cost(grace time.Duration) time.Duration {
	d := time.Duration(s.Nodes) * perNode
	reloads := false
	for _, a := range s.Actions {
		n := len(a.On.Nodes(s.Nodes))
		stagger := time.Duration(max(n-1, 0)) * a.Stagger.Resolve(grace)
		switch a.Kind {
		case ActReboot, ActRestartKubelet, ActRestartSubject:
			d += a.Downtime.Resolve(grace) + a.Startup.NotReadyFor.Resolve(grace) + stagger
		case ActNetworkBlip, ActPauseNode, ActSleep:
			d += a.Duration.Resolve(grace) + stagger
		case ActWaitReloaded, ActWaitWorker:
			d += perWait + time.Duration(s.Nodes)*perNode
			if a.Kind == ActWaitReloaded {
				reloads = true
			}
		}
	}
	if reloads {
		d += s.missCost(grace)
	}
	return d
}

// missCost is what a subject that misses a reload adds to a case: its
// timeline ends at the first reload wait that does not hold, at the
// scenario's deadline. Every subject's case is ordered by it alike: the
// order must not depend on what a subject is expected to do.
func (s *Scenario) missCost(grace time.Duration) time.Duration {
	return s.Deadline.Resolve(grace)
}

// ByCost returns the indexes of scenarios ordered by Cost with grace,
// longest first; equal costs keep their order.
func ByCost(ss []*Scenario, grace time.Duration) []int {
	idx := make([]int, len(ss))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Compare(ss[b].Cost(grace), ss[a].Cost(grace))
	})
	return idx
}
