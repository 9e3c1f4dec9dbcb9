package scenarios

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"
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

// waitKind says what a wait waits for.
type waitKind int

const (
	waitReload waitKind = iota // every module of each node's spec loaded in its current boot
	waitWorker                 // a worker pod reaching a state
)

// caseWait is one wait of a case: what it waited for and the window the
// subject had. The engine's poll only decides when to stop waiting;
// whether the wait held is judged afterwards, by judgeWait, from the
// case's facts and the observer's Record like every other assertion.
type caseWait struct {
	kind    waitKind
	what    string // "actions[2] wait-reloaded (line 14)", "the final check"
	nodes   []string
	spec    map[string][]Module // waitReload: each node's modules
	worker  Action              // waitWorker: which pod, in which state
	start   time.Time
	timeout time.Duration
	// why says how timeout was chosen: "the reload bound (...)", "the
	// deadline", "its timeout".
	why string
	// end is when the poll stopped (zero while it runs).
	end time.Time
	// last is each node's observed state when the wait stopped, for
	// messages only.
	last map[string]string
}

// until is the end of the wait's window: when it stopped, or its
// timeout's end if it stopped later.
func (w caseWait) until() time.Time {
	d := w.start.Add(w.timeout)
	if !w.end.IsZero() && w.end.Before(d) {
		return w.end
	}
	return d
}

// nodeLoad is one node's part of a reload wait, as judged.
type nodeLoad struct {
	node, boot string
	// missing are the modules not loaded in boot while the Node showed
	// it, at any moment of the wait's window.
	missing []string
	// loaded is when they all were, with the Node in that boot (zero
	// when missing).
	loaded time.Time
}

// waitResult is a wait as judged.
type waitResult struct {
	held  bool
	nodes []nodeLoad // waitReload
	why   string     // waitWorker: what was not seen
}

// judgeWait judges one wait on the case's facts and the Record: a
// reload wait held when, for each of its nodes, at some moment of its
// window (from its start until it stopped, at most its timeout) the Node
// showed the boot the node had to be in (wantBoot at the window's end)
// and the kernel showed every module of the node's spec loaded in that
// boot; a worker wait held when a matching worker pod reached the state
// by the window's end.
func judgeWait(f caseFacts, r Record, w caseWait) waitResult {
	end := w.until()
	if w.kind == waitWorker {
		for _, n := range w.nodes {
			if !workerSeen(r.Pods, n, w.worker, end) {
				return waitResult{why: fmt.Sprintf("no %s worker pod %s on node %s within %s", w.worker.WorkerAction, w.worker.State, n, w.timeout)}
			}
		}
		return waitResult{held: true}
	}
	out := waitResult{held: true}
	for _, n := range w.nodes {
		nr := r.Nodes[n]
		boot := wantBoot(f, nr, n, end)
		var mods []string
		for _, m := range w.spec[n] {
			mods = append(mods, m.ModuleName)
		}
		nl := nodeLoad{node: n, boot: boot}
		if at, ok := loadedIn(nr, boot, mods, w.start, end); ok {
			nl.loaded = at
		} else {
			out.held = false
			for _, m := range mods {
				if _, ok := loadedIn(nr, boot, []string{m}, w.start, end); !ok {
					nl.missing = append(nl.missing, m)
				}
			}
			if len(nl.missing) == 0 { // each alone, never all at once
				nl.missing = mods
			}
		}
		out.nodes = append(out.nodes, nl)
	}
	return out
}

// bootsNotVisible lists the nodes of nodes whose Node status has not
// shown the new boot of their last completed reboot yet.
func bootsNotVisible(f caseFacts, r Record, nodes []string) []string {
	var out []string
	for _, n := range nodes {
		want := rebootedInto(f, n, f.now)
		if _, ok := r.Nodes[n].BootSeen[want]; want != "" && !ok {
			out = append(out, n)
		}
	}
	return out
}

// wantBoot is the boot node n had to be in at t: the new boot of its
// last reboot completed by then, else the boot its Node showed at t; but
// a boot its kernel showed at t that was first seen after that one (a
// reboot nobody asked for) is the current one.
func wantBoot(f caseFacts, nr NodeRecord, n string, t time.Time) string {
	return currentBoot(rebootedInto(f, n, t), NodeSnapshot{BootID: nr.BootAt(t), TruthBoot: nr.TruthAt(t).BootID}, nr)
}

// rebootedInto is the new boot of node n's last reboot completed by t
// ("": none).
func rebootedInto(f caseFacts, n string, t time.Time) string {
	boot := ""
	for _, d := range f.disrupted {
		if d.node == n && d.kind == ActReboot && d.completed && !d.end.After(t) {
			boot = d.outcome.NewBootID
		}
	}
	return boot
}

