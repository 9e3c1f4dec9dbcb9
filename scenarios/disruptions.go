package scenarios

import (
	"sync"
	"time"

	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/scenarios/judging"
)

// disruptions is a case's ledger of node disruptions: every one the
// timeline began, in order, with its times and outcome (what judging
// reads as Facts.Disrupted); the ones still in flight on each node; and
// the first that failed, which a later step reports even when its action
// did not wait (wait: false).
// Its zero value is ready; it has its own lock, never held while
// caseRun's is taken.
type disruptions struct {
	mu       sync.Mutex
	list     []*judging.Disruption
	inflight map[string]*sync.WaitGroup
	err      error
}

// begin enters a disruption of node, in flight until done(node).
func (l *disruptions) begin(node string, kind ActionKind, downtime time.Duration) *judging.Disruption {
	d := &judging.Disruption{Kind: string(kind), Reboot: kind == ActReboot, Node: node, Downtime: downtime}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, d)
	if l.inflight == nil {
		l.inflight = map[string]*sync.WaitGroup{}
	}
	if l.inflight[node] == nil {
		l.inflight[node] = &sync.WaitGroup{}
	}
	l.inflight[node].Add(1)
	return d
}

// done ends a disruption of node begun with begin.
func (l *disruptions) done(node string) {
	l.mu.Lock()
	wg := l.inflight[node]
	l.mu.Unlock()
	wg.Done()
}

// wait waits until no disruption of nodes is in flight.
func (l *disruptions) wait(nodes []string) {
	for _, n := range nodes {
		l.mu.Lock()
		wg := l.inflight[n]
		l.mu.Unlock()
		if wg != nil {
			wg.Wait()
		}
	}
}

// started records when d began on its node.
func (l *disruptions) started(d *judging.Disruption, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d.Start = at
}

// rebooted records a reboot's outcome, and its downtime when the node
// set measured one.
func (l *disruptions) rebooted(d *judging.Disruption, out nodeapi.RebootOutcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d.Outcome = out
	if out.Downtime > 0 {
		d.Downtime = out.Downtime
	}
}

// finished records when d ended and whether it completed; the first
// failure (err, an infrastructure fault) is kept for failure.
func (l *disruptions) finished(d *judging.Disruption, at time.Time, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d.End, d.Completed = at, err == nil
	if err != nil && l.err == nil {
		l.err = infra("%w", err)
	}
}

// failure is the first disruption that failed, nil when none did.
func (l *disruptions) failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// first is when the first disruption began; zero when none has.
func (l *disruptions) first() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.list) > 0 {
		return l.list[0].Start
	}
	return time.Time{}
}

// all copies the ledger, in the order the disruptions began.
func (l *disruptions) all() []judging.Disruption {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]judging.Disruption, 0, len(l.list))
	for _, d := range l.list {
		out = append(out, *d)
	}
	return out
}
