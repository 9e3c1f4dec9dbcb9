package scenarios

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/scenarios/health"
	"github.com/bootproof/bootproof/scenarios/judging"
	"github.com/bootproof/bootproof/scenarios/observe"
	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Backend is a node backend as the engine needs it: it provisions nodes
// and reads the ground truth they publish.
type Backend interface {
	nodeapi.NodeBackend
	observe.GroundTruthReader
}

// Engine runs scenarios against a cluster, a node backend and a subject.
type Engine struct {
	Cluster Cluster
	Backend Backend
	// MaxNodes caps a scenario's node count (0: no cap), e.g. to run
	// reboot-storm smaller in tests.
	MaxNodes int
	// SetupTimeout bounds provisioning: nodes Ready and publishing truth.
	SetupTimeout time.Duration
	// SettleTimeout bounds the final wait for the subject's status to
	// match ground truth; default 30s.
	SettleTimeout time.Duration
	// Health, when set, watches the cluster: a fault overlapping a case
	// makes it an error.
	Health *health.Monitor
	// RunID, when set, labels (contract.RunLabel) every object the engine creates
	// and every node it provisions, so the run can delete them at its end
	// and a cleanup can find them after a crash.
	RunID string
	// ReloadSLO, when set, is every subject's reload service level (a
	// reload later than it after its window opened fails reload-slo),
	// unless the subject states its own (ReloadSLOSetter); 0: the
	// scenario's ReloadBound.
	ReloadSLO time.Duration

	// clients, set by tests, replaces the clients of Cluster.RESTConfig
	// (fake clientsets).
	clients func() (kubernetes.Interface, dynamic.Interface, error)
	// collectorReady: the cluster's garbage collector was seen acting on
	// NodeModulesConfig owners (awaitCollector).
	collectorReady atomic.Bool
}

type caseRun struct {
	e      *Engine
	s      *Scenario
	subj   Subject
	log    logr.Logger
	id     string
	ns     string
	names  []string
	grace  time.Duration
	cs     kubernetes.Interface
	dyn    dynamic.Interface
	obs    *observe.Observer
	nodes  nodeapi.NodeSet
	inst   SubjectInstance
	start  time.Time
	baseAt time.Time // every node Ready and publishing: precondition window opens
	// baseBoot is each node's boot at baseAt.
	baseBoot map[string]string
	// judgedAt is when the final checks ended.
	judgedAt time.Time
	results  []AssertionResult

	mu     sync.Mutex
	spec   map[string][]Module // the NMC spec the engine wrote, per node
	kernel map[string]string   // kernel version per node for the NMC spec
	// nmcGone marks the nodes whose NodeModulesConfig delete-nmc deleted
	// (and no spec action wrote again).
	nmcGone map[string]bool

	// dis is the ledger of the case's node disruptions.
	dis disruptions
	// reload measures the subject's loads for the reload service level
	// (ReloadBound).
	reload reloadMeter
	// waits is every wait the timeline and the final check made, in order.
	waits []judging.Wait
	// failedAt is when the case first knew of a failed judged assertion.
	failedAt time.Time
	// pausedAt is when the harness last stopped the subject (its
	// pause done), resumedAt when it last started it again.
	pausedAt, resumedAt time.Time
	// leader follows the subject's leader Lease (LeaderLeaser) once
	// it is known, in a case that stops the subject; nil otherwise.
	leader    *LeaseFollower
	leaderRef LeaseRef
}

