package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
	"github.com/bootproof/bootproof/kmm/detect"
	"github.com/bootproof/bootproof/kmm/worker"
)

// BootSource says where the reconciler takes the boot ID it records for a
// finished load.
type BootSource string

const (
	// BootFromWorker records the boot the worker reported in its
	// termination message, and the node's current boot ID only when the
	// pod carries none. This is the correct behaviour and the default.
	BootFromWorker BootSource = "worker"
	// BootFromNode records the node's boot ID at the time the reconciler
	// syncs the pod. It is wrong on purpose: a load that finished in boot A
	// and is synced after the node rebooted into B is recorded as B, so the
	// module looks loaded but is not. It exists to show that failure.
	BootFromNode BootSource = "node"
)

// BootSources lists the accepted BootSource values, the default first.
var BootSources = []BootSource{BootFromWorker, BootFromNode}

// Event reasons, on the Node.
const (
	ReasonModuleLoaded   = "ModuleLoaded"
	ReasonModuleUnloaded = "ModuleUnloaded"
	ReasonRebootDetected = "RebootDetected"
	ReasonStatusDropped  = "ModuleStatusDropped"
	ReasonWorkerFailed   = "WorkerFailed"
)

// PodNodeNameIndex is the cache index of pods by spec.nodeName.
const PodNodeNameIndex = "spec.nodeName"

// retryAfter is how soon a reconcile runs again when a worker pod could
// not be created because the previous pod of the module still exists.
const retryAfter = 2 * time.Second

// Reconciler reconciles NodeModulesConfigs. Build it with its fields set
// and register it with SetupWithManager.
type Reconciler struct {
	// Client reads Nodes and Pods from the cache and writes.
	Client client.Client
	// APIReader reads NodeModulesConfigs from the API server.
	APIReader client.Reader
	// Detector decides whether a node rebooted since a load.
	Detector detect.Detector
	// BootSource says which boot a finished load is recorded in.
	BootSource BootSource
	// Recorder emits Events on Nodes; nil emits none.
	Recorder events.EventRecorder
	// Clock stamps lastTransitionTime when a pod reports no finish time.
	Clock clock.PassiveClock
	// MaxConcurrentReconciles is how many NodeModulesConfigs are
	// reconciled at once (one node is never reconciled twice at once);
	// default 1.
	MaxConcurrentReconciles int
}

// pending is one reconcile's work, applied after all decisions are made.
type pending struct {
	nmc     *kmmv1beta1.NodeModulesConfig
	node    *corev1.Node
	release map[types.UID]*corev1.Pod // results recorded or pod unwanted
	create  []*corev1.Pod
	events  []nodeEvent
	errs    []error
}

type nodeEvent struct {
	typ, reason, action, note string
}

func (p *pending) fail(err error) { p.errs = append(p.errs, err) }

func (p *pending) emit(typ, reason, action, format string, args ...any) {
	p.events = append(p.events, nodeEvent{typ: typ, reason: reason, action: action, note: fmt.Sprintf(format, args...)})
}

