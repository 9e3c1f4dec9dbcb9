package scenarios

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/scenarios/observe"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// run is one case: set up its namespace, observer and nodes, start the
// subject, run the timeline, then judge.
func (c *caseRun) run(ctx context.Context) (retErr error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer func() {
		if err := c.teardown(); err != nil && retErr == nil {
			c.log.Error(err, "teardown")
		}
	}()
	// A disruption still in flight when the case ends early (a reboot
	// with wait: false, a failed wait) ends with ctx and is joined before
	// the teardown: the case leaves no goroutine behind.
	defer func() {
		cancel()
		c.dis.wait(c.names)
	}()
	req, err := c.setup(ctx)
	if c.obs != nil {
		defer c.obs.Stop()
	}
	if err != nil {
		return err
	}
	// Capabilities the timeline needs, checked before anything runs.
	if err := c.checkCapabilities(); err != nil {
		return err
	}
	if err := c.provision(ctx); err != nil {
		return err
	}
	// Capabilities of the node set, checked before the subject starts.
	if err := c.checkNodeCapabilities(); err != nil {
		return err
	}
	if err := c.startSubject(ctx, req); err != nil {
		return err
	}
	aborted, err := c.timeline(ctx)
	if err != nil {
		return err
	}
	return c.finalChecks(ctx, aborted)
}

// watchQuiet watches the quiet window (reloadMeter.quiet), then waits
// for the workers the subject started in it, which no-extra-work counts.
func (c *caseRun) watchQuiet(ctx context.Context) (AssertionResult, error) {
	deadline := c.s.Deadline.Resolve(c.grace)
	q := c.reload.quiet(deadline)
	c.obs.Action("", "", fmt.Sprintf("settled: watching %s for work in boots already loaded", HumanDuration(q)))
	err := c.waitFor(ctx, q, func() error { return errNotYet })
	if isFault(err) || ctx.Err() != nil {
		return AssertionResult{}, err
	}
	return c.waitWorkersDone(ctx, deadline)
}

// newClients makes the clients a case uses: the engine's clients when a
// test set them, else clients of rc.
func (e *Engine) newClients(rc *rest.Config) (kubernetes.Interface, dynamic.Interface, error) {
	if e.clients != nil {
		return e.clients()
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	return cs, dyn, err
}

// setup makes the clients and the case's namespace, lets the subject
// prepare, and starts the observer (its watches stop with ctx).
func (c *caseRun) setup(ctx context.Context) (SubjectRequest, error) {
	req := SubjectRequest{Selector: c.selector(), Namespace: c.ns}
	var err error
	if c.cs, c.dyn, err = c.e.newClients(c.e.Cluster.RESTConfig()); err != nil {
		return req, infra("client: %w", err)
	}
	if _, err := c.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns, Labels: c.labels()}}, metav1.CreateOptions{}); err != nil {
		return req, infra("create namespace %s: %w", c.ns, err)
	}
	if p, ok := c.subj.(Preparer); ok {
		if err := p.Prepare(ctx, req); err != nil {
			return req, infra("prepare subject %s: %w", c.subj.Name(), err)
		}
	}
	obs, err := observe.New(observe.Config{Start: c.start, Nodes: c.names, GroundTruth: c.e.Backend,
		Clientset: c.cs, Dynamic: c.dyn, Selector: c.selector(), Namespace: c.ns})
	if err != nil {
		return req, infra("%w", err)
	}
	c.obs = obs
	if err := c.obs.Start(ctx); err != nil {
		return req, infra("%w", err)
	}
	return req, nil
}

// provision starts the case's nodes and waits until each is Ready in the
// boot its kernel is in, and rid of the not-ready taint the node lifecycle
// controller gave it at registration: until kube-controller-manager
// removes it (seconds, more when a storm of nodes registers at once), no
// worker pod may run there, and a subject started earlier would be failed
// for the cluster's delay.
func (c *caseRun) provision(ctx context.Context) error {
	var err error
	c.nodes, err = c.e.Backend.Provision(ctx, nodeapi.ProvisionRequest{Names: c.names, Labels: c.labels(), Timing: c.s.Timing,
		PodLatency: c.s.PodLatency.Resolve(c.grace)})
	if err != nil {
		return infra("provision %d %s nodes: %w", len(c.names), c.e.Backend.Name(), err)
	}
	setup := c.e.SetupTimeout
	if setup == 0 {
		setup = 3 * time.Minute
	}
	err = c.waitFor(ctx, setup, func() error {
		for _, n := range c.names {
			sn := c.obs.Snapshot(n)
			if sn.Ready != string(corev1.ConditionTrue) || sn.TruthBoot == "" || sn.TruthBoot != sn.BootID {
				return fmt.Errorf("node %s not ready: %s", n, sn)
			}
			if len(sn.LifecycleTaints) > 0 {
				return fmt.Errorf("node %s is Ready but still tainted %v by the node lifecycle controller", n, sn.LifecycleTaints)
			}
		}
		return nil
	})
	if err != nil {
		return infra("nodes did not come up: %w", err)
	}
	return nil
}

