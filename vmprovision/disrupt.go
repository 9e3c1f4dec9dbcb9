package vmprovision

import (
	"context"
	"fmt"
	"time"

	"github.com/bootproof/bootproof/vmprovision/agentapi"
)

// PauseNode implements nodeapi.NodePauser: the domain is paused for d
// (a frozen machine: no heartbeat, no process runs) and resumed in the
// same boot; an error if the boot ID changed.
func (ns *NodeSet) PauseNode(ctx context.Context, node string, d time.Duration) error {
	n, err := ns.node(node)
	if err != nil {
		return err
	}
	old, err := ns.state(ctx, n)
	if err != nil {
		return fmt.Errorf("pause node %s: %w", node, err)
	}
	ns.log.Info("pausing vm node", "node", node, "for", d, "bootID", old.BootID)
	if err := hold(ctx, n.dom, max(d, time.Millisecond)); err != nil {
		return fmt.Errorf("pause node %s: %w", node, err)
	}
	rv := ns.leaseVersion(ctx, n)
	st, _, err := ns.waitBoot(ctx, n, "")
	if err != nil {
		return fmt.Errorf("pause node %s: %w", node, err)
	}
	if st.BootID != old.BootID {
		return fmt.Errorf("pause node %s: boot ID changed from %s to %s (serial log %s)", node, old.BootID, st.BootID, n.serial)
	}
	if err := ns.waitRenewed(ctx, n, rv); err != nil {
		return fmt.Errorf("pause node %s: %w", node, err)
	}
	return nil
}

// NetworkBlip implements nodeapi.NetworkBlipper: the node's NIC link is
// down for d (the guest sees no carrier; nothing reaches the API server)
// and up again, in the same boot.
func (ns *NodeSet) NetworkBlip(ctx context.Context, node string, d time.Duration) error {
	n, err := ns.node(node)
	if err != nil {
		return err
	}
	ls, ok := n.dom.(LinkSetter)
	if !ok {
		return fmt.Errorf("network blip on node %s: domain %s cannot set its link state", node, n.dom.Name())
	}
	old, err := ns.state(ctx, n)
	if err != nil {
		return fmt.Errorf("network blip on node %s: %w", node, err)
	}
	ns.log.Info("cutting vm node off the network", "node", node, "for", d, "bootID", old.BootID)
	if err := ls.SetLink(false); err != nil {
		return fmt.Errorf("network blip on node %s: %w", node, err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	if err := ls.SetLink(true); err != nil {
		return fmt.Errorf("network blip on node %s: %w", node, err)
	}
	rv := ns.leaseVersion(ctx, n)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	st, _, err := ns.waitBoot(ctx, n, "")
	if err != nil {
		return fmt.Errorf("network blip on node %s: %w", node, err)
	}
	if st.BootID != old.BootID {
		return fmt.Errorf("network blip on node %s: boot ID changed from %s to %s (serial log %s)", node, old.BootID, st.BootID, n.serial)
	}
	if err := ns.waitRenewed(ctx, n, rv); err != nil {
		return fmt.Errorf("network blip on node %s: %w", node, err)
	}
	return nil
}

// RestartKubelet implements nodeapi.KubeletRestarter: the agent stops
// its kubelet, waits downtime and starts it again in the same boot.
func (ns *NodeSet) RestartKubelet(ctx context.Context, node string, downtime time.Duration) error {
	n, err := ns.node(node)
	if err != nil {
		return err
	}
	old, err := ns.state(ctx, n)
	if err != nil {
		return fmt.Errorf("restart kubelet on node %s: %w", node, err)
	}
	if err := ns.postLong(ctx, n, agentapi.RestartKubeletPath(downtime), downtime+time.Minute); err != nil {
		return fmt.Errorf("restart kubelet on node %s: %w", node, err)
	}
	st, err := ns.state(ctx, n)
	if err != nil {
		return fmt.Errorf("restart kubelet on node %s: %w", node, err)
	}
	if st.BootID != old.BootID {
		return fmt.Errorf("restart kubelet on node %s: boot ID changed from %s to %s (serial log %s)", node, old.BootID, st.BootID, n.serial)
	}
	return nil
}

// RejectPods implements nodeapi.PodRejecter: the agent's kubelet rejects
// its next n worker pods at admission.
func (ns *NodeSet) RejectPods(ctx context.Context, node string, count int) error {
	n, err := ns.node(node)
	if err != nil {
		return err
	}
	if err := ns.post(ctx, n, agentapi.RejectPodsPath(count)); err != nil {
		return fmt.Errorf("reject worker pods on node %s: %w", node, err)
	}
	return nil
}
