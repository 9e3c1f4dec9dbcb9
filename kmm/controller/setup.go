package controller

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
)

// Name is the controller's name, in logs and metrics.
const Name = "nodemodulesconfig"

// SetupWithManager indexes worker pods by node and registers the
// reconciler: it watches NodeModulesConfigs, the worker pods they own, and
// Nodes through NodePredicate.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, PodNodeNameIndex, func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		return fmt.Errorf("index pods by %s: %w", PodNodeNameIndex, err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: max(1, r.MaxConcurrentReconciles)}).
		For(&kmmv1beta1.NodeModulesConfig{}).
		Owns(&corev1.Pod{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			// NMC name = node name.
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
		}), builder.WithPredicates(NodePredicate())).
		Complete(r)
}

// NodePredicate passes Node creations and the updates that matter to the
// reconciler: spec (taints, unschedulable), labels, status.nodeInfo (boot
// ID, kernel version) and the Ready condition's status or transition time.
// Heartbeats, which change only condition heartbeat times, images or
// resource figures, do not pass; neither do deletions.
func NodePredicate() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return true },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return true },
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldNode, ok1 := e.ObjectOld.(*corev1.Node)
			newNode, ok2 := e.ObjectNew.(*corev1.Node)
			if !ok1 || !ok2 {
				return false
			}
			return NodeChanged(oldNode, newNode)
		},
	}
}

// NodeChanged reports whether the change from old to new matters to the
// reconciler (see NodePredicate).
func NodeChanged(old, new *corev1.Node) bool {
	if !equality.Semantic.DeepEqual(old.Spec, new.Spec) || !maps.Equal(old.Labels, new.Labels) ||
		!equality.Semantic.DeepEqual(old.Status.NodeInfo, new.Status.NodeInfo) {
		return true
	}
	o, n := readyOf(old), readyOf(new)
	if (o == nil) != (n == nil) {
		return true
	}
	return o != nil && (o.Status != n.Status || !o.LastTransitionTime.Equal(&n.LastTransitionTime))
}

func readyOf(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}
