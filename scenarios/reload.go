package scenarios

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"time"

	"github.com/bootproof/bootproof/scenarios/judging"
)

// ReloadBound is how long a subject has to reload, the same for every
// subject: what a case observes depends only on what the subject did,
// never on what it is expected to do. Once the case's first load was
// measured (the subject started with the NodeModulesConfigs written ->
// every module of the first wait loaded on every node, each in the boot
// it had at the start), each reload wait ends after FirstLoadTimes x the
// slowest load the case measured of this subject so far (that first
// load, or a reload an earlier wait saw: a node's new boot visible -> its
// modules loaded in it), never under AtLeast and never past the wait's
// own timeout (its timeout, else the scenario's deadline). The window
// opens when the subject can act: after the timeline's resume or restart
// of the subject (the wait follows it), once every node's Node status
// shows the new boot of its last reboot (awaitNewBoots). A subject
// whose reloads grow slower (backoff built up by earlier errors, a
// restart of its own) is measured doing so: each reload it made widens
// the next one's window, and one that misses a reboot never reloads, so
// it widens nothing. A timeline with
// no reload wait before its first reboot (worker waits, sleeps) has its
// first load measured from the kernels' ground truth at its next reload
// wait (measureFirstLoadTruth). A wait before the first load was
// measured has its full timeout.
//
// The first load runs the same path as a reload (the subject sees work,
// its worker pod runs, the kernel loads) on the same cluster and nodes
// under the same load, plus the subject's start, so a subject that
// reloads at all does so well inside the bound; one that misses a
// reboot is given up on as soon, whichever verdict it is expected to
// get.
type ReloadBound struct {
	// FirstLoadTimes multiplies the measured first load; default
	// DefaultReloadTimes, at least 1.
	FirstLoadTimes float64 `yaml:"firstLoadTimes"`
	// AtLeast is the bound's floor; default DefaultReloadAtLeast.
	AtLeast Duration `yaml:"atLeast"`
}

// Defaults and limit of ReloadBound.
const (
	DefaultReloadTimes   = 10
	DefaultReloadAtLeast = 5 * time.Second
	MaxReloadTimes       = 1000
)

// withDefaults fills the unset fields.
func (b ReloadBound) withDefaults() ReloadBound {
	if b.FirstLoadTimes == 0 {
		b.FirstLoadTimes = DefaultReloadTimes
	}
	if !b.AtLeast.Set {
		b.AtLeast = Duration{Abs: DefaultReloadAtLeast, Set: true}
	}
	return b
}

// String says what the bound is: "10 x the slowest load measured, at
// least 5s".
func (b ReloadBound) String() string {
	b = b.withDefaults()
	return fmt.Sprintf("%s x the slowest load measured, at least %s", strconv.FormatFloat(b.FirstLoadTimes, 'f', -1, 64), b.AtLeast)
}

// Resolve returns a reload wait's timeout for a case whose first load
// took firstLoad (0: not measured yet) when the wait's own timeout is
// timeout, with grace the grace period.
func (b ReloadBound) Resolve(firstLoad, timeout, grace time.Duration) time.Duration {
	if firstLoad <= 0 {
		return timeout
	}
	b = b.withDefaults()
	bound := time.Duration(math.Min(b.FirstLoadTimes*float64(firstLoad), float64(math.MaxInt64)))
	return min(timeout, max(b.AtLeast.Resolve(grace), bound))
}

// reloadTimeout is the timeout of a reload wait whose own timeout is
// timeout: cut to the reload bound once the first load was measured. why
// says which, for messages.
func (c *caseRun) reloadTimeout(timeout time.Duration) (time.Duration, string) {
	c.mu.Lock()
	first, slowest := c.firstLoad, c.slowestReload
	c.mu.Unlock()
	if first <= 0 {
		return timeout, "its full timeout: no first load measured yet"
	}
	measured := fmt.Sprintf("the first load took %s", HumanDuration(first))
	if slowest > first {
		measured = fmt.Sprintf("the slowest reload so far took %s, the first load %s", HumanDuration(slowest), HumanDuration(first))
	}
	d := c.s.ReloadBound.Resolve(max(first, slowest), timeout, c.grace)
	if d < timeout {
		return d, fmt.Sprintf("the reload bound: %s; %s", c.s.ReloadBound, measured)
	}
	return d, fmt.Sprintf("its timeout, shorter than the reload bound (%s; %s)", c.s.ReloadBound, measured)
}

