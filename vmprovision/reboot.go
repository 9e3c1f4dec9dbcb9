package vmprovision

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/vmprovision/agentapi"
)

// How a VM node does each reboot mode (package nodeapi defines them).
const (
	RebootReset      = nodeapi.RebootReset      // libvirt reset of the domain
	RebootGuest      = nodeapi.RebootGuest      // the agent calls reboot(2)
	RebootPanic      = nodeapi.RebootPanic      // kernel panic via sysrq, panic=1
	RebootPowerCycle = nodeapi.RebootPowerCycle // destroy, stay off, start
)

// RebootModeNames are the modes a VM NodeSet implements, each a case of
// NodeSet.Reboot's switch. A mode added to nodeapi is not among them
// until Reboot does it: until then a VM refuses it, and cases that ask
// for it are skipped. Pausing a node without a reboot (the negative
// control) is NodeSet.PauseNode.
var RebootModeNames = []nodeapi.RebootMode{RebootReset, RebootGuest, RebootPanic, RebootPowerCycle}

// Default natural boot times (reset to the agent answering in the new
// boot) until a node has measured its own.
const (
	DefaultBootEstimateTCG = 7 * time.Second
	DefaultBootEstimateKVM = 2 * time.Second
)

// RebootModes implements nodeapi.RebootModes.
func (ns *NodeSet) RebootModes() []nodeapi.RebootMode { return slices.Clone(RebootModeNames) }

// hold keeps a domain paused for d.
func hold(ctx context.Context, dom Domain, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if err := dom.Suspend(); err != nil {
		return fmt.Errorf("pause %s: %w", dom.Name(), err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	if err := dom.Resume(); err != nil {
		return fmt.Errorf("resume %s: %w", dom.Name(), err)
	}
	return ctx.Err()
}

// CheckReboot implements nodeapi.RebootChecker: a VM boots the kernel
// of its image and its kubelet starts Ready at once.
func (ns *NodeSet) CheckReboot(r nodeapi.RebootRequest) error {
	if err := nodeapi.CheckModeIn(RebootModeNames, r.Mode); err != nil {
		return fmt.Errorf("vm nodes: %w", err)
	}
	switch {
	case r.KernelVersion != "":
		return fmt.Errorf("booting another kernel version (%s) is not supported by vm nodes: they boot the image's kernel", r.KernelVersion)
	case r.NotReadyFor > 0:
		return fmt.Errorf("a Ready=False blip at kubelet startup (%s) is not supported by vm nodes", r.NotReadyFor)
	}
	return nil
}

// bootEstimate is the node's expected natural boot time.
func (ns *NodeSet) bootEstimate(n *vmNode) time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.boot > 0 {
		return n.boot
	}
	return ns.b.BootEstimate
}

// Reboot implements nodeapi.NodeSet. r.Downtime is the whole time the
// node is down: the domain is held paused after a reset, guest reboot or
// panic (off, for power-cycle) for the downtime minus the node's natural
// boot time, measured on its previous reboot. A downtime shorter than the
// natural boot gives the natural boot. The outcome carries the downtime
// as measured: from the reboot to the Node reporting the new boot.
func (ns *NodeSet) Reboot(ctx context.Context, node string, r nodeapi.RebootRequest) (nodeapi.RebootOutcome, error) {
	if err := ns.CheckReboot(r); err != nil {
		return nodeapi.RebootOutcome{}, fmt.Errorf("reboot node %s: %w", node, err)
	}
	n, err := ns.node(node)
	if err != nil {
		return nodeapi.RebootOutcome{}, err
	}
	old, err := ns.state(ctx, n)
	if err != nil {
		return nodeapi.RebootOutcome{}, fmt.Errorf("reboot node %s: %w", node, err)
	}
	mode := r.Mode.OrReset()
	extra := max(0, r.Downtime-ns.bootEstimate(n))
	ns.log.Info("rebooting vm node", "node", node, "mode", mode, "downtime", r.Downtime, "held", extra, "oldBootID", old.BootID)
	start := time.Now()
	switch mode {
	case RebootReset:
		if err = n.dom.Reset(); err == nil {
			err = hold(ctx, n.dom, extra)
		}
	case RebootGuest, RebootPanic:
		path := map[nodeapi.RebootMode]string{RebootGuest: agentapi.PathReboot, RebootPanic: agentapi.PathPanic}[mode]
		if err = ns.post(ctx, n, path); err == nil {
			err = hold(ctx, n.dom, extra)
		}
	case RebootPowerCycle:
		if err = n.dom.Destroy(); err == nil {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(extra):
			}
			if err == nil {
				err = n.dom.Start()
			}
		}
	default: // listed in RebootModeNames but not done here: refuse
		err = &nodeapi.UnsupportedModeError{Mode: mode, Supported: slices.DeleteFunc(slices.Clone(RebootModeNames), func(m nodeapi.RebootMode) bool { return m == mode })}
	}
	if err != nil {
		return nodeapi.RebootOutcome{}, fmt.Errorf("reboot node %s (%s): %w", node, mode, err)
	}
	booting := time.Now()
	st, agentUp, err := ns.waitBoot(ctx, n, old.BootID)
	if err != nil {
		return nodeapi.RebootOutcome{}, fmt.Errorf("reboot node %s (%s): %w", node, mode, err)
	}
	n.mu.Lock()
	n.boot = agentUp.Sub(booting)
	n.mu.Unlock()
	ns.recordTimeline(ctx, n, BootTimeline{Node: node, Mode: mode, OldBootID: old.BootID, NewBootID: st.BootID, Reset: start})
	return nodeapi.RebootOutcome{OldBootID: old.BootID, NewBootID: st.BootID, Downtime: time.Since(start)}, nil
}

// recordTimeline asks the node's agent for its boot's milestones once
// the Node reports the new boot, places them on the host's clock and
// keeps the timeline (Backend.BootTimelines). An agent that does not
// report them, or an answer from another boot, leaves no timeline.
func (ns *NodeSet) recordTimeline(ctx context.Context, n *vmNode, t BootTimeline) {
	sent := time.Now()
	st, err := ns.state(ctx, n)
	received := time.Now()
	switch {
	case err != nil:
		ns.log.Info("no boot timeline", "node", n.name, "error", err.Error())
		return
	case st.Boot == nil || st.BootID != t.NewBootID:
		return
	}
	PlaceBootTimes(&t, *st.Boot, sent, received)
	ns.b.addTimeline(t)
}
