package controller

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
	"github.com/bootproof/bootproof/kmm/detect"
	"github.com/bootproof/bootproof/kmm/worker"
)

// Name is the controller's name, in logs and metrics.
const Name = "nodemodulesconfig"

// SetupWithManager indexes worker pods by node and registers the
// reconciler: it watches NodeModulesConfigs through NMCPredicate, the
// worker pods they own through WorkerPodPredicate, and Nodes through
// NodePredicate. With OnPanic set, each reconcile runs under Recovering.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, PodNodeNameIndex, func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		return fmt.Errorf("index pods by %s: %w", PodNodeNameIndex, err)
	}
	r.vs.startedAt = time.Now()
	var rec reconcile.Reconciler = r
	if r.OnPanic != nil {
		rec = Recovering(r, r.OnPanic)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: max(1, r.MaxConcurrentReconciles)}).
		For(&kmmv1beta1.NodeModulesConfig{}, builder.WithPredicates(NMCPredicate())).
		Owns(&corev1.Pod{}, builder.WithPredicates(WorkerPodPredicate())).
		Watches(&corev1.Node{}, NodeHandler(), builder.WithPredicates(NodePredicate())).
		Complete(rec)
}

// updates returns a predicate that passes creations, deletions, generic
// events and the updates changed reports.
func updates[T client.Object](changed func(old, new T) bool) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return true },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return true },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(T)
			n, ok2 := e.ObjectNew.(T)
			return ok1 && ok2 && changed(o, n)
		},
	}
}

// NMCPredicate passes NodeModulesConfig creations, deletions and the
// updates NMCChanged reports. A status-only update, which is the
// reconciler's own write in all but name, does not pass: reconciling it
// again would cost an API read and decide nothing new.
func NMCPredicate() predicate.Predicate { return updates(NMCChanged) }

// NMCChanged reports whether the change from old to new matters to the
// reconciler: the spec (its generation), labels, or the deletion.
func NMCChanged(old, new *kmmv1beta1.NodeModulesConfig) bool {
	return old.Generation != new.Generation || !maps.Equal(old.Labels, new.Labels) ||
		(old.DeletionTimestamp == nil) != (new.DeletionTimestamp == nil) ||
		!equality.Semantic.DeepEqual(old.Spec, new.Spec)
}

// WorkerPodPredicate passes worker pod creations, deletions and the
// updates WorkerPodChanged reports. Progress the reconciler does not act
// on (Pending -> Running, conditions, its own finalizer removal) does not
// pass: under a reboot storm every such reconcile is an API read that
// delays the nodes still waiting for a loader pod.
func WorkerPodPredicate() predicate.Predicate { return updates(WorkerPodChanged) }

// WorkerPodChanged reports whether the change from old to new matters to
// the reconciler: the pod reached or left a terminal phase (Succeeded or
// Failed: a result to record), its deletion started, its worker
// container restarted (a pod with an outdated template is replaced), or
// its labels, annotations or owners changed.
func WorkerPodChanged(old, new *corev1.Pod) bool {
	terminal := func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	}
	if terminal(old) != terminal(new) || old.Status.Phase != new.Status.Phase && terminal(new) ||
		(old.DeletionTimestamp == nil) != (new.DeletionTimestamp == nil) {
		return true
	}
	if restarts(old) != restarts(new) {
		return true
	}
	return !maps.Equal(old.Labels, new.Labels) || !maps.Equal(old.Annotations, new.Annotations) ||
		!equality.Semantic.DeepEqual(old.OwnerReferences, new.OwnerReferences)
}

func restarts(p *corev1.Pod) int32 {
	if cs := worker.ContainerStatus(p); cs != nil {
		return cs.RestartCount
	}
	return 0
}

// RebootPriority is the queue priority of a node whose boot ID or kernel
// version changed. After a reboot storm every such node needs a loader
// pod; it goes before the reconciles that only record finished workers
// and release their pods, which no module waits for.
const RebootPriority = 10

// NodeHandler enqueues the NMC of a Node (NMC name = node name): at
// RebootPriority when the node's boot ID or kernel version changed, at
// the default priority otherwise (low for the initial list).
func NodeHandler() handler.EventHandler {
	add := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], o client.Object, prio *int) {
		req := reconcile.Request{NamespacedName: types.NamespacedName{Name: o.GetName()}}
		if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok && prio != nil {
			pq.AddWithOpts(priorityqueue.AddOpts{Priority: prio}, req)
			return
		}
		q.Add(req)
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.Object, nil)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			var prio *int
			oldNode, ok1 := e.ObjectOld.(*corev1.Node)
			newNode, ok2 := e.ObjectNew.(*corev1.Node)
			if ok1 && ok2 && BootChanged(oldNode, newNode) {
				prio = ptr.To(RebootPriority)
			}
			add(q, e.ObjectNew, prio)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.Object, nil)
		},
	}
}

// BootChanged reports whether the node booted again or into another
// kernel between old and new.
func BootChanged(old, new *corev1.Node) bool {
	return old.Status.NodeInfo.BootID != new.Status.NodeInfo.BootID ||
		old.Status.NodeInfo.KernelVersion != new.Status.NodeInfo.KernelVersion
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

func readyOf(n *corev1.Node) *corev1.NodeCondition { return detect.ReadyCondition(n) }