// measureReload records the slowest reload of a held reload wait: for
// each node in another boot than the one it had at the start, from the
// new boot first visible to its modules loaded in it (as judgeReload
// reports reload latencies).
func (c *caseRun) measureReload(jr judging.WaitResult, r judging.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, nl := range jr.Nodes {
		if nl.Boot == c.baseBoot[nl.Node] || nl.Loaded.IsZero() {
			continue
		}
		from := r.Visible(nl.Node, nl.Boot)
		if from.IsZero() {
			continue
		}
		c.slowestReload = max(c.slowestReload, nl.Loaded.Sub(from))
	}
}

// measureFirstLoad records the case's first load from the first reload
// wait that held with every node still in the boot it had when the
// subject started: from the subject's start to the last node's modules
// loaded.
func (c *caseRun) measureFirstLoad(jr judging.WaitResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.firstLoad > 0 || c.subjectAt.IsZero() || len(jr.Nodes) == 0 {
		return
	}
	var last time.Time
	for _, nl := range jr.Nodes {
		if nl.Boot != c.baseBoot[nl.Node] {
			return // a reboot came first: this is no first load
		}
		last = judging.Later(last, nl.Loaded)
	}
	c.firstLoad = max(last.Sub(c.subjectAt), time.Millisecond)
}

// measureFirstLoadTruth records the case's first load when no reload
// wait measured it: a timeline that starts with worker waits or a sleep
// (a race scenario pausing the subject mid-load) still loads every
// module once. It is the time from the subject's start until every
// node's kernel showed its modules in the boot it had at the start, as
// the Record shows by until; nothing when a node never did (a reboot
// came first). What it measures, like measureFirstLoad, is only what
// the subject did.
func (c *caseRun) measureFirstLoadTruth(until time.Time) {
	c.mu.Lock()
	if c.firstLoad > 0 || c.subjectAt.IsZero() || len(c.baseBoot) == 0 {
		c.mu.Unlock()
		return
	}
	from := c.subjectAt
	want := make(map[string][]string, len(c.baseBoot))
	for n := range c.baseBoot {
		for _, m := range c.spec[n] {
			want[n] = append(want[n], m.ModuleName)
		}
	}
	base := maps.Clone(c.baseBoot)
	c.mu.Unlock()
	r := c.obs.Record()
	var last time.Time
	for n, boot := range base {
		if len(want[n]) == 0 {
			continue
		}
		at, ok := judging.LoadedIn(r.Nodes[n], boot, want[n], from, until)
		if !ok {
			return
		}
		last = judging.Later(last, at)
	}
	if last.IsZero() {
		return
	}
	c.mu.Lock()
	if c.firstLoad == 0 {
		c.firstLoad = max(last.Sub(from), time.Millisecond)
	}
	c.mu.Unlock()
}

// reloadBound reports the case's reload bound for its result.
func (c *caseRun) reloadBound() *ReloadBoundResult {
	c.mu.Lock()
	first, slowest := c.firstLoad, c.slowestReload
	c.mu.Unlock()
	deadline := c.s.Deadline.Resolve(c.grace)
	b := &ReloadBoundResult{Rule: c.s.ReloadBound.String(), FirstLoadMS: -1, BoundMS: -1, DeadlineMS: deadline.Milliseconds()}
	if first > 0 {
		b.FirstLoadMS = first.Milliseconds()
		b.FirstBoundMS = c.s.ReloadBound.Resolve(first, deadline, c.grace).Milliseconds()
		b.BoundMS = c.s.ReloadBound.Resolve(max(first, slowest), deadline, c.grace).Milliseconds()
		if slowest > 0 {
			b.SlowestReloadMS = slowest.Milliseconds()
		}
	}
	return b
}
