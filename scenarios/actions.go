package scenarios

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/scenarios/judging"
	"github.com/bootproof/bootproof/scenarios/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// actionSpec is one kind of action, in one place: the parameters a
// scenario file may give it, what the format checks, what the engine
// needs from the subject or the node set before the timeline starts (a
// skip reason when missing), and what it does in a case.
type actionSpec struct {
	// fields are the parameters it accepts (setters in actionfields.go).
	fields []string
	// check returns what is wrong with a decoded action of scenario s,
	// or "" (the pause/resume pairing is checked across the timeline).
	check func(s *Scenario, a Action) string
	// subjectNeeds is checked before nodes are provisioned; nodeNeeds
	// once the node set exists. Both return a *skipError or nil.
	subjectNeeds func(c *caseRun, a Action) error
	nodeNeeds    func(c *caseRun, a Action) error
	// run performs the action.
	run func(c *caseRun, ctx context.Context, a Action) error
}

// actionTable is the vocabulary of timelines. A new action is one entry
// in nodeActions or timelineActions (and setters for new fields in
// actionfields.go).
var actionTable map[ActionKind]actionSpec

func init() {
	actionTable = nodeActions()
	maps.Copy(actionTable, timelineActions())
}

// nodeActions disrupt nodes.
func nodeActions() map[ActionKind]actionSpec {
	return map[ActionKind]actionSpec{
		ActReboot: {
			fields: []string{"on", "mode", "downtime", "startup", "kernelVersion", "stagger", "wait"},
			check: func(_ *Scenario, a Action) string {
				if !a.Downtime.Set {
					return "downtime is required, e.g. 0.5g or 3s"
				}
				if !a.Mode.Valid() {
					return fmt.Sprintf("mode %q: accepted: %s", a.Mode, nodeapi.JoinRebootModes(nodeapi.AllRebootModes()))
				}
				return ""
			},
			nodeNeeds: (*caseRun).canReboot,
			run:       (*caseRun).doReboot,
		},
		ActRestartKubelet: {
			fields:    []string{"on", "downtime", "stagger"},
			check:     required("downtime", func(a Action) Duration { return a.Downtime }),
			nodeNeeds: needNodes[nodeapi.KubeletRestarter]("restart a kubelet without a reboot"),
			run:       disrupt(ActRestartKubelet, func(a Action) Duration { return a.Downtime }, nodeapi.KubeletRestarter.RestartKubelet),
		},
		ActNetworkBlip: {
			fields:    []string{"on", "duration", "stagger"},
			check:     required("duration", func(a Action) Duration { return a.Duration }),
			nodeNeeds: needNodes[nodeapi.NetworkBlipper]("cut a node off the network"),
			run:       disrupt(ActNetworkBlip, func(a Action) Duration { return a.Duration }, nodeapi.NetworkBlipper.NetworkBlip),
		},
		ActPauseNode: {
			fields:    []string{"on", "duration", "stagger"},
			check:     required("duration", func(a Action) Duration { return a.Duration }),
			nodeNeeds: needNodes[nodeapi.NodePauser]("pause a node"),
			run:       disrupt(ActPauseNode, func(a Action) Duration { return a.Duration }, nodeapi.NodePauser.PauseNode),
		},
	}
}

