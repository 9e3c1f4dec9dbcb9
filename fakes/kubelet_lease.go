package fakes

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The simulated kubelet's Lease heartbeats, ground truth and events.

func (k *Kubelet) jittered(d time.Duration) time.Duration {
	return d + time.Duration(rand.Float64()*k.cfg.Timing.RenewJitter*float64(d))
}

func (k *Kubelet) leaseLoop(lt *lifetime) {
	next := k.cfg.Clock.Now().Add(k.jittered(k.cfg.Timing.RenewInterval))
	for {
		timer := k.cfg.Clock.NewTimer(next.Sub(k.cfg.Clock.Now()))
		select {
		case <-lt.ctx.Done():
			timer.Stop()
			return
		case <-lt.truth:
			timer.Stop()
			if !k.isOnline() {
				continue
			}
			// Publishing rides on a renewal: a real kubelet writes its
			// Lease only to renew it, and kube-controller-manager (1.37,
			// NodeControllerLeaseCircuitBreaker) takes a Lease whose
			// resourceVersion moved without a newer renewTime for a stale
			// cache and then never marks the node Unknown.
			if err := k.renewLease(lt.ctx, true); err != nil && lt.ctx.Err() == nil {
				k.log.Error(err, "publish ground truth")
			}
			next = k.cfg.Clock.Now().Add(k.jittered(k.cfg.Timing.RenewInterval))
		case <-timer.C():
			if !k.isOnline() {
				// Paused: the renewal is due the moment the node is back.
				continue
			}
			err := k.renewLease(lt.ctx, true)
			// Lateness: from the scheduled renewal to the API's answer.
			late := k.cfg.Clock.Since(next)
			if err != nil && lt.ctx.Err() == nil {
				k.log.Error(err, "renew lease")
			} else if err == nil {
				k.mu.Lock()
				k.stats.LateRenewals = append(k.stats.LateRenewals, late)
				k.mu.Unlock()
			}
			next = k.cfg.Clock.Now().Add(k.jittered(k.cfg.Timing.RenewInterval))
		}
	}
}

// renewLease writes the node's Lease with the current ground truth; with
// renew it also moves renewTime (a heartbeat).
func (k *Kubelet) renewLease(ctx context.Context, renew bool) error {
	if err := k.waitOnline(ctx); err != nil {
		return err
	}
	now := k.cfg.Clock.Now()
	truth, err := json.Marshal(snapshot(k.cfg.NodeName, k.cfg.Kernel, now))
	if err != nil {
		return err
	}
	leases := k.cfg.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	k.mu.Lock()
	cur := k.lease
	k.mu.Unlock()
	for attempt := 0; attempt < 3; attempt++ {
		if cur == nil {
			got, err := leases.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				l := &coordinationv1.Lease{
					ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Namespace: corev1.NamespaceNodeLease,
						Annotations: map[string]string{GroundTruthAnnotation: string(truth)}},
					Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(k.cfg.NodeName),
						LeaseDurationSeconds: ptr.To(int32(k.cfg.Timing.LeaseDuration / time.Second)),
						RenewTime:            &metav1.MicroTime{Time: now}},
				}
				if n, err := k.cfg.Client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{}); err == nil {
					l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}}
				}
				created, err := leases.Create(ctx, l, metav1.CreateOptions{})
				if err != nil {
					return fmt.Errorf("create lease of node %s: %w", k.cfg.NodeName, err)
				}
				k.leaseWritten(created, true)
				return nil
			case err != nil:
				return fmt.Errorf("get lease of node %s: %w", k.cfg.NodeName, err)
			}
			cur = got
		}
		l := cur.DeepCopy()
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[GroundTruthAnnotation] = string(truth)
		if renew {
			l.Spec.RenewTime = &metav1.MicroTime{Time: now}
			l.Spec.HolderIdentity = ptr.To(k.cfg.NodeName)
			l.Spec.LeaseDurationSeconds = ptr.To(int32(k.cfg.Timing.LeaseDuration / time.Second))
		}
		updated, err := leases.Update(ctx, l, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			cur = nil
			continue
		}
		if err != nil {
			return fmt.Errorf("update lease of node %s: %w", k.cfg.NodeName, err)
		}
		k.leaseWritten(updated, renew)
		return nil
	}
	return fmt.Errorf("update lease of node %s: conflicts persisted", k.cfg.NodeName)
}

func (k *Kubelet) leaseWritten(l *coordinationv1.Lease, renew bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lease = l
	if renew {
		k.stats.LeaseRenewals++
	}
}

// PublishGroundTruth asks the kubelet to publish the kernel's state now.
func (k *Kubelet) PublishGroundTruth() {
	k.mu.Lock()
	lt := k.run
	k.mu.Unlock()
	if lt != nil {
		nudge(lt.truth)
	}
}

// event records a core/v1 Event about the node, as the kubelet does.
func (k *Kubelet) event(ctx context.Context, node *corev1.Node, typ, reason, msg string) {
	now := metav1.NewTime(k.cfg.Clock.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: k.cfg.NodeName + ".", Namespace: metav1.NamespaceDefault},
		// The kubelet refers to its node with UID = node name.
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: node.Name, UID: types.UID(node.Name)},
		Reason:         reason, Message: msg, Type: typ,
		Source:         corev1.EventSource{Component: "kubelet", Host: k.cfg.NodeName},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "kubelet", ReportingInstance: k.cfg.NodeName,
	}
	if _, err := k.cfg.Client.CoreV1().Events(metav1.NamespaceDefault).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		k.log.Error(err, "record event", "reason", reason)
	}
}
