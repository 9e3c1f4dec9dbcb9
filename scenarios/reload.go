package scenarios

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/bootproof/bootproof/scenarios/judging"
)

// ReloadBound is the default service level of a reload: how soon after
// its window opened a subject's reload must come not to be late (the
// reload-slo assertion). It is the same for every subject: what a case
// observes depends only on what the subject did, never on what it is
// expected to do, and the bound only judges, it never ends a wait. A
// reload wait runs until every module is loaded or its timeout (its
// own, else the scenario's deadline) ends: a reload that never comes by
// then is missed (the reload assertion); one that comes after the
// service level is late (reload-slo). A subject may be given a fixed
// service level instead (Engine.ReloadSLO, ReloadSLOSetter); without
// one, once the case's first load was measured (the subject started
// with the NodeModulesConfigs written -> every module of the first wait
// loaded on every node, each in the boot it had at the start), a reload
// is late after FirstLoadTimes x the slowest load the case measured of
// this subject so far (that first load, or a reload an earlier wait saw:
// its window's opening -> the node's modules loaded in its new boot), never under
// AtLeast; before the first load was measured, after AtLeast. The floor
// is what a correct operator meets after controller-runtime's default
// per-item backoff (5 ms doubling: 10.24 s after eleven failed tries in
// a row). The window opens when the subject can act: after the
// timeline's resume or restart of the subject (the wait follows it), once
// every node's Node status shows the new boot of its last reboot
// (awaitNewBoots) and, after a restart, an instance of a subject that
// elects a leader holds its Lease again (awaitLeader, LeaderLeaser). A
// subject whose reloads grow slower (backoff built up by earlier
// errors, a restart of its own) is measured doing so: each reload it
// made widens the next one's service level, and one that misses a
// reboot never reloads, so it widens nothing. A timeline with no reload
// wait before its first reboot (worker waits, sleeps) has its first
// load measured from the kernels' ground truth at its next reload wait
// (caseRun.measureFirstLoadTruth).
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
	DefaultReloadAtLeast = 15 * time.Second
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
// least 15s".
func (b ReloadBound) String() string {
	b = b.withDefaults()
	return fmt.Sprintf("%s x the slowest load measured, at least %s", strconv.FormatFloat(b.FirstLoadTimes, 'f', -1, 64), b.AtLeast)
}

// Resolve returns the service level of a reload in a case whose slowest
// load measured so far took load (0: none measured yet, the floor), with
// grace the grace period.
func (b ReloadBound) Resolve(load, grace time.Duration) time.Duration {
	b = b.withDefaults()
	bound := time.Duration(math.Min(b.FirstLoadTimes*float64(load), float64(math.MaxInt64)))
	return max(b.AtLeast.Resolve(grace), bound)
}

// ReloadSLOSetter is the optional capability of a subject that states
// its own reload service level (a subject file's reloadSLO): ok false
// when it states none. It replaces Engine.ReloadSLO for that subject.
type ReloadSLOSetter interface {
	ReloadSLO() (time.Duration, bool)
}

// fixedSLO is the subject's fixed service level and who set it (0: the
// scenario's ReloadBound).
func (c *caseRun) fixedSLO() (time.Duration, string) {
	if s, ok := c.subj.(ReloadSLOSetter); ok {
		if d, ok := s.ReloadSLO(); ok && d > 0 {
			return d, "the subject's reloadSLO"
		}
	}
	if c.e.ReloadSLO > 0 {
		return c.e.ReloadSLO, "--reload-slo"
	}
	return 0, ""
}

// reloadMeter is the case's side of the reload service level: when the
// subject started, how long its first load took and the slowest reload a
// held wait measured, and the levels and result they give. Its numbers are
// what the subject did, whatever it is expected to do. It has its own
// lock, never held while caseRun's is taken.
type reloadMeter struct {
	mu sync.Mutex
	// subjectAt is when the subject was started, with the
	// NodeModulesConfigs written; firstLoad is how long the case's first
	// load took from then (0: not yet).
	subjectAt time.Time
	firstLoad time.Duration
	// slowestReload is the slowest reload a held reload wait measured so
	// far (its window's opening -> the node's modules loaded in its new
	// boot).
	slowestReload time.Duration
}

// QuietAtLeast is the shortest quiet window of a case's final check,
// and how much longer than the slowest load it is.
const QuietAtLeast = 3 * time.Second

// quiet is how long a case's final check, once the subject's status has
// settled and its workers have ended, watches for more work in boots
// already loaded (a reconciler that loads again every few seconds,
// whatever the boot): QuietAtLeast beyond the slowest load the case
// measured (the first load or a reload), so that a loop whose loads take
// that long still starts one inside it; at most the scenario's deadline.
// It depends on what the subject did only.
func (m *reloadMeter) quiet(deadline time.Duration) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return min(deadline, QuietAtLeast+max(m.firstLoad, m.slowestReload))
}

// started records when the subject was started.
func (m *reloadMeter) started(at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.subjectAt = at
}

// firstLoadFacts returns the subject's start (zero: not started) and the
// measured first load (0: not yet).
func (m *reloadMeter) firstLoadFacts() (time.Time, time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.subjectAt, m.firstLoad
}