// timelineActions act on the subject or the specs, or wait.
func timelineActions() map[ActionKind]actionSpec {
	return map[ActionKind]actionSpec{
		ActPauseSubject:   {subjectNeeds: (*caseRun).canPause, run: (*caseRun).doSubject},
		ActResumeSubject:  {run: (*caseRun).doSubject},
		ActRestartSubject: {fields: []string{"downtime"}, subjectNeeds: (*caseRun).canPause, run: (*caseRun).doSubject},
		ActWaitReloaded: {
			fields: []string{"on", "timeout"},
			run: func(c *caseRun, ctx context.Context, a Action) error {
				return c.waitReloaded(ctx, describe(a), c.targets(a.On), c.timeout(a), c.timeoutWhy(a))
			},
		},
		ActWaitWorker: {
			fields: []string{"on", "module", "action", "state", "timeout"},
			check: func(_ *Scenario, a Action) string {
				if a.State == "" {
					return "state is required: created, running or succeeded"
				}
				return ""
			},
			run: (*caseRun).waitWorker,
		},
		ActRemoveModule: {
			fields: []string{"on", "module"},
			check: func(s *Scenario, a Action) string {
				if a.Module == "" {
					return "module is required"
				}
				if !slices.ContainsFunc(s.Modules, func(m Module) bool { return m.Name == a.Module }) {
					return fmt.Sprintf("module %q is not among the scenario's modules", a.Module)
				}
				return ""
			},
			run: (*caseRun).doSpec,
		},
		ActAddModule: {
			fields: []string{"on", "module", "moduleName", "loadingOrder"},
			check: func(_ *Scenario, a Action) string {
				if a.Module == "" {
					return "module is required"
				}
				return ""
			},
			run: (*caseRun).doSpec,
		},
		ActUpdateKernel: {fields: []string{"on"}, run: (*caseRun).doUpdateKernel},
		// update-module-image gives a module's config a new container
		// image (a new build of the driver, for the same kernel), as KMM's
		// Module controller does when the Module's image changes: the old
		// module is to be unloaded and the new one loaded, in the same boot.
		ActUpdateImage: {
			fields: []string{"on", "module"},
			check: func(s *Scenario, a Action) string {
				if a.Module == "" {
					return "module is required"
				}
				if !slices.ContainsFunc(s.Modules, func(m Module) bool { return m.Name == a.Module }) {
					return fmt.Sprintf("module %q is not among the scenario's modules", a.Module)
				}
				return ""
			},
			run: (*caseRun).doSpec,
		},
		// delete-nmc deletes the targeted nodes' NodeModulesConfigs, as a
		// person does by hand or KMM once no Module selects the node: the
		// garbage collector then deletes the worker pods they own, which
		// the subject must release (its finalizer); the action ends once
		// it has begun to (collect.go). A later spec action on the node
		// creates the NodeModulesConfig again.
		ActDeleteNMC: {fields: []string{"on"}, run: (*caseRun).doDeleteNMC},
		// refuse-writes makes the API server refuse the subject's writes
		// for the targeted nodes (its worker pods' creates and updates,
		// their NodeModulesConfigs' status, or one of them: writes) until
		// allow-writes (refusal.go).
		ActRefuseWrites: {fields: []string{"on", "writes"}, subjectNeeds: (*caseRun).canRefuseWrites, run: (*caseRun).doRefuseWrites},
		ActAllowWrites:  {run: (*caseRun).doAllowWrites},
		ActRejectPods:   rejectPodsAction(),
		ActSleep: {
			fields: []string{"duration"},
			check:  required("duration", func(a Action) Duration { return a.Duration }),
			run: func(c *caseRun, ctx context.Context, a Action) error {
				if !sleepCtx(ctx, a.Duration.Resolve(c.grace)) {
					return ctx.Err()
				}
				return nil
			},
		},
	}
}

// Disrupts reports whether an action of kind k disrupts nodes (a reboot,
// a kubelet restart, a network blip, a node pause): its start on a node
// opens a grace-period window (trace.Event.Disruption).
func Disrupts(k ActionKind) bool {
	_, ok := nodeActions()[k]
	return ok
}

// required checks that a duration parameter is set.
func required(field string, get func(Action) Duration) func(*Scenario, Action) string {
	return func(_ *Scenario, a Action) string {
		if !get(a).Set {
			return field + " is required"
		}
		return ""
	}
}

// needNodes skips a case whose node set lacks capability T.
func needNodes[T any](what string) func(c *caseRun, a Action) error {
	return func(c *caseRun, _ Action) error {
		if _, ok := c.nodes.(T); !ok {
			return &skipError{fmt.Sprintf("backend %s cannot %s", c.e.Backend.Name(), what)}
		}
		return nil
	}
}

// disrupt runs a node disruption of capability T (checked by nodeNeeds)
// on every targeted node and waits until all are over.
func disrupt[T any](kind ActionKind, length func(Action) Duration,
	f func(T, context.Context, string, time.Duration) error) func(*caseRun, context.Context, Action) error {
	return func(c *caseRun, ctx context.Context, a Action) error {
		capable, ok := c.nodes.(T)
		if !ok {
			return &skipError{fmt.Sprintf("backend %s cannot %s", c.e.Backend.Name(), kind)}
		}
		d := length(a).Resolve(c.grace)
		a.Wait = true
		return c.spread(ctx, a, kind, d, func(ctx context.Context, node string, _ *judging.Disruption) error {
			return f(capable, ctx, node, d)
		})
	}
}

// do runs one action of the timeline.
func (c *caseRun) do(ctx context.Context, a Action) error {
	spec, ok := actionTable[a.Kind]
	if !ok || spec.run == nil {
		return fmt.Errorf("unknown action %q", a.Kind)
	}
	return spec.run(c, ctx, a)
}

// timeout is a wait's timeout: its own, else the scenario's deadline.
func (c *caseRun) timeout(a Action) time.Duration {
	if a.Timeout.Set {
		return a.Timeout.Resolve(c.grace)
	}
	return c.s.Deadline.Resolve(c.grace)
}

// timeoutWhy says where timeout(a) comes from, for messages.
func (c *caseRun) timeoutWhy(a Action) string {
	if a.Timeout.Set {
		return "its timeout"
	}
	return "the scenario's deadline"
}

