package runner

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/bootproof/bootproof/scenarios"
	"github.com/bootproof/bootproof/scenarios/health"
)

// Progress hears about cases as they start and finish.
type Progress interface {
	Started(scenario, subject string)
	Finished(r scenarios.CaseResult)
}

// Config is one run.
type Config struct {
	Cluster   scenarios.Cluster
	Backend   scenarios.Backend
	Subjects  []scenarios.Subject
	Scenarios []*scenarios.Scenario
	// Parallel is how many cases run at once; default 1.
	Parallel int
	// Repeat runs every scenario x subject this many times, each a case
	// of its own (CaseResult.Attempt 1 to Repeat), so a report can tell a
	// failure that comes every time from one that comes by chance;
	// default 1.
	Repeat int
	// MaxNodes caps scenario node counts (0: none).
	MaxNodes int
	// ReloadSLO is every subject's reload service level (see
	// scenarios.Engine.ReloadSLO; 0: each scenario's rule).
	ReloadSLO time.Duration
	// NodeBudget caps the nodes of the cases running at once (0: no
	// cap): a case whose nodes do not fit waits, and smaller cases start
	// before it. A case of more nodes than the budget runs alone.
	NodeBudget int
	Progress   Progress
	// Include, when set, keeps only the cases of scenario x subject it
	// returns true for (calibrate --listed-only); nil keeps every case.
	Include func(s *scenarios.Scenario, subj scenarios.Subject) bool
	// RunID labels everything the cases create (contract.RunLabel); see
	// package internal/runs.
	RunID string
}

// Engine returns the scenario engine for cfg.
func Engine(cfg Config) *scenarios.Engine {
	return &scenarios.Engine{Cluster: cfg.Cluster, Backend: cfg.Backend, MaxNodes: cfg.MaxNodes, RunID: cfg.RunID, ReloadSLO: cfg.ReloadSLO}
}

// ClusterWide is the optional capability of a subject that acts on the
// whole cluster and lives across cases (an exec or deployment subject):
// Setup runs before its first case and Teardown after its last. Its cases
// run in a phase of their own, since it would also reconcile other
// subjects' NodeModulesConfigs, and a case that pauses or restarts it runs
// alone, since the pause would reach every case running at the time.
type ClusterWide interface {
	Setup(ctx context.Context) error
	Teardown() error
}

type job struct {
	i       int
	s       *scenarios.Scenario
	subj    scenarios.Subject
	attempt int // 0 when every case runs once
}

// Run runs every scenario with every subject, Repeat times. Subjects
// scoped to a case (the in-process ones) run first, their cases Parallel
// at once; then each ClusterWide subject in turn, set up once. Results
// are in scenario order, then subject order, then attempt.
func Run(ctx context.Context, cfg Config) scenarios.Results {
	var scoped []job
	wide := map[scenarios.Subject][]job{}
	n := 0
	repeat := max(1, cfg.Repeat)
	for _, s := range cfg.Scenarios {
		for _, subj := range cfg.Subjects {
			if cfg.Include != nil && !cfg.Include(s, subj) {
				continue
			}
			for a := range repeat {
				j := job{i: n, s: s, subj: subj}
				if repeat > 1 {
					j.attempt = a + 1
				}
				n++
				if _, ok := subj.(ClusterWide); ok {
					wide[subj] = append(wide[subj], j)
				} else {
					scoped = append(scoped, j)
				}
			}
		}
	}
	out := make([]scenarios.CaseResult, n)
	eng := Engine(cfg)
	// The cluster's health is part of every verdict. Run returns only
	// once the monitor has stopped.
	monCtx, stopMon := context.WithCancel(ctx)
	var mon sync.WaitGroup
	defer func() {
		stopMon()
		mon.Wait()
	}()
	eng.Health = &health.Monitor{Cluster: cfg.Cluster}
	// A monitor that cannot start leaves every case's cluster health
	// unknown: each case is then an error naming it (WaitFresh).
	mon.Go(func() {
		if err := eng.Health.Start(monCtx); err != nil {
			logr.FromContextOrDiscard(ctx).Error(err, "cluster health monitor")
		}
	})
	runJobs(ctx, cfg, eng, scoped, max(1, cfg.Parallel), out, "")
	for _, subj := range cfg.Subjects {
		jobs, ok := wide[subj]
		if !ok {
			continue
		}
		runClusterWide(ctx, cfg, eng, subj, jobs, out)
	}
	return scenarios.Results{Cases: out}
}

