package mutate

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/semaphore"

	"github.com/bootproof/bootproof/internal/subject"
	"github.com/bootproof/bootproof/scenarios"
	"github.com/bootproof/bootproof/scenarios/health"
	"github.com/bootproof/bootproof/scenarios/judging"
)

// Status is what became of a mutant.
type Status string

// The statuses.
const (
	// Killed: a case failed through a judged assertion.
	Killed Status = "killed"
	// Survived: every scenario passed, and no triage entry explains it.
	Survived Status = "survived"
	// Equivalent: every scenario passed (or none runs its code), and the
	// triage file says why it cannot change behaviour.
	Equivalent Status = "equivalent"
	// Gap: every scenario passed (or none runs its code), and the triage
	// file names the situation the catalog lacks to see it.
	Gap Status = "gap"
	// Mislabelled: no case failed, but one or more ended in an error
	// (no verdict): a defect the harness reported as its own fault.
	Mislabelled Status = "mislabelled"
	// NotCompiling: the type checker refuses the mutant.
	NotCompiling Status = "not-compiling"
	// Unobservable: the change lies wholly in a message for people.
	Unobservable Status = "unobservable"
	// NotJudged: the mutant could not be judged (its build failed, or the
	// run was interrupted).
	NotJudged Status = "not-judged"
)

// Statuses lists every status, in the order reports show them.
var Statuses = []Status{Killed, Survived, Gap, Equivalent, Mislabelled, NotCompiling, Unobservable, NotJudged}

// Case is one case of a mutant: a scenario's verdict on it.
type Case struct {
	Scenario string `json:"scenario"`
	Verdict  string `json:"verdict"`
	Observed string `json:"observed"`
	// Failed lists the judged assertions it failed.
	Failed     []string `json:"failed,omitempty"`
	Message    string   `json:"message,omitempty"`
	DurationMS int64    `json:"duration_ms"`
	// ErrorBefore is the message of a first attempt that ended in an
	// error (no verdict: an invalid run, a fault of the cluster), after
	// which the case ran once more; Verdict is the second attempt's.
	ErrorBefore string `json:"error_before,omitempty"`
}

// Result is one mutant's outcome.
type Result struct {
	Mutant
	Status Status `json:"status"`
	// KilledBy is the case that killed it.
	KilledBy *Case `json:"killed_by,omitempty"`
	// Cases are the cases judged, in the order they ended.
	Cases []Case `json:"cases,omitempty"`
	// Why explains the status: the triage's reason for an equivalent
	// mutant (Triage names the entry), the compile error, the error of a
	// mutant not judged, the unobservable's reason.
	Why    string `json:"why,omitempty"`
	Triage string `json:"triage,omitempty"`
	// TriagedButKilled: the triage file calls the mutant equivalent, but
	// a case killed it: the entry is wrong. (A kill of a mutant a gap
	// entry matches is only a kill: a gap never raises the score, and an
	// entry naming a function's gap may cover mutants that are killed.)
	TriagedButKilled bool `json:"triaged_but_killed,omitempty"`
	// Unreached: no scenario ran the code it changes (in the unmutated
	// reconciler's coverage), so it was not judged.
	Unreached bool  `json:"unreached,omitempty"`
	BuildMS   int64 `json:"build_ms,omitempty"`
	JudgeMS   int64 `json:"judge_ms,omitempty"`
}

// Config is a mutation run.
type Config struct {
	Set     *Set
	Builder *Builder
	Triage  *Triage
	// Mutants are the mutants to judge (all of Set's, or a sample).
	Mutants   []Mutant
	Cluster   scenarios.Cluster
	Backend   scenarios.Backend
	Scenarios []*scenarios.Scenario
	// RunID labels what the cases create.
	RunID string
	// Parallel is how many cases run at once; default 12.
	Parallel int
	// NodeBudget caps the nodes of the cases running at once (0: none).
	NodeBudget int
	// LogDir receives the reconciler processes' logs of the baseline and
	// of every mutant not killed.
	LogDir string
	// Module is the module's path (the coverage profile names files by
	// it); CoverPackages the import paths whose coverage is measured;
	// CoverageOut, when set, receives the baseline's coverage profile.
	Module        string
	CoverPackages []string
	CoverageOut   string
	// Progress hears of each mutant's result as it comes.
	Progress func(Result)
}

