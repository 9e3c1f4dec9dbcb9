package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

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
	for i := range list.Items {
		pod := &list.Items[i]
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
	return s, nil
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
		if err := r.Client.Patch(ctx, pod, client.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove finalizer from worker pod %s/%s on node %s: %w", pod.Namespace, pod.Name, nodeName, err))
		}
	}
	return errors.Join(errs...)
}