// canReboot skips a case whose node set cannot reboot in the action's
// mode (nodeapi.CheckMode: only the modes it lists) or refuses the
// request (nodeapi.RebootChecker).
func (c *caseRun) canReboot(a Action) error {
	be := c.e.Backend.Name()
	req := c.rebootRequest(a)
	if err := nodeapi.CheckMode(c.nodes, req.Mode); err != nil {
		return &skipError{fmt.Sprintf("backend %s %v", be, err)}
	}
	if rc, ok := c.nodes.(nodeapi.RebootChecker); ok {
		if err := rc.CheckReboot(req); err != nil {
			return &skipError{fmt.Sprintf("backend %s: %v", be, err)}
		}
	}
	return nil
}

func (c *caseRun) doReboot(ctx context.Context, a Action) error {
	req := c.rebootRequest(a)
	return c.spread(ctx, a, ActReboot, req.Downtime, func(ctx context.Context, node string, d *judging.Disruption) error {
		out, err := c.nodes.Reboot(ctx, node, req)
		if err == nil && out.OldBootID != "" && out.NewBootID == out.OldBootID {
			err = fmt.Errorf("reboot (%s) returned but the boot ID is still %s", req.Mode, out.OldBootID)
		}
		c.dis.rebooted(d, out)
		return err
	})
}

// doSpec adds a module to or removes one from the targeted nodes' specs.
func (c *caseRun) doSpec(ctx context.Context, a Action) error {
	for _, n := range c.targets(a.On) {
		c.mu.Lock()
		c.spec[n] = ApplySpecAction(c.spec[n], a)
		c.mu.Unlock()
		c.obs.Action(n, a.Kind, string(a.Kind)+" "+a.Module)
		if err := c.writeNMC(ctx, n, false); err != nil {
			return infra("%w", err)
		}
	}
	return nil
}

