package runner

import (
	"context"
	"sync"

	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/bootproof/bootproof/fakes"
	"github.com/bootproof/bootproof/scenarios"
)

// Progress hears about cases as they start and finish.
type Progress interface {
	Started(scenario, subject string)
	Finished(r scenarios.CaseResult)
}

// Config is one run.
type Config struct {
	Cluster   scenarios.Cluster
	Backend   scenarios.NodeBackend
	Subjects  []scenarios.Subject
	Scenarios []*scenarios.Scenario
	// Parallel is how many cases run at once; default 1.
	Parallel int
	// MaxNodes caps scenario node counts (0: none).
	MaxNodes int
	Progress Progress
}

// ReadTruth decodes the ground truth the lightweight kubelet (simulated
// or in a VM) publishes on its Lease.
func ReadTruth(l *coordinationv1.Lease) (scenarios.Truth, bool, error) {
	g, err := fakes.ReadGroundTruth(l)
	if err != nil || g == nil {
		return scenarios.Truth{}, false, err
	}
	t := scenarios.Truth{BootID: g.BootID, KernelVersion: g.KernelVersion, Modules: map[string]time.Time{}}
	for _, m := range g.Modules {
		t.Modules[m.Name] = m.LoadedAt
	}
	return t, true, nil
}

// Engine returns the scenario engine for cfg.
func Engine(cfg Config) *scenarios.Engine {
	return &scenarios.Engine{Cluster: cfg.Cluster, Backend: cfg.Backend, ReadTruth: ReadTruth, MaxNodes: cfg.MaxNodes}
}

// Run runs every scenario with every subject. Results are in scenario
// order, then subject order.
func Run(ctx context.Context, cfg Config) scenarios.Results {
	type job struct {
		i    int
		s    *scenarios.Scenario
		subj scenarios.Subject
	}
	var jobs []job
	for _, s := range cfg.Scenarios {
		for _, subj := range cfg.Subjects {
			jobs = append(jobs, job{len(jobs), s, subj})
		}
	}
	out := make([]scenarios.CaseResult, len(jobs))
	eng := Engine(cfg)
	par := max(1, cfg.Parallel)
	ch := make(chan job)
	var wg sync.WaitGroup
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				if ctx.Err() != nil {
					// Interrupted: the remaining cases do not run.
					out[j.i] = scenarios.CaseResult{Scenario: j.s.Name, Subject: j.subj.Name(), Cluster: cfg.Cluster.Name(),
						Nodes: cfg.Backend.Name(), Expected: j.s.Expect[j.subj.Name()], Observed: scenarios.Error,
						Verdict: scenarios.Error, Message: "not run: interrupted (" + ctx.Err().Error() + ")"}
					continue
				}
				if cfg.Progress != nil {
					cfg.Progress.Started(j.s.Name, j.subj.Name())
				}
				r := eng.Run(ctx, j.s, j.subj)
				out[j.i] = r
				if cfg.Progress != nil {
					cfg.Progress.Finished(r)
				}
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	return scenarios.Results{Cases: out}
}