// BaselineError is an unmutated reconciler the catalog does not pass:
// no mutant can be judged by it.
type BaselineError struct{ Cases []Case }

func (e *BaselineError) Error() string {
	msg := "the unmutated reconciler does not pass the catalog, so it cannot judge mutants:"
	for _, c := range e.Cases {
		msg += fmt.Sprintf("\n  %s: %s (%s)", c.Scenario, c.Verdict, c.Message)
	}
	return msg
}

// DefaultParallel is how many cases a mutation run judges at once.
const DefaultParallel = 12

// probeScenarios is how many of a mutant's scenarios run one at a time,
// the likeliest killers first, before the rest run side by side.
const probeScenarios = 3

// caseRunner runs one case: scenarios.Engine.
type caseRunner interface {
	Run(ctx context.Context, s *scenarios.Scenario, subj scenarios.Subject) scenarios.CaseResult
}

// judge is a run in progress.
type judge struct {
	cfg    Config
	eng    caseRunner
	health *health.Monitor
	grace  time.Duration
	slots  *semaphore.Weighted
	nodes  *semaphore.Weighted
	log    logr.Logger

	// cover is what the baseline ran.
	cover *Coverage

	mu    sync.Mutex
	kills map[string]int // scenario -> mutants it killed
}

// Baseline is the unmutated reconciler judged: its cases and what of its
// code they ran.
type Baseline struct {
	Cases    []Case    `json:"cases"`
	Coverage *Coverage `json:"-"`
}

// Run judges the baseline, then every mutant of cfg, and returns their
// results in mutant order; the error is the baseline's or an interruption.
func Run(ctx context.Context, cfg Config) (Baseline, []Result, error) {
	cfg.Parallel = cmp.Or(cfg.Parallel, DefaultParallel)
	mon := &health.Monitor{Cluster: cfg.Cluster}
	j := &judge{cfg: cfg, grace: cfg.Cluster.GracePeriod(), kills: map[string]int{}, log: logr.FromContextOrDiscard(ctx),
		eng: &scenarios.Engine{Cluster: cfg.Cluster, Backend: cfg.Backend, RunID: cfg.RunID, Health: mon}, health: mon,
		slots: semaphore.NewWeighted(int64(cfg.Parallel))}
	budget := int64(cfg.NodeBudget)
	for _, s := range cfg.Scenarios {
		budget = max(budget, int64(s.Nodes))
	}
	j.nodes = semaphore.NewWeighted(budget)
	monCtx, stopMon := context.WithCancel(ctx)
	var monitoring sync.WaitGroup
	defer func() {
		stopMon()
		monitoring.Wait()
	}()
	monitoring.Go(func() {
		if err := j.health.Start(monCtx); err != nil {
			j.log.Error(err, "cluster health monitor")
		}
	})
	baseline, err := j.baseline(ctx)
	if err != nil {
		return baseline, nil, err
	}
	j.cover = baseline.Coverage
	return baseline, j.mutants(ctx), ctx.Err()
}

// baseline judges the unmutated reconciler, built with coverage, by
// every scenario.
func (j *judge) baseline(ctx context.Context) (Baseline, error) {
	var b Baseline
	exe, err := j.cfg.Builder.BuildCovered(ctx, j.cfg.CoverPackages)
	if err != nil {
		return b, err
	}
	defer func() { _ = j.cfg.Builder.Remove(exe) }()
	covDir := filepath.Join(filepath.Dir(exe), "coverage")
	if err := os.MkdirAll(covDir, 0o755); err != nil {
		return b, err
	}
	subj := &subject.Process{SubjectName: "unmutated", Executable: exe, Cluster: j.cfg.Cluster, LogDir: filepath.Join(j.cfg.LogDir, "unmutated"),
		Env: []string{"GOCOVERDIR=" + covDir}}
	b.Cases, _ = j.runAll(ctx, subj, j.cfg.Scenarios, 0, false)
	if ctx.Err() != nil {
		return b, ctx.Err()
	}
	var bad []Case
	for _, c := range b.Cases {
		if c.Verdict != scenarios.Pass {
			bad = append(bad, c)
		}
	}
	if len(bad) > 0 {
		return b, &BaselineError{Cases: bad}
	}
	if b.Coverage, err = ReadCoverage(ctx, covDir, j.cfg.Module); err != nil {
		return b, fmt.Errorf("coverage of the unmutated reconciler: %w", err)
	}
	if j.cfg.CoverageOut != "" {
		if err := copyFile(filepath.Join(covDir, "profile.txt"), j.cfg.CoverageOut); err != nil {
			return b, fmt.Errorf("coverage of the unmutated reconciler: %w", err)
		}
	}
	return b, nil
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o644)
}

