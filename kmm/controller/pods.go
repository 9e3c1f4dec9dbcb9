package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
	"github.com/bootproof/bootproof/kmm/worker"
)

type podSet struct {
	current map[string]*corev1.Pod // by module key, owned by this NMC
	stale   []*corev1.Pod          // owned by an earlier NMC of the same name
}

// workerPods lists the worker pods bound to the NMC's node.
func (r *Reconciler) workerPods(ctx context.Context, nmc *kmmv1beta1.NodeModulesConfig) (podSet, error) {
	list := &corev1.PodList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{PodNodeNameIndex: nmc.Name}, client.HasLabels{worker.ActionLabel}); err != nil {
		return podSet{}, fmt.Errorf("list worker pods on node %s: %w", nmc.Name, err)
	}
	s := podSet{current: map[string]*corev1.Pod{}}
	gone, _ := r.finished.Load(nmc.Name)
	deleted, _ := gone.(map[types.UID]struct{})
	stillListed := map[types.UID]bool{}
	for i := range list.Items {
		pod := &list.Items[i]
		if _, ok := deleted[pod.UID]; ok && isFinished(pod) {
			// Deleted by an earlier reconcile; the cache is behind.
			stillListed[pod.UID] = true
			continue
		}
		owner := metav1.GetControllerOf(pod)
		if owner == nil || owner.Kind != "NodeModulesConfig" || owner.Name != nmc.Name {
			continue
		}
		if owner.UID != nmc.UID {
			if controllerutil.ContainsFinalizer(pod, worker.Finalizer) || pod.DeletionTimestamp == nil {
				s.stale = append(s.stale, pod)
			}
			continue
		}
		s.current[moduleKey(pod.Namespace, pod.Labels[worker.ModuleNameLabel])] = pod
	}
	for uid := range deleted {
		if !stillListed[uid] {
			delete(deleted, uid)
		}
	}
	if deleted != nil && len(deleted) == 0 {
		r.finished.Delete(nmc.Name)
	}
	return s, nil
}

// isFinished reports whether pod ran to an end (Succeeded or Failed).
func isFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// noteFinished remembers a finished worker pod of node that was just
// deleted, so that workerPods ignores it while the cache still lists it.
func (r *Reconciler) noteFinished(node string, pod *corev1.Pod) {
	if !isFinished(pod) {
		return
	}
	m, _ := r.finished.LoadOrStore(node, map[types.UID]struct{}{})
	m.(map[types.UID]struct{})[pod.UID] = struct{}{}
}

// createPods creates the worker pods p plans. A pod whose previous pod of
// the same name still exists is left for a later reconcile, which the
// result asks for; it returns the pods it created.
func (r *Reconciler) createPods(ctx context.Context, p *pending) (reconcile.Result, []*corev1.Pod) {
	log := logr.FromContextOrDiscard(ctx)
	var result reconcile.Result
	var created []*corev1.Pod
	for _, pod := range p.create {
		mlog := log.WithValues("module", moduleKey(pod.Namespace, pod.Labels[worker.ModuleNameLabel]), "pod", pod.Name,
			"action", pod.Labels[worker.ActionLabel], "bootID", p.node.Status.NodeInfo.BootID)
		if err := r.Client.Create(ctx, pod); err != nil {
			if apierrors.IsAlreadyExists(err) {
				mlog.V(1).Info("previous worker pod still exists; creating it later")
				result.RequeueAfter = retryAfter
				continue
			}
			if !r.variantDropsWriteError(ctx, err) {
				p.fail(fmt.Errorf("create %s worker pod %s/%s for node %s: %w", pod.Labels[worker.ActionLabel], pod.Namespace, pod.Name, p.node.Name, err))
			}
			continue
		}
		created = append(created, pod)
		mlog.Info("created worker pod")
	}
	return result, created
}

// releasePod removes the reconciler's finalizer from pod and deletes it.
func (r *Reconciler) releasePod(ctx context.Context, pod *corev1.Pod) error {
	if controllerutil.ContainsFinalizer(pod, worker.Finalizer) {
		orig := pod.DeepCopy()
		controllerutil.RemoveFinalizer(pod, worker.Finalizer)
		if err := r.Client.Patch(ctx, pod, client.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("remove finalizer from worker pod %s/%s on node %s: %w", pod.Namespace, pod.Name, pod.Spec.NodeName, err)
		}
	}
	if pod.DeletionTimestamp != nil {
		return nil
	}
	if err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete worker pod %s/%s on node %s: %w", pod.Namespace, pod.Name, pod.Spec.NodeName, err)
	}
	return nil
}

// releaseOrphanPods removes the finalizer from the worker pods of a deleted
// NMC, so the garbage collector can remove them.
func (r *Reconciler) releaseOrphanPods(ctx context.Context, nodeName string) error {
	list := &corev1.PodList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{PodNodeNameIndex: nodeName}, client.HasLabels{worker.ActionLabel}); err != nil {
		return fmt.Errorf("list worker pods on node %s: %w", nodeName, err)
	}
	var errs []error
	for i := range list.Items {
		pod := &list.Items[i]
		owner := metav1.GetControllerOf(pod)
		if owner == nil || owner.Kind != "NodeModulesConfig" || owner.Name != nodeName || !controllerutil.ContainsFinalizer(pod, worker.Finalizer) {
			continue
		}
		orig := pod.DeepCopy()
		controllerutil.RemoveFinalizer(pod, worker.Finalizer)
		if err := r.Client.Patch(ctx, pod, client.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) && !r.variantDropsWriteError(ctx, err) {
			errs = append(errs, fmt.Errorf("remove finalizer from worker pod %s/%s on node %s: %w", pod.Namespace, pod.Name, nodeName, err))
		}
	}
	return errors.Join(errs...)
}