// Run runs one scenario with one subject and returns its result; it never
// panics on a subject's failure and always tears the case down.
func (e *Engine) Run(ctx context.Context, s *Scenario, subj Subject) CaseResult {
	start := time.Now()
	grace := e.Cluster.GracePeriod()
	res := CaseResult{Scenario: s.Name, Description: strings.TrimSpace(s.Description), Labels: s.Labels,
		Subject: subj.Name(), Cluster: e.Cluster.Name(), Nodes: e.Backend.Name(), GracePeriodMS: grace.Milliseconds(), StartedAt: start}
	exp, ok := ExpectationFor(s, subj)
	res.Expected, res.ExpectedAssertions = exp.Outcome, exp.Assertions
	if !ok {
		res.Verdict, res.Observed = Skipped, Skipped
		res.Message = fmt.Sprintf("scenario %s states no expectation for subject %s", s.Name, subj.Name())
		return res
	}
	n := s.Nodes
	if e.MaxNodes > 0 && n > e.MaxNodes {
		n = e.MaxNodes
		if reason := capDropsTargets(s, n); reason != "" {
			res.Verdict, res.Observed, res.NodeCount = Skipped, Skipped, n
			res.Message = reason
			return res
		}
	}
	res.NodeCount = n
	c := &caseRun{e: e, s: s, subj: subj, grace: grace, start: start, id: newID(),
		log:  logr.FromContextOrDiscard(ctx).WithValues("scenario", s.Name, "subject", subj.Name()),
		spec: map[string][]Module{}, kernel: map[string]string{}, baseBoot: map[string]string{}, nmcGone: map[string]bool{}}
	c.ns = "bp-" + c.id
	for i := range n {
		name := fmt.Sprintf("bp-%s-n%d", c.id, i)
		c.names = append(c.names, name)
	}
	c.log = c.log.WithValues("case", c.id)
	err := c.run(ctx)
	failedAt := c.failureTime()
	err = c.laterFault(err, failedAt, &res)
	if err = c.ownStop(err, failedAt); err == errAborted {
		failedAt = c.failureTime()
	}
	if ctx.Err() == nil && !c.baseAt.IsZero() {
		// A cluster fault overlapping the case stands before any verdict
		// (and before the errors it caused); one after an assertion
		// failed cannot have caused that failure, which stands.
		until := c.judgedAt
		if until.IsZero() {
			until = time.Now()
		}
		if !failedAt.IsZero() && failedAt.Before(until) {
			until = failedAt
		}
		if herr := c.e.Health.WaitFresh(ctx, until); herr != nil {
			err = &clusterFaultError{herr.Error()}
		} else if cf := c.checkCluster(until); cf != nil {
			err = cf
		} else if gap := c.checkObservation(until); gap != nil {
			err = gap
		}
	}
	c.traceFaults()
	if ctx.Err() != nil {
		// Interrupted: whatever the checks saw on a cancelled context is
		// not a verdict.
		err, c.results = &interruptedError{ctx.Err()}, nil
	}
	res.Assertions = c.results
	if c.obs != nil {
		res.Trace = c.obs.Trace()
		res.Reboots = c.rebootMetrics()
	}
	if at, _ := c.reload.firstLoadFacts(); !at.IsZero() {
		fixed, setBy := c.fixedSLO()
		res.ReloadBound = c.reload.result(c.s.ReloadBound, c.s.Deadline.Resolve(c.grace), c.grace, fixed, setBy)
	}
	// The expectation is read here, and only here: nothing the case
	// observed depended on it.
	d := decide(s.Name, subj.Name(), exp, c.results, err)
	res.Observed, res.Verdict, res.Message = d.Observed, d.Verdict, d.Message
	res.DurationMS = time.Since(start).Milliseconds()
	return res
}

// laterFault returns err, or nil when err is a fault of the subject's
// found after a judged assertion had failed (failedAt): the subject
// failed, whatever it did next, and the fault becomes a note of res.
func (c *caseRun) laterFault(err error, failedAt time.Time, res *CaseResult) error {
	var subjErr *subjectError
	if err == nil || failedAt.IsZero() || !errors.As(err, &subjErr) {
		return err
	}
	res.Notes = append(res.Notes, fmt.Sprintf("after an assertion failed (at %.1fs), the subject faulted too: %s", failedAt.Sub(c.start).Seconds(), subjErr.Error()))
	return nil
}

// ownStop turns a stop of the subject's own doing (OwnFault), seen
// before any judged assertion failed, into the failure of subject-runs,
// at the time the case saw it, and returns errAborted; any other error it
// returns unchanged. A cluster fault before the stop (an API server down
// long enough for the operator to give up its leadership and exit, say)
// still makes the case an error (see Run): the operator's exit was then
// not its own defect.
func (c *caseRun) ownStop(err error, failedAt time.Time) error {
	var subjErr *subjectError
	if err == nil || !failedAt.IsZero() || !errors.As(err, &subjErr) || !subjErr.own() {
		return err
	}
	c.results = append(c.results, judging.JudgeSubjectRuns(subjErr.Error(), subjErr.at.Sub(c.start)))
	c.noteFailure(subjErr.at)
	if c.obs != nil {
		c.obs.Action("", "", judging.AssertSubjectRuns+": "+subjErr.Error())
	}
	return errAborted
}

// decide is the case's verdict (judging.Decide) on its assertions and
// the error it ended with.
func decide(scenario, subject string, exp Expectation, results []AssertionResult, err error) judging.Decision {
	return judging.Decide(judging.Case{Scenario: scenario, Subject: subject, Expected: judging.Expectation(exp), Results: results, Fault: fault(err)})
}