// built is a mutant ready to judge, or why it is not.
type built struct {
	m       Mutant
	exe     string
	buildMS int64
	err     error
}

// mutants builds the mutants one at a time, ahead of the judging, and
// judges up to Parallel of them at once.
func (j *judge) mutants(ctx context.Context) []Result {
	todo := make(chan built, 2)
	go func() {
		defer close(todo)
		for _, m := range j.cfg.Mutants {
			if ctx.Err() != nil {
				return
			}
			if m.Unobservable != "" || j.cfg.Set.Check(m) != nil || !j.cover.Reached(m) {
				todo <- built{m: m}
				continue
			}
			start := time.Now()
			exe, err := j.cfg.Builder.Build(ctx, &m)
			todo <- built{m: m, exe: exe, err: err, buildMS: time.Since(start).Milliseconds()}
		}
	}()
	results := make([]Result, len(j.cfg.Mutants))
	index := map[int]int{}
	for i, m := range j.cfg.Mutants {
		index[m.ID] = i
		results[i] = Result{Mutant: m, Status: NotJudged, Why: "the run was interrupted before it"}
	}
	var wg sync.WaitGroup
	workers := semaphore.NewWeighted(int64(j.cfg.Parallel))
	for b := range todo {
		if err := workers.Acquire(ctx, 1); err != nil {
			break
		}
		wg.Go(func() {
			defer workers.Release(1)
			r := j.mutant(ctx, b)
			results[index[b.m.ID]] = r
			if j.cfg.Progress != nil {
				j.cfg.Progress(r)
			}
		})
	}
	wg.Wait()
	for b := range todo { // interrupted: drain what was built
		if b.exe != "" {
			_ = j.cfg.Builder.Remove(b.exe)
		}
	}
	return results
}

// mutant judges one mutant.
func (j *judge) mutant(ctx context.Context, b built) Result {
	r := Result{Mutant: b.m, BuildMS: b.buildMS}
	switch {
	case b.m.Unobservable != "":
		r.Status, r.Why = Unobservable, b.m.Unobservable
		return r
	case b.exe == "" && b.err == nil && j.cfg.Set.Check(b.m) != nil:
		r.Status, r.Why = NotCompiling, j.cfg.Set.Check(b.m).Error()
		return r
	case b.exe == "" && b.err == nil:
		r.Unreached = true
		r.Status, r.Why = Survived, "no scenario runs the code it changes (the unmutated reconciler's coverage)"
		if e := j.cfg.Triage.Lookup(b.m, true); e != nil {
			r.Status, r.Why, r.Triage = triaged(e), e.Why, e.Where(j.cfg.Triage)
		}
		return r
	case b.err != nil:
		r.Status, r.Why = NotJudged, b.err.Error()
		return r
	}
	defer func() { _ = j.cfg.Builder.Remove(b.exe) }()
	start := time.Now()
	subj := &subject.Process{SubjectName: fmt.Sprintf("mutant-%d", b.m.ID), Executable: b.exe, Cluster: j.cfg.Cluster,
		LogDir: filepath.Join(j.cfg.LogDir, fmt.Sprintf("mutant-%d", b.m.ID))}
	order := j.order()
	cases, kill := j.runAll(ctx, subj, order, probeScenarios, true)
	r.Cases, r.JudgeMS = cases, time.Since(start).Milliseconds()
	entry := j.cfg.Triage.Lookup(b.m, false)
	switch {
	case kill != nil:
		r.Status, r.KilledBy = Killed, kill
		r.TriagedButKilled = contradicts(entry)
		j.credit(kill.Scenario)
	case ctx.Err() != nil:
		r.Status, r.Why = NotJudged, "the run was interrupted"
	case slices.ContainsFunc(cases, func(c Case) bool { return c.Verdict != scenarios.Pass }):
		r.Status = Mislabelled
		for _, c := range cases {
			if c.Verdict != scenarios.Pass {
				r.Why += fmt.Sprintf("%s: %s (%s); ", c.Scenario, c.Verdict, c.Message)
			}
		}
	case entry != nil:
		r.Status, r.Why, r.Triage = triaged(entry), entry.Why, entry.Where(j.cfg.Triage)
	default:
		r.Status = Survived
	}
	if r.Status == Killed {
		_ = os.RemoveAll(subj.LogDir)
	}
	return r
}