// runClusterWide sets subj up, runs its cases (those that pause it one at
// a time, after the others) and tears it down.
func runClusterWide(ctx context.Context, cfg Config, eng *scenarios.Engine, subj scenarios.Subject, jobs []job, out []scenarios.CaseResult) {
	cw := subj.(ClusterWide)
	log := logr.FromContextOrDiscard(ctx).WithValues("subject", subj.Name())
	if ctx.Err() == nil {
		if err := cw.Setup(ctx); err != nil {
			for _, j := range jobs {
				out[j.i] = notRun(cfg, j, "not run: subject "+subj.Name()+" could not be set up: "+err.Error())
				if cfg.Progress != nil {
					cfg.Progress.Finished(out[j.i])
				}
			}
			if err := cw.Teardown(); err != nil {
				log.Error(err, "subject teardown failed")
			}
			return
		}
	}
	var together, alone []job
	for _, j := range jobs {
		if j.s.PausesSubject() {
			alone = append(alone, j)
		} else {
			together = append(together, j)
		}
	}
	runJobs(ctx, cfg, eng, together, max(1, cfg.Parallel), out, "")
	runJobs(ctx, cfg, eng, alone, 1, out, "ran alone: it pauses or restarts the subject "+subj.Name()+", which every case of this subject shares")
	if err := cw.Teardown(); err != nil {
		log.Error(err, "subject teardown failed")
	}
}

// runJobs runs jobs, par at once and within the node budget, into out;
// note, when set, is added to each result's notes.
func runJobs(ctx context.Context, cfg Config, eng *scenarios.Engine, jobs []job, par int, out []scenarios.CaseResult, note string) {
	// Longest first (scenarios.Cost), so that a parallel run does not end
	// on one long case started last; results stay in scenario order.
	grace := cfg.Cluster.GracePeriod()
	jobs = slices.Clone(jobs)
	slices.SortStableFunc(jobs, func(a, b job) int { return cmp.Compare(b.s.Cost(grace), a.s.Cost(grace)) })
	nodes := make([]int, len(jobs))
	for i, j := range jobs {
		nodes[i] = j.s.Nodes
		if cfg.MaxNodes > 0 {
			nodes[i] = min(nodes[i], cfg.MaxNodes)
		}
	}
	sl := newSlots(par, cfg.NodeBudget)
	var wg sync.WaitGroup
	for len(jobs) > 0 {
		i := sl.take(nodes)
		j, n := jobs[i], nodes[i]
		jobs, nodes = slices.Delete(jobs, i, i+1), slices.Delete(nodes, i, i+1)
		wg.Go(func() {
			defer sl.give(n)
			if ctx.Err() != nil {
				// Interrupted: the remaining cases do not run.
				out[j.i] = notRun(cfg, j, scenarios.NotRunInterrupted+" ("+ctx.Err().Error()+")")
				return
			}
			if cfg.Progress != nil {
				cfg.Progress.Started(j.s.Name, j.subj.Name())
			}
			r := eng.Run(ctx, j.s, j.subj)
			r.Attempt = j.attempt
			if note != "" {
				r.Notes = append(r.Notes, note)
			}
			out[j.i] = r
			if cfg.Progress != nil {
				cfg.Progress.Finished(r)
			}
		})
	}
	wg.Wait()
}

// notRun is the result of a case that did not run.
func notRun(cfg Config, j job, msg string) scenarios.CaseResult {
	exp, _ := scenarios.ExpectationFor(j.s, j.subj)
	return scenarios.CaseResult{Scenario: j.s.Name, Subject: j.subj.Name(), Cluster: cfg.Cluster.Name(),
		Nodes: cfg.Backend.Name(), Expected: exp.Outcome, ExpectedAssertions: exp.Assertions, Observed: scenarios.Error,
		Verdict: scenarios.Error, Message: msg, Assertions: []scenarios.AssertionResult{}, Reboots: []scenarios.RebootMetric{}, Attempt: j.attempt}
}