// fault classifies the error a case ended with for judging.Decide: nil
// when the case is judged on its assertions (no error, or a timeline
// aborted after a failed assertion).
func fault(err error) *judging.Fault {
	var skip *skipError
	var subjErr *subjectError
	var intr *interruptedError
	var invalid *invalidRunError
	var cluster *clusterFaultError
	switch {
	case errors.As(err, &cluster):
		return &judging.Fault{Verdict: Error, Message: cluster.msg}
	case errors.As(err, &intr):
		return &judging.Fault{Verdict: Error, Message: NotRunInterrupted + " (" + intr.err.Error() + ")"}
	case errors.As(err, &invalid):
		return &judging.Fault{Verdict: Error, Message: "invalid run: " + invalid.msg}
	case errors.As(err, &skip):
		return &judging.Fault{Verdict: Skipped, Message: skip.reason}
	case errors.As(err, &subjErr):
		return &judging.Fault{Verdict: Error, Message: "subject fault: " + subjErr.Error()}
	case err == nil || errors.Is(err, errAborted):
		return nil
	}
	return &judging.Fault{Verdict: Error, Message: "infrastructure fault: " + err.Error()}
}

// capDropsTargets says why running s on only n of its nodes would change
// what it tests (an action aimed at a node beyond the cap), or "".
func capDropsTargets(s *Scenario, n int) string {
	for i, a := range s.Actions {
		for _, idx := range a.On.Indexes {
			if idx >= n {
				return fmt.Sprintf("not run: the run caps scenarios at %d nodes, but actions[%d] %s (line %d) targets node %d of %d; "+
					"without it the scenario would not test what it claims", n, i, a.Kind, a.Line, idx, s.Nodes)
			}
		}
	}
	return ""
}

func newID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (c *caseRun) selector() map[string]string { return map[string]string{contract.CaseLabel: c.id} }

// labels are the labels of the objects the case creates: its selector,
// and the run's label when the engine has a run ID.
func (c *caseRun) labels() map[string]string {
	l := c.selector()
	if c.e.RunID != "" {
		l[contract.RunLabel] = c.e.RunID
	}
	return l
}

// waitWorkersDone waits up to timeout until no worker pod of the case is
// pending or running, records in the trace what is still active, and
// judges workers-finish: a worker still active after timeout is the
// subject's fault. The error is a fault or an interruption only.
func (c *caseRun) waitWorkersDone(ctx context.Context, timeout time.Duration) (AssertionResult, error) {
	if active := c.obs.ActiveWorkers(); len(active) > 0 {
		c.obs.Action("", "", fmt.Sprintf("waiting for %d worker pod(s) to finish before judging: %s", len(active), strings.Join(active, ", ")))
	} else {
		return judging.JudgeWorkersFinish(nil, timeout), nil
	}
	err := c.waitFor(ctx, timeout, func() error {
		if active := c.obs.ActiveWorkers(); len(active) > 0 {
			return fmt.Errorf("worker pods still active: %s", strings.Join(active, ", "))
		}
		return nil
	})
	if isFault(err) || ctx.Err() != nil {
		return AssertionResult{}, err // interrupted: the engine says so
	}
	res := judging.JudgeWorkersFinish(c.obs.ActiveWorkerDetails(), timeout)
	if !res.OK {
		c.obs.Action("", "", "workers-finish: "+res.Message)
	}
	return res, nil
}

// noteFailure records t as when the case first knew of a failed judged
// assertion, unless an earlier one is known: a fault after it does not
// undo the verdict (see Engine.Run).
func (c *caseRun) noteFailure(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failedAt.IsZero() {
		c.failedAt = t
	}
}

// noteFailedResults notes now as a failure's time when a judged
// assertion among the results has failed.
func (c *caseRun) noteFailedResults() {
	for _, r := range c.results {
		if !r.OK && slices.Contains(judging.Judged, r.Name) {
			c.noteFailure(time.Now())
			return
		}
	}
}

// failureTime is when the case first knew of a failed judged assertion
// (zero when none failed).
func (c *caseRun) failureTime() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failedAt
}

func (c *caseRun) failed() bool {
	for _, r := range c.results {
		if !r.OK {
			return true
		}
	}
	return false
}

