package scenarios

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// do runs one action of the timeline: node disruptions, subject
// lifecycle, spec changes and the waits that judge reloads.
func (c *caseRun) do(ctx context.Context, a Action) error {
	g := c.grace
	switch a.Kind {
	case ActReboot:
		// Mode and request were checked by checkNodeCapabilities.
		req := c.rebootRequest(a)
		return c.spread(ctx, a, "reboot", req.Downtime, func(ctx context.Context, node string, d *disruption) error {
			out, err := c.nodes.Reboot(ctx, node, req)
			if err == nil && out.OldBootID != "" && out.NewBootID == out.OldBootID {
				err = fmt.Errorf("reboot (%s) returned but the boot ID is still %s", req.Mode, out.OldBootID)
			}
			c.mu.Lock()
			d.outcome = out
			if out.Downtime > 0 {
				d.downtime = out.Downtime
			}
			c.mu.Unlock()
			return err
		})
	case ActRestartKubelet:
		kr, ok := c.nodes.(KubeletRestarter)
		if !ok {
			return &skipError{fmt.Sprintf("backend %s cannot restart a kubelet without a reboot", c.e.Backend.Name())}
		}
		d := a.Downtime.Resolve(g)
		a.Wait = true
		return c.spread(ctx, a, "restart-kubelet", d, func(ctx context.Context, node string, _ *disruption) error {
			return kr.RestartKubelet(ctx, node, d)
		})
	case ActNetworkBlip:
		nb, ok := c.nodes.(NetworkBlipper)
		if !ok {
			return &skipError{fmt.Sprintf("backend %s cannot cut a node off the network", c.e.Backend.Name())}
		}
		d := a.Duration.Resolve(g)
		a.Wait = true
		return c.spread(ctx, a, "network-blip", d, func(ctx context.Context, node string, _ *disruption) error {
			return nb.NetworkBlip(ctx, node, d)
		})
	case ActPauseNode:
		np, ok := c.nodes.(NodePauser)
		if !ok {
			return &skipError{fmt.Sprintf("backend %s cannot pause a node", c.e.Backend.Name())}
		}
		d := a.Duration.Resolve(g)
		a.Wait = true
		return c.spread(ctx, a, "pause-node", d, func(ctx context.Context, node string, _ *disruption) error {
			return np.PauseNode(ctx, node, d)
		})
	case ActPauseSubject, ActResumeSubject, ActRestartSubject:
		p, ok := c.inst.(Pauser)
		if !ok {
			return &skipError{fmt.Sprintf("subject %s cannot be paused", c.subj.Name())}
		}
		c.obs.Action("", a.Kind)
		switch a.Kind {
		case ActPauseSubject:
			return c.wrapSubject("pause", p.Pause(ctx))
		case ActResumeSubject:
			return c.wrapSubject("resume", p.Resume(ctx))
		default:
			if err := p.Pause(ctx); err != nil {
				return c.wrapSubject("pause", err)
			}
			if !sleepCtx(ctx, a.Downtime.Resolve(g)) {
				return ctx.Err()
			}
			return c.wrapSubject("resume", p.Resume(ctx))
		}
	case ActWaitReloaded:
		timeout := c.s.Deadline.Resolve(g)
		if a.Timeout.Set {
			timeout = a.Timeout.Resolve(g)
		}
		return c.waitReloaded(ctx, c.targets(a.On), timeout)
	case ActWaitWorker:
		return c.waitWorker(ctx, a)
	case ActRemoveModule, ActAddModule:
		for _, n := range c.targets(a.On) {
			c.mu.Lock()
			c.spec[n] = ApplySpecAction(c.spec[n], a)
			c.mu.Unlock()
			c.obs.Action(n, a.Kind+" "+a.Module)
			if err := c.writeNMC(ctx, n, false); err != nil {
				return infra("%w", err)
			}
		}
		return nil
	case ActUpdateKernel:
		nodes := c.targets(a.On)
		c.waitInflight(nodes)
		for _, n := range nodes {
			kv := c.obs.Snapshot(n).KernelVersion
			c.mu.Lock()
			c.kernel[n] = kv
			c.mu.Unlock()
			c.obs.Action(n, "NMC kernelVersion -> "+kv)
			if err := c.writeNMC(ctx, n, false); err != nil {
				return infra("%w", err)
			}
		}
		return nil
	case ActSleep:
		if !sleepCtx(ctx, a.Duration.Resolve(g)) {
			return ctx.Err()
		}
		return nil
	}
	return fmt.Errorf("unknown action %q", a.Kind)
}

