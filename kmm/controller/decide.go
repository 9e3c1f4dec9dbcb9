package controller

import (
	"context"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
	"github.com/bootproof/bootproof/kmm/worker"
)

// decide plans the work for every spec entry and every status entry
// without a spec entry, and releases the worker pods of an earlier NMC of
// the same name.
func (r *Reconciler) decide(ctx context.Context, p *pending, pods podSet) {
	log := logr.FromContextOrDiscard(ctx)
	for _, pod := range pods.stale {
		log.Info("releasing worker pod of an earlier nodemodulesconfig", "pod", pod.Namespace+"/"+pod.Name)
		p.release[pod.UID] = pod
	}

	nmc := p.nmc
	inSpec := map[string]bool{}
	for i := range nmc.Spec.Modules {
		spec := &nmc.Spec.Modules[i]
		key := moduleKey(spec.Namespace, spec.Name)
		inSpec[key] = true
		r.processSpec(ctx, p, spec, findStatus(nmc, spec.Namespace, spec.Name), p.live(pods.current[key]))
	}
	for _, st := range append([]kmmv1beta1.NodeModuleStatus(nil), nmc.Status.Modules...) {
		key := moduleKey(st.Namespace, st.Name)
		if !inSpec[key] {
			r.processOrphan(ctx, p, &st, p.live(pods.current[key]))
		}
	}
}

func (r *Reconciler) processSpec(ctx context.Context, p *pending, spec *kmmv1beta1.NodeModuleSpec, status *kmmv1beta1.NodeModuleStatus, pod *corev1.Pod) {
	key := moduleKey(spec.Namespace, spec.Name)
	log := logr.FromContextOrDiscard(ctx).WithValues("module", key)
	bootID := p.node.Status.NodeInfo.BootID
	if pod != nil {
		if worker.ActionOf(pod) == worker.ActionLoad {
			r.replaceIfOutdated(ctx, p, pod, worker.Owner{Name: p.nmc.Name, UID: p.nmc.UID}, spec.ModuleItem, spec.Config, worker.ActionLoad)
		} else {
			log.V(1).Info("worker pod in progress", "pod", pod.Name, "action", worker.ActionOf(pod))
		}
		return
	}
	if ok, taint := schedulable(p.node, spec.Tolerations); !ok {
		log.V(1).Info("node is unschedulable for the module; skipping", "taint", taint)
		return
	}
	switch {
	case status == nil:
		log.Info("no status; loading", "bootID", bootID)
		r.plan(p, spec.ModuleItem, spec.Config, worker.ActionLoad)
	case !sameConfig(spec.Config, status.Config):
		if spec.Config.KernelVersion == status.Config.KernelVersion {
			if r.variantConfigChange(ctx, p, spec) {
				return
			}
			log.Info("config changed; unloading the old config first", "bootID", bootID)
			r.plan(p, status.ModuleItem, status.Config, worker.ActionUnload)
		} else {
			if r.variantIgnoresKernelChange(ctx) {
				return
			}
			log.Info("config and kernel version changed; loading", "bootID", bootID,
				"kernelVersion", spec.Config.KernelVersion, "oldKernelVersion", status.Config.KernelVersion)
			r.plan(p, spec.ModuleItem, spec.Config, worker.ActionLoad)
		}
	default:
		v := r.variantVerdict(p.node, status, key, r.Detector.Rebooted(p.node, status))
		if !v.Rebooted {
			log.V(1).Info("module loaded in this boot; nothing to do", "bootID", bootID, "detector", r.Detector.Name(), "why", v.Reason)
			return
		}
		log.Info("reboot detected; loading again", "bootID", bootID, "oldBootID", status.BootID,
			"detector", r.Detector.Name(), "why", v.Reason)
		if r.variantSkipsReload(ctx) {
			return
		}
		p.emit(corev1.EventTypeNormal, ReasonRebootDetected, "Load", "Module %s: %s (detector %s); loading again", key, v.Reason, r.Detector.Name())
		r.plan(p, spec.ModuleItem, spec.Config, worker.ActionLoad)
	}
}