// checkCapabilities skips the case, before nodes are provisioned, when
// the subject lacks what an action needs.
func (c *caseRun) checkCapabilities() error {
	return c.checkNeeds(func(s actionSpec) func(*caseRun, Action) error { return s.subjectNeeds })
}

// checkNodeCapabilities skips the case, before the timeline runs, when
// the provisioned node set lacks what an action needs.
func (c *caseRun) checkNodeCapabilities() error {
	return c.checkNeeds(func(s actionSpec) func(*caseRun, Action) error { return s.nodeNeeds })
}

// NodeSkipReason says why a case of s cannot run on the node set ns of
// the backend named backend, or "" when it can: an action needs a
// capability ns lacks, or ns refuses a reboot the timeline asks for (a
// reboot mode it does not list). It is the engine's own check: a case
// is skipped with this reason once its nodes are provisioned. grace
// resolves durations given in g.
func NodeSkipReason(s *Scenario, backend string, ns nodeapi.NodeSet, grace time.Duration) string {
	c := &caseRun{e: &Engine{Backend: backendName(backend)}, s: s, nodes: ns, grace: grace}
	var skip *skipError
	if err := c.checkNodeCapabilities(); errors.As(err, &skip) {
		return skip.reason
	}
	return ""
}

// backendName is a NodeBackend that only has a name (NodeSkipReason).
type backendName string

func (b backendName) Name() string { return string(b) }
func (b backendName) Provision(context.Context, nodeapi.ProvisionRequest) (nodeapi.NodeSet, error) {
	return nil, errors.New("backend " + string(b) + " provisions nothing here")
}
func (b backendName) ReadGroundTruth(*coordinationv1.Lease) (*contract.GroundTruth, error) {
	return nil, errors.New("backend " + string(b) + " reads no ground truth here")
}

func (c *caseRun) checkNeeds(which func(actionSpec) func(*caseRun, Action) error) error {
	for _, a := range c.s.Actions {
		if needs := which(actionTable[a.Kind]); needs != nil {
			if err := needs(c, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// rebootRequest resolves a reboot action against the grace period.
func (c *caseRun) rebootRequest(a Action) nodeapi.RebootRequest {
	mode := a.Mode
	if mode == "" {
		mode = nodeapi.RebootReset
	}
	return nodeapi.RebootRequest{Mode: mode, Downtime: a.Downtime.Resolve(c.grace), NotReadyFor: a.Startup.NotReadyFor.Resolve(c.grace),
		KernelVersion: a.KernelVersion}
}

// waitFor polls check on every observation until it passes or timeout.
func (c *caseRun) waitFor(ctx context.Context, timeout time.Duration, check func() error) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		changed := c.obs.Changed()
		if err := c.subjectErr(); err != nil {
			return err
		}
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-deadline.C:
			return fmt.Errorf("not within %s: %w", timeout, err)
		case <-changed:
		case <-tick.C:
		}
	}
}

func (c *caseRun) targets(t Target) []string {
	var out []string
	for _, i := range t.Nodes(len(c.names)) {
		if i < len(c.names) {
			out = append(out, c.names[i])
		}
	}
	return out
}

// teardown stops the subject and the nodes and deletes the case's objects.
func (c *caseRun) teardown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	c.mu.Lock()
	leader := c.leader
	c.mu.Unlock()
	if leader != nil {
		leader.Stop()
	}
	if c.inst != nil {
		if err := c.inst.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop subject: %w", err))
		}
	}
	if c.nodes != nil {
		if err := c.nodes.Close(); err != nil {
			errs = append(errs, fmt.Errorf("stop nodes: %w", err))
		}
	}
	if c.cs == nil {
		return errors.Join(errs...)
	}
	// A refusal still in force would refuse the finalizers' removal.
	if c.s.refusesWrites() {
		if err := c.deleteRefusal(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	sel := labels.SelectorFromSet(c.selector()).String()
	if c.dyn != nil {
		if err := c.dyn.Resource(contract.NMCResource).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete NodeModulesConfigs: %w", err))
		}
	}
	// Worker pods keep the subject's finalizer when it stopped first.
	if pods, err := c.cs.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			if len(p.Finalizers) > 0 {
				_, _ = c.cs.CoreV1().Pods(c.ns).Patch(ctx, p.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			}
		}
	}
	if err := c.cs.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel}); err != nil {
		errs = append(errs, fmt.Errorf("delete nodes: %w", err))
	}
	if err := c.cs.CoreV1().Namespaces().Delete(ctx, c.ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete namespace %s: %w", c.ns, err))
	}
	return errors.Join(errs...)
}
