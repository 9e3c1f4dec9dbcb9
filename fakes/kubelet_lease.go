package fakes

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/bootproof/bootproof/contract"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// The simulated kubelet's Lease: heartbeats and ground truth.

// leaseKeeper is the part of the kubelet that renews the node's Lease and
// publishes the kernel's ground truth on it. Its lock guards the Lease
// last written and the renewal counters.
type leaseKeeper struct {
	*host

	// writing serialises the Lease writes of this kubelet (the renewal
	// loop and a reboot's last renewal), as a real kubelet's single lease
	// controller does: two writers of one Lease keep failing each
	// other's optimistic lock when the API server is slow.
	writing sync.Mutex

	mu       sync.Mutex
	lease    *coordinationv1.Lease // as last written; nil: read it first
	renewals int
	late     []time.Duration // lateness of each scheduled renewal
}

// counts returns the number of renewals and a copy of their lateness.
func (l *leaseKeeper) counts() (int, []time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.renewals, append([]time.Duration(nil), l.late...)
}

func (l *leaseKeeper) jittered(d time.Duration) time.Duration {
	return d + time.Duration(rand.Float64()*l.cfg.Timing.RenewJitter*float64(d))
}

// loop renews the Lease every RenewInterval plus jitter until ctx ends,
// and at once whenever truth asks for a ground-truth publication.
func (l *leaseKeeper) loop(ctx context.Context, truth <-chan struct{}) {
	next := l.cfg.Clock.Now().Add(l.jittered(l.cfg.Timing.RenewInterval))
	// overdue: a renewal fell due while the node was paused. It is made
	// the moment the node is back, when Resume asks for a publication;
	// until then no timer runs (an expired one would fire at once, again
	// and again).
	overdue := false
	for {
		var timer clock.Timer
		var due <-chan time.Time
		if !overdue {
			timer = l.cfg.Clock.NewTimer(next.Sub(l.cfg.Clock.Now()))
			due = timer.C()
		}
		select {
		case <-ctx.Done():
			stopTimer(timer)
			return
		case <-truth:
			stopTimer(timer)
			if !l.link.up() {
				continue
			}
			// Publishing rides on a renewal: a real kubelet writes its
			// Lease only to renew it, and kube-controller-manager (1.37,
			// NodeControllerLeaseCircuitBreaker) takes a Lease whose
			// resourceVersion moved without a newer renewTime for a stale
			// cache and then never marks the node Unknown.
			if err := l.renew(ctx, true); err != nil && ctx.Err() == nil {
				l.log.Error(err, "publish ground truth")
			}
			overdue = false
			next = l.cfg.Clock.Now().Add(l.jittered(l.cfg.Timing.RenewInterval))
		case <-due:
			if !l.link.up() {
				overdue = true
				continue
			}
			err := l.renew(ctx, true)
			// Lateness: from the scheduled renewal to the API's answer.
			late := l.cfg.Clock.Since(next)
			if err != nil && ctx.Err() == nil {
				l.log.Error(err, "renew lease")
			} else if err == nil {
				l.mu.Lock()
				l.late = append(l.late, late)
				l.mu.Unlock()
			}
			next = l.cfg.Clock.Now().Add(l.jittered(l.cfg.Timing.RenewInterval))
		}
	}
}

func stopTimer(t clock.Timer) {
	if t != nil {
		t.Stop()
	}
}

// renew writes the node's Lease with the current ground truth; with
// renew it also moves renewTime (a heartbeat).
func (l *leaseKeeper) renew(ctx context.Context, renew bool) error {
	if err := l.link.wait(ctx); err != nil {
		return err
	}
	l.writing.Lock()
	defer l.writing.Unlock()
	now := l.cfg.Clock.Now()
	truth, err := json.Marshal(snapshot(l.cfg.NodeName, l.cfg.Kernel, &l.acts, now))
	if err != nil {
		return err
	}
	leases := l.cfg.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	l.mu.Lock()
	cur := l.lease
	l.mu.Unlock()
	for attempt := 0; attempt < 3; attempt++ {
		if cur == nil {
			got, err := leases.Get(ctx, l.cfg.NodeName, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return l.create(ctx, now, string(truth))
			case err != nil:
				return fmt.Errorf("get lease of node %s: %w", l.cfg.NodeName, err)
			}
			cur = got
		}
		updated, err := leases.Update(ctx, l.renewed(cur, now, string(truth), renew), metav1.UpdateOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			cur = nil
			continue
		}
		if err != nil {
			return fmt.Errorf("update lease of node %s: %w", l.cfg.NodeName, err)
		}
		l.written(updated, renew)
		return nil
	}
	return fmt.Errorf("update lease of node %s: conflicts persisted", l.cfg.NodeName)
}

// create creates the node's Lease, owned by its Node when the Node is
// there, labelled as the Node is (contract.SimulatedLabel, and
// contract.RunLabel when the kubelet has one).
func (l *leaseKeeper) create(ctx context.Context, now time.Time, truth string) error {
	labels := map[string]string{contract.SimulatedLabel: "true"}
	if run, ok := l.cfg.Labels[contract.RunLabel]; ok {
		labels[contract.RunLabel] = run
	}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: l.cfg.NodeName, Namespace: corev1.NamespaceNodeLease, Labels: labels,
			Annotations: map[string]string{contract.GroundTruthAnnotation: truth}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(l.cfg.NodeName),
			LeaseDurationSeconds: ptr.To(int32(l.cfg.Timing.LeaseDuration / time.Second)),
			RenewTime:            &metav1.MicroTime{Time: now}},
	}
	if n, err := l.cfg.Client.CoreV1().Nodes().Get(ctx, l.cfg.NodeName, metav1.GetOptions{}); err == nil {
		lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}}
	}
	created, err := l.cfg.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create lease of node %s: %w", l.cfg.NodeName, err)
	}
	l.written(created, true)
	return nil
}

// renewed returns a copy of cur carrying truth, renewed at now if renew.
func (l *leaseKeeper) renewed(cur *coordinationv1.Lease, now time.Time, truth string, renew bool) *coordinationv1.Lease {
	lease := cur.DeepCopy()
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[contract.GroundTruthAnnotation] = truth
	if renew {
		lease.Spec.RenewTime = &metav1.MicroTime{Time: now}
		lease.Spec.HolderIdentity = ptr.To(l.cfg.NodeName)
		lease.Spec.LeaseDurationSeconds = ptr.To(int32(l.cfg.Timing.LeaseDuration / time.Second))
	}
	return lease
}

// written records the Lease as the API returned it.
func (l *leaseKeeper) written(lease *coordinationv1.Lease, renew bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lease = lease
	if renew {
		l.renewals++
	}
}