func (r *Reconciler) processOrphan(ctx context.Context, p *pending, status *kmmv1beta1.NodeModuleStatus, pod *corev1.Pod) {
	key := moduleKey(status.Namespace, status.Name)
	log := logr.FromContextOrDiscard(ctx).WithValues("module", key)
	bootID := p.node.Status.NodeInfo.BootID
	if r.variantIgnoresRemoved(ctx) {
		return
	}
	// A verdict on an entry without a recorded boot only means "not known
	// to be loaded in this boot"; unload it rather than guess.
	if v := r.variantOrphanVerdict(r.Detector.Rebooted(p.node, status)); v.Rebooted && !v.Unrecorded {
		removeStatus(p.nmc, status.Namespace, status.Name)
		log.Info("spec removed and node rebooted since the load; dropping the status without unloading",
			"bootID", bootID, "oldBootID", status.BootID, "why", v.Reason)
		p.emit(corev1.EventTypeNormal, ReasonStatusDropped, "Unload", "Module %s: %s; nothing to unload", key, v.Reason)
		if pod != nil && worker.ActionOf(pod) == worker.ActionLoad {
			p.release[pod.UID] = pod
		}
		return
	}
	if pod != nil {
		if worker.ActionOf(pod) == worker.ActionLoad {
			log.Info("spec removed while loading; deleting the loader pod", "pod", pod.Name, "bootID", bootID)
			p.release[pod.UID] = pod
			return
		}
		r.replaceIfOutdated(ctx, p, pod, worker.Owner{Name: p.nmc.Name, UID: p.nmc.UID}, status.ModuleItem, status.Config, worker.ActionUnload)
		return
	}
	log.Info("spec removed; unloading", "bootID", bootID, "oldBootID", status.BootID)
	r.plan(p, status.ModuleItem, status.Config, worker.ActionUnload)
}

// replaceIfOutdated deletes a worker pod that has restarted and whose
// template is not the current one, so the next pass creates the current
// one (upstream KMM's rule).
func (r *Reconciler) replaceIfOutdated(ctx context.Context, p *pending, pod *corev1.Pod, owner worker.Owner, item kmmv1beta1.ModuleItem, cfg kmmv1beta1.ModuleConfig, action worker.Action) {
	log := logr.FromContextOrDiscard(ctx).WithValues("pod", pod.Name, "action", action)
	cs := worker.ContainerStatus(pod)
	if cs == nil || cs.RestartCount == 0 {
		log.V(1).Info("worker pod in progress")
		return
	}
	want, err := worker.Pod(owner, item, cfg, action)
	if err != nil {
		p.fail(err)
		return
	}
	if want.Annotations[worker.HashAnnotation] != pod.Annotations[worker.HashAnnotation] {
		log.Info("worker pod keeps restarting with an outdated template; deleting it", "restarts", cs.RestartCount)
		p.release[pod.UID] = pod
	}
}

func (r *Reconciler) plan(p *pending, item kmmv1beta1.ModuleItem, cfg kmmv1beta1.ModuleConfig, action worker.Action) {
	if r.variantSkipsPlan(action) {
		return
	}
	pod, err := worker.Pod(worker.Owner{Name: p.nmc.Name, UID: p.nmc.UID}, item, cfg, action)
	if err != nil {
		p.fail(err)
		return
	}
	r.variantPod(action, pod)
	p.create = append(p.create, pod)
}

// schedulable reports whether worker pods with tolerations may run on
// node: every NoSchedule or NoExecute taint is tolerated, and a cordoned
// node counts as tainted node.kubernetes.io/unschedulable:NoSchedule.
func schedulable(node *corev1.Node, tolerations []corev1.Toleration) (bool, string) {
	taints := node.Spec.Taints
	if node.Spec.Unschedulable {
		taints = append(append([]corev1.Taint(nil), taints...), corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	}
	for i := range taints {
		t := &taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		tolerated := false
		for j := range tolerations {
			if tolerations[j].ToleratesTaint(logr.Discard(), t, true) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			return false, t.ToString()
		}
	}
	return true, ""
}