// currentBoot is the boot a node is known to be in: rebooted, the new
// boot of its last completed reboot ("" if none), else what the API
// shows (sn); but a boot the kernel shows that was first seen after it
// (in nr: a reboot nobody asked for) is the current one.
func currentBoot(rebooted string, sn NodeSnapshot, nr NodeRecord) string {
	want := cmp.Or(rebooted, sn.BootID)
	if sn.TruthBoot == "" || sn.TruthBoot == want {
		return want
	}
	if seen := nr.FirstSeen(want); !seen.IsZero() && nr.FirstSeen(sn.TruthBoot).After(seen) {
		return sn.TruthBoot
	}
	return want
}

// BootAt is the boot the node's Node showed at t: the boot first seen
// last at or before t ("" before any).
func (r NodeRecord) BootAt(t time.Time) string {
	boot, seen := "", time.Time{}
	for b, at := range r.BootSeen {
		if !at.After(t) && (boot == "" || at.After(seen)) {
			boot, seen = b, at
		}
	}
	return boot
}

// TruthAt is the ground truth the node's kernel showed at t (zero
// before any).
func (r NodeRecord) TruthAt(t time.Time) TruthSeen {
	var out TruthSeen
	for _, s := range r.Truths {
		if s.At.After(t) {
			break
		}
		out = s
	}
	return out
}

// bootUntil is when the Node stopped showing boot: the first sighting of
// a boot first seen after it (zero: it still shows it).
func (r NodeRecord) bootUntil(boot string) time.Time {
	from := r.BootSeen[boot]
	var until time.Time
	for b, at := range r.BootSeen {
		if b != boot && at.After(from) && (until.IsZero() || at.Before(until)) {
			until = at
		}
	}
	return until
}

// loadedIn finds a moment in [from, to] at which the Node showed boot
// and the kernel showed boot with every module of mods loaded, and
// returns when that state began (it may be before from).
func loadedIn(nr NodeRecord, boot string, mods []string, from, to time.Time) (time.Time, bool) {
	visible, ok := nr.BootSeen[boot]
	if !ok || boot == "" {
		return time.Time{}, false
	}
	bootEnd := nr.bootUntil(boot)
	for i, s := range nr.Truths {
		if s.BootID != boot || !containsAll(s.Modules, mods) {
			continue
		}
		lo := later(s.At, visible)
		hi := bootEnd
		if i+1 < len(nr.Truths) && (hi.IsZero() || nr.Truths[i+1].At.Before(hi)) {
			hi = nr.Truths[i+1].At
		}
		if !hi.IsZero() && !hi.After(lo) {
			continue // the Node left the boot before the kernel showed it loaded
		}
		if lo.After(to) {
			return time.Time{}, false
		}
		if hi.IsZero() || hi.After(from) {
			return lo, true
		}
	}
	return time.Time{}, false
}

func containsAll(have, want []string) bool {
	for _, m := range want {
		if !slices.Contains(have, m) {
			return false
		}
	}
	return true
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// workerSeen: a worker pod of node matching a (module, action) reached
// a.State (created, running or succeeded) by until.
func workerSeen(pods []podObs, node string, a Action, until time.Time) bool {
	for _, p := range pods {
		if p.node != node || (a.WorkerAction != "" && p.action != a.WorkerAction) || (a.Module != "" && p.moduleName != a.Module) {
			continue
		}
		var at time.Time
		switch a.State {
		case "created":
			at = p.created
		case "running":
			at = p.runningAt
			if at.IsZero() || (!p.succeededAt.IsZero() && p.succeededAt.Before(at)) {
				at = p.succeededAt
			}
		case "succeeded":
			at = p.succeededAt
		}
		if !at.IsZero() && !at.After(until) {
			return true
		}
	}
	return false
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
	measured := fmt.Sprintf("the first load took %s", seconds(first))
	if slowest > first {
		measured = fmt.Sprintf("the slowest reload so far took %s, the first load %s", seconds(slowest), seconds(first))
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
func (c *caseRun) measureReload(jr waitResult, r Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, nl := range jr.nodes {
		if nl.boot == c.baseBoot[nl.node] || nl.loaded.IsZero() {
			continue
		}
		from := cmp.Or(r.Nodes[nl.node].BootSeen[nl.boot], r.Nodes[nl.node].FirstSeen(nl.boot))
		if from.IsZero() {
			continue
		}
		c.slowestReload = max(c.slowestReload, nl.loaded.Sub(from))
	}
}

// measureFirstLoad records the case's first load from the first reload
// wait that held with every node still in the boot it had when the
// subject started: from the subject's start to the last node's modules
// loaded.
func (c *caseRun) measureFirstLoad(jr waitResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.firstLoad > 0 || c.subjectAt.IsZero() || len(jr.nodes) == 0 {
		return
	}
	var last time.Time
	for _, nl := range jr.nodes {
		if nl.boot != c.baseBoot[nl.node] {
			return // a reboot came first: this is no first load
		}
		last = later(last, nl.loaded)
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
		at, ok := loadedIn(r.Nodes[n], boot, want[n], from, until)
		if !ok {
			return
		}
		last = later(last, at)
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