// wrapSubject makes a failed pause or resume of the subject a subject
// fault.
func (c *caseRun) wrapSubject(what string, err error) error {
	if err == nil {
		return nil
	}
	return &subjectError{fmt.Errorf("%s subject %s: %w", what, c.subj.Name(), err)}
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
func (c *caseRun) spread(ctx context.Context, a Action, kind string, downtime time.Duration,
	f func(ctx context.Context, node string, d *disruption) error) error {
	nodes := c.targets(a.On)
	c.waitInflight(nodes)
	stagger := a.Stagger.Resolve(c.grace)
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	for i, n := range nodes {
		d := &disruption{kind: kind, node: n, downtime: downtime}
		c.mu.Lock()
		c.disrupted = append(c.disrupted, d)
		c.mu.Unlock()
		c.inflight[n].Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.inflight[n].Done()
			if !sleepCtx(ctx, time.Duration(i)*stagger) {
				errs[i] = ctx.Err()
				return
			}
			c.obs.Action(n, fmt.Sprintf("%s (downtime %s)", kind, downtime))
			c.mu.Lock()
			d.start = time.Now()
			c.mu.Unlock()
			err := f(ctx, n, d)
			c.mu.Lock()
			d.end = time.Now()
			d.completed = err == nil
			c.mu.Unlock()
			if err != nil {
				errs[i] = fmt.Errorf("%s node %s: %w", kind, n, err)
				c.mu.Lock()
				if c.bgErr == nil {
					c.bgErr = infra("%w", errs[i])
				}
				c.mu.Unlock()
				return
			}
			c.obs.Action(n, kind+" done")
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
// the node's current boot, judged from ground truth.
func (c *caseRun) waitReloaded(ctx context.Context, nodes []string, timeout time.Duration) error {
	c.waitInflight(nodes)
	if err := c.backgroundErr(); err != nil {
		return err
	}
	var missing []string
	err := c.waitFor(ctx, timeout, func() error {
		missing = missing[:0]
		for _, n := range nodes {
			sn := c.obs.Snapshot(n)
			want := c.currentBoot(n, sn)
			c.mu.Lock()
			mods := slices.Clone(c.spec[n])
			c.mu.Unlock()
			for _, m := range mods {
				if sn.TruthBoot != want || sn.BootID != want || !slices.Contains(sn.TruthModules, m.ModuleName) {
					missing = append(missing, fmt.Sprintf("module %s not loaded in boot %s of node %s (last state: %s)", m.ModuleName, short(want), n, sn))
				}
			}
		}
		if len(missing) > 0 {
			return errors.New(missing[0])
		}
		return nil
	})
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if isFault(err) {
		return err
	}
	msg := fmt.Sprintf("%d module(s) not reloaded within %s: %s", len(missing), timeout, strings.Join(missing, "; "))
	c.assert(AssertReload, false, msg)
	return errAborted
}

// currentBoot is the boot a node is known to be in: the last reboot's new
// boot, else what the API shows; but a boot the kernel shows that came
// after it (a reboot nobody asked for) is the current one.
func (c *caseRun) currentBoot(node string, sn NodeSnapshot) string {
	want := sn.BootID
	c.mu.Lock()
	for i := len(c.disrupted) - 1; i >= 0; i-- {
		d := c.disrupted[i]
		if d.node == node && d.kind == "reboot" && d.completed {
			want = d.outcome.NewBootID
			break
		}
	}
	c.mu.Unlock()
	if sn.TruthBoot == "" || sn.TruthBoot == want {
		return want
	}
	c.obs.mu.Lock()
	defer c.obs.mu.Unlock()
	if seen := c.obs.firstSeenLocked(node, want); !seen.IsZero() && c.obs.firstSeenLocked(node, sn.TruthBoot).After(seen) {
		return sn.TruthBoot
	}
	return want
}

func (c *caseRun) waitWorker(ctx context.Context, a Action) error {
	nodes := c.targets(a.On)
	timeout := c.s.Deadline.Resolve(c.grace)
	if a.Timeout.Set {
		timeout = a.Timeout.Resolve(c.grace)
	}
	err := c.waitFor(ctx, timeout, func() error {
		for _, n := range nodes {
			if !c.obs.hasWorker(n, a.Module, a.WorkerAction, a.State) {
				return fmt.Errorf("no %s worker pod %s on node %s (last state: %s)", a.WorkerAction, a.State, n, c.obs.Snapshot(n))
			}
		}
		return nil
	})
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if isFault(err) {
		return err
	}
	c.assert(AssertReload, false, "waiting for a worker pod: "+err.Error())
	return errAborted
}

func (o *Observer) hasWorker(node, module, action, state string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range o.pods {
		if p.node != node || (action != "" && p.action != action) || (module != "" && p.moduleName != module) {
			continue
		}
		switch state {
		case "created":
			return true
		case "running":
			if p.running || p.succeeded {
				return true
			}
		case "succeeded":
			if p.succeeded {
				return true
			}
		}
	}
	return false
}