// startSubject records each node's base boot, writes the
// NodeModulesConfigs and starts the subject.
func (c *caseRun) startSubject(ctx context.Context, req SubjectRequest) error {
	if slices.ContainsFunc(c.s.Actions, func(a Action) bool { return a.Kind == ActDeleteNMC }) {
		if err := c.awaitCollector(ctx); err != nil {
			return err
		}
	}
	c.baseAt = time.Now()
	for _, n := range c.names {
		c.baseBoot[n] = c.obs.Snapshot(n).BootID
		c.spec[n] = slices.Clone(c.s.Modules)
		c.kernel[n] = c.obs.Snapshot(n).KernelVersion
		if err := c.writeNMC(ctx, n, true); err != nil {
			return infra("%w", err)
		}
	}
	c.obs.Action("", "", "NodeModulesConfigs created")
	var err error
	if c.inst, err = c.subj.Start(ctx, req); err != nil {
		return infra("start subject %s: %w", c.subj.Name(), err)
	}
	c.obs.Action("", "", "subject "+c.subj.Name()+" started")
	c.reload.started(time.Now())
	if c.s.PausesSubject() {
		// Its leader Lease, if it names one, from the start: the trace
		// shows who held it before the harness stopped the subject.
		return c.followLeader(ctx)
	}
	return nil
}

// timeline runs the actions in order; aborted is true when a wait failed
// its assertion (the verdict is then known).
func (c *caseRun) timeline(ctx context.Context) (aborted bool, err error) {
	for i, a := range c.s.Actions {
		if err := c.do(ctx, a); err != nil {
			if errors.Is(err, errAborted) {
				c.obs.Action("", "", fmt.Sprintf("timeline aborted at actions[%d] %s", i, a.Kind))
				return true, nil
			}
			return false, fmt.Errorf("actions[%d] %s (line %d): %w", i, a.Kind, a.Line, err)
		}
	}
	return false, nil
}

// finalChecks waits for the end state and runs the assertions.
func (c *caseRun) finalChecks(ctx context.Context, aborted bool) error {
	c.dis.wait(c.names)
	if err := c.dis.failure(); err != nil {
		return err
	}
	if !aborted {
		// Every module expected on a node is loaded in its current boot.
		if err := c.waitReloaded(ctx, "the final check", c.names, c.s.Deadline.Resolve(c.grace), "the scenario's deadline"); err != nil && !errors.Is(err, errAborted) {
			return err
		}
	}
	c.checkPrecondition()
	c.checkReload()
	c.noteFailedResults()
	// The subject's status settles first (it gets SettleTimeout to write
	// it, unless the case failed already); only then is its work counted,
	// so that a load it makes on its way to that status (a second loader
	// pod for one load, say) is seen, whoever the subject is.
	consistency, err := c.checkConsistency(ctx, !c.failed())
	if err != nil {
		return err
	}
	// Work the subject started is judged too: a load it asked for must
	// not go unseen because its pod had not run yet (a node that just
	// came back may take a while to start pods), and a worker that never
	// ends is the subject's failure (workers-finish).
	workers, err := c.waitWorkersDone(ctx, c.s.Deadline.Resolve(c.grace))
	if err != nil {
		return err
	}
	// Settled, a correct subject does nothing more until the next boot:
	// a quiet window shows one that loads again on its own (every few
	// seconds, whatever the boot) in every scenario, however short. A
	// case that failed already needs no more evidence.
	if workers.OK && !c.failed() {
		if workers, err = c.watchQuiet(ctx); err != nil {
			return err
		}
	}
	if err := c.subjectErr(); err != nil {
		return err
	}
	c.checkExtraWork()
	c.results = append(c.results, consistency, workers)
	c.noteFailedResults()
	c.judgedAt = time.Now()
	if err := c.subjectErr(); err != nil {
		return err
	}
	return c.checkUnplanned(c.unplannedBefore(c.rebootMetrics(), c.failureTime()))
}
