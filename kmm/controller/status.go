package controller

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
	"github.com/bootproof/bootproof/kmm/worker"
)

// syncStatus records the results of finished worker pods in p.nmc's status
// and marks those pods for release.
func (r *Reconciler) syncStatus(ctx context.Context, p *pending, pods map[string]*corev1.Pod) {
	log := logr.FromContextOrDiscard(ctx)
	for key, pod := range pods {
		action := worker.ActionOf(pod)
		mlog := log.WithValues("module", key, "pod", pod.Name, "action", action)
		switch pod.Status.Phase {
		case corev1.PodSucceeded:
			p.release[pod.UID] = pod
			if action == worker.ActionUnload {
				removeStatus(p.nmc, pod.Namespace, pod.Labels[worker.ModuleNameLabel])
				mlog.Info("module unloaded", "bootID", p.node.Status.NodeInfo.BootID)
				p.emit(corev1.EventTypeNormal, ReasonModuleUnloaded, "Unload", "Module %s unloaded", key)
				continue
			}
			cfg, err := worker.ConfigOf(pod)
			if err != nil {
				p.fail(fmt.Errorf("node %s, module %s: %w", p.nmc.Name, key, err))
				p.emit(corev1.EventTypeWarning, ReasonWorkerFailed, "Load", "Loader pod %s/%s finished with an unreadable config; loading again: %v", pod.Namespace, pod.Name, err)
				continue
			}
			boot, source := r.bootOf(pod, p.node)
			if r.variantDropsLoad(ctx, p, key, boot) {
				continue
			}
			boot = r.variantBoot(boot)
			ltt := metav1.NewTime(r.Clock.Now())
			if t := worker.TerminatedState(pod); t != nil && !t.FinishedAt.IsZero() {
				ltt = t.FinishedAt
			}
			setStatus(p.nmc, kmmv1beta1.NodeModuleStatus{
				ModuleItem:         worker.ItemOf(pod),
				Config:             cfg,
				BootID:             boot,
				LastTransitionTime: ltt,
			})
			mlog.Info("module loaded", "bootID", boot, "bootSource", source, "nodeBootID", p.node.Status.NodeInfo.BootID)
			p.emit(corev1.EventTypeNormal, ReasonModuleLoaded, "Load", "Module %s loaded in boot %s", key, boot)
		case corev1.PodFailed:
			p.release[pod.UID] = pod
			mlog.Info("worker pod failed; recording nothing", "reason", pod.Status.Reason, "message", pod.Status.Message)
			p.emit(corev1.EventTypeWarning, ReasonWorkerFailed, string(action), "%s pod %s/%s failed: %s %s", action, pod.Namespace, pod.Name, pod.Status.Reason, pod.Status.Message)
		}
	}
}

// writeStatus patches nmc's status, changed from before, with an
// optimistic lock: a conflict (someone changed the NMC) fails the patch.
func (r *Reconciler) writeStatus(ctx context.Context, nmc *kmmv1beta1.NodeModulesConfig, node *corev1.Node, before *kmmv1beta1.NodeModulesConfigStatus) error {
	orig := nmc.DeepCopy()
	orig.Status = *before
	patch := client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
	if err := r.variantRefusePatch(node); err != nil {
		return err
	}
	return r.Client.Status().Patch(ctx, nmc, patch)
}

// bootOf is the boot ID to record for a finished loader pod, and where it
// came from.
func (r *Reconciler) bootOf(pod *corev1.Pod, node *corev1.Node) (bootID, source string) {
	if r.BootSource == BootFromNode {
		return node.Status.NodeInfo.BootID, "node"
	}
	if res, ok := worker.ParseResult(pod); ok {
		return res.BootID, "worker"
	}
	return node.Status.NodeInfo.BootID, "node-fallback"
}

// sameConfig compares configs by their JSON form, so that an empty list and
// a missing one are the same.
func sameConfig(a, b kmmv1beta1.ModuleConfig) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

func findStatus(nmc *kmmv1beta1.NodeModulesConfig, namespace, name string) *kmmv1beta1.NodeModuleStatus {
	for i := range nmc.Status.Modules {
		if s := &nmc.Status.Modules[i]; s.Namespace == namespace && s.Name == name {
			return s
		}
	}
	return nil
}

func setStatus(nmc *kmmv1beta1.NodeModulesConfig, st kmmv1beta1.NodeModuleStatus) {
	if s := findStatus(nmc, st.Namespace, st.Name); s != nil {
		*s = st
		return
	}
	nmc.Status.Modules = append(nmc.Status.Modules, st)
}

func removeStatus(nmc *kmmv1beta1.NodeModulesConfig, namespace, name string) {
	out := nmc.Status.Modules[:0]
	for _, s := range nmc.Status.Modules {
		if s.Namespace != namespace || s.Name != name {
			out = append(out, s)
		}
	}
	nmc.Status.Modules = out
	if len(out) == 0 {
		nmc.Status.Modules = nil
	}
}
