package vmprovision

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bootproof/bootproof/vmprovision/agentapi"
)

// waitBoot waits until the agent answers with a boot ID other than
// notBoot and, with an admin client, the Node reports it.
func (ns *NodeSet) waitBoot(ctx context.Context, n *vmNode, notBoot string) (agentapi.State, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, ns.b.BootTimeout)
	defer cancel()
	var st agentapi.State
	var err error
	for {
		// A short timeout per poll: while the guest boots, QEMU accepts the
		// forwarded connection but nothing answers.
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		st, err = ns.state(pctx, n)
		pcancel()
		if err == nil && st.BootID != notBoot {
			break
		}
		select {
		case <-ctx.Done():
			return agentapi.State{}, time.Time{}, fmt.Errorf("node %s: no new boot after %q (serial log %s): %w", n.name, notBoot, n.serial, errors.Join(ctx.Err(), err))
		case <-time.After(100 * time.Millisecond):
		}
	}
	agentUp := time.Now()
	if ns.b.Admin == nil {
		return st, agentUp, nil
	}
	for {
		node, err := ns.b.Admin.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err == nil && node.Status.NodeInfo.BootID == st.BootID {
			return st, agentUp, nil
		}
		select {
		case <-ctx.Done():
			return agentapi.State{}, time.Time{}, fmt.Errorf("node %s: Node does not report boot %s: %w", n.name, st.BootID, errors.Join(ctx.Err(), err))
		case <-time.After(200 * time.Millisecond):
		}
	}
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
	for {
		l, err := ns.b.Admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.name, metav1.GetOptions{})
		if err == nil && l.ResourceVersion != rv {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: Lease not renewed since resourceVersion %s (serial log %s): %w", n.name, rv, n.serial, errors.Join(ctx.Err(), err))
		case <-time.After(200 * time.Millisecond):
		}
	}
}