// doDeleteNMC deletes each targeted node's NodeModulesConfig; the node
// then has no spec, and no module's absence from it is the subject's to
// answer for (nobody owns it any more).
func (c *caseRun) doDeleteNMC(ctx context.Context, a Action) error {
	deleted := map[types.UID]string{}
	for _, n := range c.targets(a.On) {
		obj, err := c.dyn.Resource(contract.NMCResource).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return infra("get NodeModulesConfig %s to delete it: %w", n, err)
		}
		c.mu.Lock()
		c.spec[n], c.nmcGone[n] = nil, true
		c.mu.Unlock()
		c.obs.Action(n, a.Kind, "NodeModulesConfig deleted")
		uid := obj.GetUID()
		err = c.dyn.Resource(contract.NMCResource).Delete(ctx, n, metav1.DeleteOptions{PropagationPolicy: ptrTo(metav1.DeletePropagationBackground),
			Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil {
			return infra("delete NodeModulesConfig %s: %w", n, err)
		}
		deleted[uid] = n
	}
	return c.awaitCollected(ctx, a, deleted)
}

func ptrTo[T any](v T) *T { return &v }

// doUpdateKernel writes the kernel version each targeted node now runs
// into its NodeModulesConfig, read from its Node status once that shows
// the new boot of its last reboot: a reboot's end can come before the
// kubelet posts the new boot and its kernel, and the old kernel's version
// written then asks for a module no loader can load in the new kernel
// (a known-good subject failed kernel-upgrade-on-reboot so, now and then).
func (c *caseRun) doUpdateKernel(ctx context.Context, a Action) error {
	nodes := c.targets(a.On)
	c.dis.wait(nodes)
	c.awaitNewBoots(ctx, nodes, c.s.Deadline.Resolve(c.grace))
	for _, n := range nodes {
		kv := c.obs.Snapshot(n).KernelVersion
		c.mu.Lock()
		c.kernel[n] = kv
		c.mu.Unlock()
		c.obs.Action(n, a.Kind, "NMC kernelVersion -> "+kv)
		if err := c.writeNMC(ctx, n, false); err != nil {
			return infra("%w", err)
		}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// spread runs f on every targeted node, staggered, in the background;
// with a.Wait it waits for all of them.
func (c *caseRun) spread(ctx context.Context, a Action, kind ActionKind, downtime time.Duration,
	f func(ctx context.Context, node string, d *judging.Disruption) error) error {
	nodes := c.targets(a.On)
	c.dis.wait(nodes)
	stagger := a.Stagger.Resolve(c.grace)
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	for i, n := range nodes {
		d := c.dis.begin(n, kind, downtime)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.dis.done(n)
			if !sleepCtx(ctx, time.Duration(i)*stagger) {
				errs[i] = ctx.Err()
				return
			}
			c.obs.Disruption(n, kind, trace.PhaseStart, downtime)
			c.dis.started(d, time.Now())
			err := f(ctx, n, d)
			if err != nil {
				errs[i] = fmt.Errorf("%s node %s: %w", kind, n, err)
			}
			c.dis.finished(d, time.Now(), errs[i])
			if err == nil {
				c.obs.Disruption(n, kind, trace.PhaseDone, 0)
			}
		}()
	}
	if !a.Wait {
		return nil
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return infra("%w", err)
	}
	return nil
}

// waitReloaded waits until every module in each node's spec is loaded in
// the node's current boot (what says which wait it is, for messages), or
// timeout ends: a reload missing then is missed. The service level a
// reload must meet not to be late is the wait's SLO, set when its window
// opens; it judges, it never ends the wait, and it is the same for every
// subject.
func (c *caseRun) waitReloaded(ctx context.Context, what string, nodes []string, timeout time.Duration, why string) error {
	c.dis.wait(nodes)
	if err := c.dis.failure(); err != nil {
		return err
	}
	c.awaitNewBoots(ctx, nodes, timeout)
	c.awaitLeader(ctx, timeout)
	c.measureFirstLoadTruth(time.Now())
	fixed, setBy := c.fixedSLO()
	slo, sloWhy := c.reload.slo(c.s.ReloadBound, c.grace, fixed, setBy)
	c.mu.Lock()
	spec := make(map[string][]judging.Module, len(nodes))
	for _, n := range nodes {
		spec[n] = judgedModules(c.spec[n])
	}
	c.mu.Unlock()
	return c.runWait(ctx, judging.Wait{Kind: judging.WaitReload, What: what, Nodes: slices.Clone(nodes), Spec: spec, Start: time.Now(), Timeout: timeout, Why: why,
		SLO: slo, SLOWhy: sloWhy})
}

// awaitNewBoots holds a reload wait's window back until each of nodes
// shows the new boot of its last completed reboot in its Node status:
// the subject can act on a reboot only once the API shows it, so its
// window starts then, whatever backend or kubelet made it late. A boot
// that never shows within timeout is left to the wait to judge.
func (c *caseRun) awaitNewBoots(ctx context.Context, nodes []string, timeout time.Duration) {
	start := time.Now()
	var late []string
	_ = c.waitFor(ctx, timeout, func() error {
		late = judging.BootsNotVisible(c.facts(time.Now()), c.obs.WaitRecord(nodes), nodes)
		if len(late) == 0 {
			return nil
		}
		return errNotYet
	})
	if d := time.Since(start); d >= 100*time.Millisecond {
		c.log.V(1).Info("reload window held back until the new boots showed", "nodes", nodes, "waited", d, "stillNotShown", late)
	}
}

// runWait polls until w holds (judging.JudgeWait on what was seen so far) or its
// timeout ends, then records it and judges it once more on the Record:
// the poll only decides when to stop waiting. It returns nil when the
// wait held; errAborted when it did not (the timeline stops; the reload
// assertion says why); or the fault or cancellation that ended it.
func (c *caseRun) runWait(ctx context.Context, w judging.Wait) error {
	err := c.waitFor(ctx, w.Timeout, func() error {
		now := w
		now.End = time.Now()
		if judging.JudgeWait(c.facts(now.End), c.obs.WaitRecord(w.Nodes), now).Held {
			return nil
		}
		return errNotYet
	})
	w.End = time.Now()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if isFault(err) {
		return err
	}
	w.Last = map[string]string{}
	for _, n := range w.Nodes {
		w.Last[n] = c.obs.Snapshot(n).String()
	}
	c.mu.Lock()
	c.waits = append(c.waits, w)
	c.mu.Unlock()
	rec := c.obs.Record()
	jr := judging.JudgeWait(c.facts(w.End), rec, w)
	if !jr.Held {
		c.noteFailure(w.End)
		c.obs.Action("", "", fmt.Sprintf("%s did not hold within %s", w.What, w.Timeout))
		return errAborted
	}
	base := c.baseBoots()
	c.reload.firstLoaded(jr, base)
	c.reload.reloaded(jr, rec, base, w.Start)
	return nil
}

// errNotYet is a poll's answer while a wait does not hold yet.
var errNotYet = errors.New("not yet")

// describe names an action for messages: "wait-reloaded at line 14".
func describe(a Action) string {
	if a.Line > 0 {
		return fmt.Sprintf("%s at line %d", a.Kind, a.Line)
	}
	return string(a.Kind)
}

// waitWorker waits until a worker pod of each targeted node reaches
// a.State; judged like a reload wait (runWait, judging.JudgeWait).
func (c *caseRun) waitWorker(ctx context.Context, a Action) error {
	return c.runWait(ctx, judging.Wait{Kind: judging.WaitWorker, What: describe(a), Nodes: c.targets(a.On),
		Worker: judging.WorkerMatch{Action: a.WorkerAction, Module: a.Module, State: a.State}, Start: time.Now(),
		Timeout: c.timeout(a), Why: "its timeout"})
}
