package vmprovision

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/bootproof/bootproof/vmprovision/agentapi"
)

// waitBoot waits until the agent answers with a boot ID other than
// notBoot and, with an admin client, the Node reports it.
func (ns *NodeSet) waitBoot(ctx context.Context, n *vmNode, notBoot string) (agentapi.State, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, ns.b.BootTimeout)
	defer cancel()
	var st agentapi.State
	var err error
	if werr := poll(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		// A short timeout per poll: while the guest boots, QEMU accepts the
		// forwarded connection but nothing answers.
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		defer pcancel()
		st, err = ns.state(pctx, n)
		return err == nil && st.BootID != notBoot, nil
	}); werr != nil {
		return agentapi.State{}, time.Time{}, fmt.Errorf("node %s: no new boot after %q (serial log %s): %w", n.name, notBoot, n.serial, errors.Join(werr, err))
	}
	agentUp := time.Now()
	if ns.b.Admin == nil {
		return st, agentUp, nil
	}
	if werr := poll(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		var node *corev1.Node
		node, err = ns.b.Admin.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		return err == nil && node.Status.NodeInfo.BootID == st.BootID, nil
	}); werr != nil {
		return agentapi.State{}, time.Time{}, fmt.Errorf("node %s: Node does not report boot %s: %w", n.name, st.BootID, errors.Join(werr, err))
	}
	return st, agentUp, nil
}

// leaseVersion is the node's Lease resourceVersion ("" without an admin
// client or a Lease).
func (ns *NodeSet) leaseVersion(ctx context.Context, n *vmNode) string {
	if ns.b.Admin == nil {
		return ""
	}
	l, err := ns.b.Admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return l.ResourceVersion
}

// waitRenewed waits, with an admin client, until the node writes its
// Lease again (resourceVersion other than rv; the lightweight kubelet
// writes it only to renew): the node reaches the API server again. The
// guest's clock is not compared: a paused guest's clock lags.
func (ns *NodeSet) waitRenewed(ctx context.Context, n *vmNode, rv string) error {
	if ns.b.Admin == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ns.b.BootTimeout)
	defer cancel()
	var err error
	if werr := poll(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		var l *coordinationv1.Lease
		l, err = ns.b.Admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.name, metav1.GetOptions{})
		return err == nil && l.ResourceVersion != rv, nil
	}); werr != nil {
		return fmt.Errorf("node %s: Lease not renewed since resourceVersion %s (serial log %s): %w", n.name, rv, n.serial, errors.Join(werr, err))
	}
	return nil
}

// poll calls cond at once and then interval after each call returns (the
// interval does not include cond's own time, as with a sleep between
// polls) until cond reports done or fails or ctx ends; it returns cond's
// error or ctx.Err().
func poll(ctx context.Context, interval time.Duration, cond wait.ConditionWithContextFunc) error {
	return wait.DelayFunc(func() time.Duration { return interval }).Until(ctx, true, true, cond)
}