// slo is the service level of a reload wait starting now: fixed (set by
// setBy) when the subject has one, else the scenario's bound over the
// slowest load measured so far (grace: the grace period). why says
// which, for messages.
func (m *reloadMeter) slo(bound ReloadBound, grace, fixed time.Duration, setBy string) (time.Duration, string) {
	if fixed > 0 {
		return fixed, "set by " + setBy
	}
	m.mu.Lock()
	first, slowest := m.firstLoad, m.slowestReload
	m.mu.Unlock()
	if first <= 0 {
		return bound.Resolve(0, grace), fmt.Sprintf("%s; no first load measured yet", bound)
	}
	measured := fmt.Sprintf("the first load took %s", HumanDuration(first))
	if slowest > first {
		measured = fmt.Sprintf("the slowest reload so far took %s, the first load %s", HumanDuration(slowest), HumanDuration(first))
	}
	return bound.Resolve(max(first, slowest), grace), fmt.Sprintf("%s; %s", bound, measured)
}

// reloaded records the slowest reload of a held reload wait that
// started at start: for each node in another boot than base, the one it
// had at the start, from its window's opening (the new boot first
// visible, or the wait's start when later: judging.Record.ReloadWindow,
// as reload-slo measures it) to its modules loaded in it.
func (m *reloadMeter) reloaded(jr judging.WaitResult, r judging.Record, base map[string]string, start time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, nl := range jr.Nodes {
		if nl.Boot == base[nl.Node] || nl.Loaded.IsZero() {
			continue
		}
		if r.Visible(nl.Node, nl.Boot).IsZero() {
			continue
		}
		m.slowestReload = max(m.slowestReload, r.ReloadWindow(nl, start))
	}
}

// firstLoaded records the case's first load from the first reload wait
// that held with every node still in its boot of base: from the
// subject's start to the last node's modules loaded.
func (m *reloadMeter) firstLoaded(jr judging.WaitResult, base map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.firstLoad > 0 || m.subjectAt.IsZero() || len(jr.Nodes) == 0 {
		return
	}
	var last time.Time
	for _, nl := range jr.Nodes {
		if nl.Boot != base[nl.Node] {
			return // a reboot came first: this is no first load
		}
		last = judging.Later(last, nl.Loaded)
	}
	m.firstLoad = max(last.Sub(m.subjectAt), time.Millisecond)
}

// firstLoadedIn records the case's first load when no reload wait
// measured it, from the kernels' ground truth in r: the time from the
// subject's start until every node of base showed want's modules in its
// boot of base, by until; nothing when a node never did (a reboot came
// first).
func (m *reloadMeter) firstLoadedIn(r judging.Record, base map[string]string, want map[string][]string, until time.Time) {
	from, first := m.firstLoadFacts()
	if first > 0 || from.IsZero() {
		return
	}
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
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.firstLoad == 0 {
		m.firstLoad = max(last.Sub(from), time.Millisecond)
	}
}

// result reports the service level a case ran with: bound, or fixed
// (set by setBy) when the subject had one; deadline is the scenario's
// deadline (grace: the grace period).
func (m *reloadMeter) result(bound ReloadBound, deadline, grace, fixed time.Duration, setBy string) *ReloadBoundResult {
	m.mu.Lock()
	first, slowest := m.firstLoad, m.slowestReload
	m.mu.Unlock()
	b := &ReloadBoundResult{Rule: bound.String(), FirstLoadMS: -1, BoundMS: bound.Resolve(0, grace).Milliseconds(), DeadlineMS: deadline.Milliseconds()}
	if fixed > 0 {
		b.Rule, b.BoundMS, b.FixedBy = HumanDuration(fixed), fixed.Milliseconds(), setBy
	}
	if first > 0 {
		b.FirstLoadMS = first.Milliseconds()
		if slowest > 0 {
			b.SlowestReloadMS = slowest.Milliseconds()
		}
		if fixed <= 0 {
			b.FirstBoundMS = bound.Resolve(first, grace).Milliseconds()
			b.BoundMS = bound.Resolve(max(first, slowest), grace).Milliseconds()
		}
	}
	return b
}

// measureFirstLoadTruth measures the case's first load from the kernels'
// ground truth when no reload wait measured it: a timeline that starts
// with worker waits or a sleep (a race scenario pausing the subject
// mid-load) still loads every module once. What it measures, like a
// reload wait's, is only what the subject did.
func (c *caseRun) measureFirstLoadTruth(until time.Time) {
	if from, first := c.reload.firstLoadFacts(); first > 0 || from.IsZero() {
		return
	}
	c.mu.Lock()
	want := make(map[string][]string, len(c.baseBoot))
	for n := range c.baseBoot {
		for _, m := range c.spec[n] {
			want[n] = append(want[n], m.ModuleName)
		}
	}
	c.mu.Unlock()
	base := c.baseBoots()
	if len(base) == 0 {
		return
	}
	c.reload.firstLoadedIn(c.obs.Record(), base, want, until)
}

// baseBoots copies each node's boot at the case's start.
func (c *caseRun) baseBoots() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.baseBoot)
}