// contradicts reports whether a kill contradicts the triage entry that
// matches the mutant: only an equivalent one, whose claim (the change
// cannot alter behaviour) the kill disproves.
func contradicts(e *TriageEntry) bool { return e != nil && e.Kind() == KindEquivalent }

// triaged is the status of a survivor the entry explains.
func triaged(e *TriageEntry) Status {
	if e.Kind() == KindGap {
		return Gap
	}
	return Equivalent
}

// order is the scenarios, those that killed most so far first, the
// cheaper first among equals.
func (j *judge) order() []*scenarios.Scenario {
	j.mu.Lock()
	kills := maps.Clone(j.kills)
	j.mu.Unlock()
	out := slices.Clone(j.cfg.Scenarios)
	slices.SortStableFunc(out, func(a, b *scenarios.Scenario) int {
		if c := cmp.Compare(kills[b.Name], kills[a.Name]); c != 0 {
			return c
		}
		return cmp.Compare(a.Cost(j.grace), b.Cost(j.grace))
	})
	return out
}

func (j *judge) credit(scenario string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.kills[scenario]++
}

// runAll runs subj in the scenarios: the first probe one at a time, then
// the rest side by side; with stopAtKill, a kill ends it (the cases
// still running are stopped and left out). It returns the cases that
// ended, and the kill.
func (j *judge) runAll(ctx context.Context, subj scenarios.Subject, order []*scenarios.Scenario, probe int, stopAtKill bool) ([]Case, *Case) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var cases []Case
	var kill *Case
	one := func(s *scenarios.Scenario) {
		c, ok := j.runCase(ctx, s, subj)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		cases = append(cases, c)
		if stopAtKill && kill == nil && isKill(c) {
			kill = &c
			cancel()
		}
	}
	for i, s := range order {
		if i >= probe || ctx.Err() != nil {
			break
		}
		one(s)
	}
	var wg sync.WaitGroup
	for _, s := range order[min(probe, len(order)):] {
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() { one(s) })
	}
	wg.Wait()
	return cases, kill
}

// runCase runs one case within the run's slots and node budget; ok is
// false when ctx ended before or during it (it is then no verdict).
func (j *judge) runCase(ctx context.Context, s *scenarios.Scenario, subj scenarios.Subject) (Case, bool) {
	if err := j.slots.Acquire(ctx, 1); err != nil {
		return Case{}, false
	}
	defer j.slots.Release(1)
	if err := j.nodes.Acquire(ctx, int64(s.Nodes)); err != nil {
		return Case{}, false
	}
	defer j.nodes.Release(int64(s.Nodes))
	res := j.eng.Run(ctx, s, subj)
	if ctx.Err() != nil {
		return Case{}, false
	}
	// An error is no measurement (on a loaded machine, most often a
	// simulated kubelet whose Lease renewals came late: an invalid run):
	// the case runs once more, whatever the mutant and the scenario, and
	// only a second error stands (a mutant whose every attempt errs is
	// mislabelled).
	var before string
	if res.Verdict == scenarios.Error {
		before = res.Message
		res = j.eng.Run(ctx, s, subj)
		if ctx.Err() != nil {
			return Case{}, false
		}
	}
	c := Case{Scenario: s.Name, Verdict: res.Verdict, Observed: res.Observed, Message: res.Message, DurationMS: res.DurationMS, ErrorBefore: before}
	for _, a := range res.Assertions {
		if !a.OK && slices.Contains(judging.Judged, a.Name) {
			c.Failed = append(c.Failed, a.Name)
		}
	}
	return c, true
}

// isKill reports whether a case kills its mutant: the verdict is fail
// through a judged assertion (the mutant is judged with the correct
// reconciler's expectations, so fail means it failed one).
func isKill(c Case) bool {
	return c.Verdict == scenarios.Fail && c.Observed == scenarios.Fail && len(c.Failed) > 0
}