// Reconcile brings the worker pods and status of one NMC in line with its
// spec and the node's boot. Per spec entry, on a schedulable node and when
// no worker pod of the module exists:
//   - no status entry: create a loader pod;
//   - status config differs: create an unloader pod with the old config, or
//     a loader pod when the kernel version changed (as upstream KMM does);
//   - the detector reports a reboot since the load: create a loader pod.
//
// Per status entry without a spec entry: when the detector reports a
// reboot since the load, drop the entry (nothing is loaded any more);
// otherwise delete a running loader pod or create an unloader pod.
//
// A worker pod that keeps restarting with an outdated template (its hash
// differs from the current one) is deleted and created again, as upstream
// does; a Failed pod is deleted and nothing is recorded, so the next pass
// creates a new pod for what is still wanted.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nodeName := req.Name
	log := logr.FromContextOrDiscard(ctx).WithValues("node", nodeName)
	ctx = logr.NewContext(ctx, log)

	nmc := &kmmv1beta1.NodeModulesConfig{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Name: nodeName}, nmc); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, r.releaseOrphanPods(ctx, nodeName)
		}
		return reconcile.Result{}, fmt.Errorf("get nodemodulesconfig %s: %w", nodeName, err)
	}
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: nodeName}, node); err != nil {
		if apierrors.IsNotFound(err) {
			log.V(1).Info("node does not exist (yet); waiting for it")
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("get node %s: %w", nodeName, err)
	}
	pods, err := r.workerPods(ctx, nmc)
	if err != nil {
		return reconcile.Result{}, err
	}

	p := &pending{nmc: nmc, node: node, release: map[types.UID]*corev1.Pod{}}
	before := nmc.Status.DeepCopy()
	r.syncStatus(ctx, p, pods.current)
	for _, pod := range pods.stale {
		log.Info("releasing worker pod of an earlier nodemodulesconfig", "pod", pod.Namespace+"/"+pod.Name)
		p.release[pod.UID] = pod
	}

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

	statusChanged := !equality.Semantic.DeepEqual(before, &nmc.Status)
	if statusChanged {
		// Write status before releasing pods: a result is never lost, and a
		// conflict (someone changed the NMC) leaves everything for a retry.
		orig := nmc.DeepCopy()
		orig.Status = *before
		patch := client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
		if err := r.Client.Status().Patch(ctx, nmc, patch); err != nil {
			return reconcile.Result{}, fmt.Errorf("patch status of nodemodulesconfig %s: %w", nodeName, errors.Join(append(p.errs, err)...))
		}
	}
	for _, pod := range p.release {
		if err := r.releasePod(ctx, pod); err != nil {
			p.fail(err)
		}
	}
	for _, e := range p.events {
		r.event(node, e)
	}
	var result reconcile.Result
	created := 0
	for _, pod := range p.create {
		mlog := log.WithValues("module", moduleKey(pod.Namespace, pod.Labels[worker.ModuleNameLabel]), "pod", pod.Name,
			"action", pod.Labels[worker.ActionLabel], "bootID", node.Status.NodeInfo.BootID)
		if err := r.Client.Create(ctx, pod); err != nil {
			if apierrors.IsAlreadyExists(err) {
				mlog.V(1).Info("previous worker pod still exists; creating it later")
				result.RequeueAfter = retryAfter
				continue
			}
			p.fail(fmt.Errorf("create %s worker pod %s/%s for node %s: %w", pod.Labels[worker.ActionLabel], pod.Namespace, pod.Name, nodeName, err))
			continue
		}
		created++
		mlog.Info("created worker pod")
	}
	log.V(1).Info("reconciled", "bootID", node.Status.NodeInfo.BootID, "ready", detect.IsReady(node), "statusChanged", statusChanged,
		"created", created, "released", len(p.release), "retry", result.RequeueAfter > 0, "errors", len(p.errs))
	return result, errors.Join(p.errs...)
}

// live returns pod unless this reconcile already released it.
func (p *pending) live(pod *corev1.Pod) *corev1.Pod {
	if pod == nil || p.release[pod.UID] != nil {
		return nil
	}
	return pod
}

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
			log.Info("config changed; unloading the old config first", "bootID", bootID)
			r.plan(p, status.ModuleItem, status.Config, worker.ActionUnload)
		} else {
			log.Info("config and kernel version changed; loading", "bootID", bootID,
				"kernelVersion", spec.Config.KernelVersion, "oldKernelVersion", status.Config.KernelVersion)
			r.plan(p, spec.ModuleItem, spec.Config, worker.ActionLoad)
		}
	default:
		v := r.Detector.Rebooted(p.node, status)
		if !v.Rebooted {
			log.V(1).Info("module loaded in this boot; nothing to do", "bootID", bootID, "detector", r.Detector.Name(), "why", v.Reason)
			return
		}
		log.Info("reboot detected; loading again", "bootID", bootID, "oldBootID", status.BootID,
			"detector", r.Detector.Name(), "why", v.Reason)
		p.emit(corev1.EventTypeNormal, ReasonRebootDetected, "Load", "Module %s: %s (detector %s); loading again", key, v.Reason, r.Detector.Name())
		r.plan(p, spec.ModuleItem, spec.Config, worker.ActionLoad)
	}
}

func (r *Reconciler) processOrphan(ctx context.Context, p *pending, status *kmmv1beta1.NodeModuleStatus, pod *corev1.Pod) {
	key := moduleKey(status.Namespace, status.Name)
	log := logr.FromContextOrDiscard(ctx).WithValues("module", key)
	bootID := p.node.Status.NodeInfo.BootID
	// A bootid verdict on an entry without a recorded boot only means "not
	// known to be loaded in this boot"; unload it rather than guess.
	if v := r.Detector.Rebooted(p.node, status); v.Rebooted && (r.Detector.Name() != detect.BootID || status.BootID != "") {
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
	pod, err := worker.Pod(worker.Owner{Name: p.nmc.Name, UID: p.nmc.UID}, item, cfg, action)
	if err != nil {
		p.fail(err)
		return
	}
	p.create = append(p.create, pod)
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

func (r *Reconciler) event(node *corev1.Node, e nodeEvent) {
	if r.Recorder == nil {
		return
	}
	r.Recorder.Eventf(node, nil, e.typ, e.reason, e.action, "%s", e.note)
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

// sameConfig compares configs by their JSON form, so that an empty list and
// a missing one are the same.
func sameConfig(a, b kmmv1beta1.ModuleConfig) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

func moduleKey(namespace, name string) string { return namespace + "/" + name }

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

var _ reconcile.Reconciler = (*Reconciler)(nil)
