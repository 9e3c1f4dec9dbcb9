package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
	"github.com/bootproof/bootproof/kmm/detect"
	"github.com/bootproof/bootproof/kmm/variant"
	"github.com/bootproof/bootproof/kmm/worker"
)

// The slownesses of the slow calibration variants.
const (
	slowReconcileDelay = 2 * time.Second
	slowStartDelay     = 8 * time.Second
	slowRestartDelay   = 10 * time.Second
	slowPodStartDelay  = 3 * time.Second
	refusedPatches     = 2
	// reloadLoopAfter is how old reload-loop lets a load get.
	reloadLoopAfter = time.Second
	// staleBootFor is how long stale-boot-cache keeps a node's boot ID.
	staleBootFor = 25 * time.Second
)

// variantState is what the calibration variants (Reconciler.Variant)
// remember between reconciles. The correct reconciler uses none of it.
type variantState struct {
	// startedAt is when the reconciler was set up (slow-start,
	// slow-after-restart).
	startedAt time.Time
	// restarted, once checked, says whether the leader Lease had another
	// holder before this instance, firstAt when its first reconcile was
	// (slow-after-restart).
	restartOnce sync.Once
	restarted   bool
	firstAt     time.Time
	// bootSeen holds, per node and module, the boot the reconciler last
	// saw the node in (update-events-only).
	bootSeen sync.Map
	// loads counts, per node, module and boot, the finished loads
	// (two-workers).
	loads sync.Map
	// refusals holds, per node, the boot and how many status patches are
	// still to be refused in it (refused-status-patches).
	mu       sync.Mutex
	refusals map[string]refusal
	// boots holds, per node, the boot ID stale-boot-cache read and when.
	boots sync.Map
}

// cachedBoot is a node's boot ID as stale-boot-cache last read it.
type cachedBoot struct {
	boot string
	at   time.Time
}

type refusal struct {
	boot string
	left int
}

// is reports whether the reconciler runs variant n.
func (r *Reconciler) is(n variant.Name) bool { return r.Variant == n }

// variantWait holds a reconcile back as the slow variants do: 2 s each
// (slow-reconcile), until 8 s after the reconciler's start (slow-start),
// or until 10 s after its first reconcile when its leader Lease had
// another holder before it: a start that is not the first, whose caches
// sync slowly once it leads (slow-after-restart). It returns ctx's
// error if ctx ends first.
func (r *Reconciler) variantWait(ctx context.Context) error {
	var d time.Duration
	switch {
	case r.is(variant.SlowReconcile):
		d = slowReconcileDelay
	case r.is(variant.SlowStart):
		d = time.Until(r.vs.startedAt.Add(slowStartDelay))
	case r.is(variant.SlowAfterRestart):
		r.vs.restartOnce.Do(func() { r.vs.restarted, r.vs.firstAt = r.leaderBefore(ctx), time.Now() })
		if r.vs.restarted {
			d = time.Until(r.vs.firstAt.Add(slowRestartDelay))
		}
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// leaderBefore reports whether its leader Lease had another holder
// before this instance took it (a leader transition recorded): a start
// that is not the first.
func (r *Reconciler) leaderBefore(ctx context.Context) bool {
	if r.LeaderLease.Name == "" {
		return false
	}
	var l coordinationv1.Lease
	if err := r.APIReader.Get(ctx, r.LeaderLease, &l); err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "slow-after-restart: read the leader Lease; taken for a restart", "lease", r.LeaderLease)
		return true
	}
	return l.Spec.LeaseTransitions != nil && *l.Spec.LeaseTransitions > 0
}

// rebootedSinceSeen is update-events-only's detector: a node rebooted when
// it shows another boot than the last one the reconciler saw it in, for
// this module; the first boot it sees is taken for the one the module was
// loaded in.
func (r *Reconciler) rebootedSinceSeen(node *corev1.Node, key string) detect.Verdict {
	boot := node.Status.NodeInfo.BootID
	old, seen := r.vs.bootSeen.Swap(node.Name+"/"+key, boot)
	if !seen || old.(string) == boot {
		return detect.Verdict{Reason: "no boot change seen since the reconciler started"}
	}
	return detect.Verdict{Rebooted: true, Reason: "node boot ID changed from " + old.(string) + " to " + boot + " while watched"}
}

// firstLoadDropped is two-workers' defect: the first finished load of a
// module in a boot is not recorded, so a second loader pod runs.
func (r *Reconciler) firstLoadDropped(node, key, boot string) bool {
	n, _ := r.vs.loads.LoadOrStore(node+"/"+key+"/"+boot, new(int))
	count := n.(*int)
	*count++ // one reconcile per node at a time
	return *count == 1
}

// refusePatch is refused-status-patches' API server: the first two status
// patches of a node in each boot the reconciler sees fail with 429.
func (r *Reconciler) refusePatch(node *corev1.Node) error {
	r.vs.mu.Lock()
	defer r.vs.mu.Unlock()
	if r.vs.refusals == nil {
		r.vs.refusals = map[string]refusal{}
	}
	boot := node.Status.NodeInfo.BootID
	ref, ok := r.vs.refusals[node.Name]
	if !ok || ref.boot != boot {
		ref = refusal{boot: boot, left: refusedPatches}
	}
	if ref.left == 0 {
		r.vs.refusals[node.Name] = ref
		return nil
	}
	ref.left--
	r.vs.refusals[node.Name] = ref
	return apierrors.NewTooManyRequests("status patch refused (calibration variant refused-status-patches)", 0)
}

// claimCreated is status-on-create's defect: once it has created loader
// pods, it writes each module's status as loaded in the node's current
// boot, before the pods ran. The finished pod is recorded again later,
// as the correct reconciler records it.
func (r *Reconciler) claimCreated(ctx context.Context, p *pending, created []*corev1.Pod) error {
	before := p.nmc.Status.DeepCopy()
	boot := p.node.Status.NodeInfo.BootID
	for _, pod := range created {
		if worker.ActionOf(pod) != worker.ActionLoad {
			continue
		}
		cfg, err := worker.ConfigOf(pod)
		if err != nil {
			return fmt.Errorf("node %s, loader pod %s/%s: %w", p.nmc.Name, pod.Namespace, pod.Name, err)
		}
		setStatus(p.nmc, kmmv1beta1.NodeModuleStatus{ModuleItem: worker.ItemOf(pod), Config: cfg, BootID: boot,
			LastTransitionTime: metav1.NewTime(r.Clock.Now())})
		logr.FromContextOrDiscard(ctx).Info("calibration variant: loader pod created; status written as loaded", "pod", pod.Name, "bootID", boot)
	}
	if equality.Semantic.DeepEqual(before, &p.nmc.Status) {
		return nil
	}
	if err := r.writeStatus(ctx, p.nmc, p.node, before); err != nil {
		return fmt.Errorf("patch status of nodemodulesconfig %s: %w", p.nmc.Name, err)
	}
	r.seen.Store(p.nmc.Name, p.nmc.ResourceVersion)
	return nil
}

// The hooks below are where the calibration variants change the
// reconciler, each one guarded by its variant: the correct reconciler (no
// variant) passes every hook unchanged, so its own code paths hold no
// variant's behaviour.

// variantConfigChange is ignore-image-change's and load-without-unload's
// answer to a config change without a kernel change; true when the
// variant handled it.
func (r *Reconciler) variantConfigChange(ctx context.Context, p *pending, spec *kmmv1beta1.NodeModuleSpec) bool {
	log := logr.FromContextOrDiscard(ctx)
	if r.is(variant.IgnoreImageChange) {
		log.Info("calibration variant: config changed; ignoring it")
		return true
	}
	if r.is(variant.LoadWithoutUnload) {
		log.Info("calibration variant: config changed; loading it over the old one")
		r.plan(p, spec.ModuleItem, spec.Config, worker.ActionLoad)
		return true
	}
	return false
}

// variantIgnoresKernelChange is ignore-kernel-change's.
func (r *Reconciler) variantIgnoresKernelChange(ctx context.Context) bool {
	if !r.is(variant.IgnoreKernelChange) {
		return false
	}
	logr.FromContextOrDiscard(ctx).Info("calibration variant: kernel version changed; ignoring it")
	return true
}

// variantVerdict is the detector's verdict v on a module, as
// update-events-only and reload-loop see it instead.
func (r *Reconciler) variantVerdict(node *corev1.Node, status *kmmv1beta1.NodeModuleStatus, key string, v detect.Verdict) detect.Verdict {
	if r.is(variant.UpdateEventsOnly) {
		return r.rebootedSinceSeen(node, key)
	}
	if r.is(variant.ReloadLoop) {
		if r.Clock.Since(status.LastTransitionTime.Time) > reloadLoopAfter {
			return detect.Verdict{Rebooted: true, Reason: "calibration variant: the last load is over " + reloadLoopAfter.String() + " old"}
		}
	}
	return v
}

// variantSkipsReload is no-reload's.
func (r *Reconciler) variantSkipsReload(ctx context.Context) bool {
	if !r.is(variant.NoReload) {
		return false
	}
	logr.FromContextOrDiscard(ctx).Info("calibration variant: reboot detected; not loading again")
	return true
}

// variantIgnoresRemoved is ignore-removed's.
func (r *Reconciler) variantIgnoresRemoved(ctx context.Context) bool {
	if !r.is(variant.IgnoreRemoved) {
		return false
	}
	logr.FromContextOrDiscard(ctx).V(1).Info("calibration variant: module removed from the spec; ignoring it")
	return true
}

// variantOrphanVerdict is the detector's verdict v on a removed module, as
// drop-removed sees it instead.
func (r *Reconciler) variantOrphanVerdict(v detect.Verdict) detect.Verdict {
	if !r.is(variant.DropRemoved) {
		return v
	}
	return detect.Verdict{Rebooted: true, Reason: "calibration variant: dropped without unloading"}
}

// variantSkipsPlan is never-load's: no loader pod.
func (r *Reconciler) variantSkipsPlan(action worker.Action) bool {
	if !r.is(variant.NeverLoad) {
		return false
	}
	return action == worker.ActionLoad
}

// variantPod is slow-pod-start's: loader pods that start late.
func (r *Reconciler) variantPod(action worker.Action, pod *corev1.Pod) {
	if !r.is(variant.SlowPodStart) {
		return
	}
	if action == worker.ActionLoad {
		pod.Annotations[worker.StartDelayAnnotation] = slowPodStartDelay.String()
	}
}

// variantDropsWriteError is drop-write-errors': true when it takes the
// write the API server refused (err) for done, asking for no retry.
func (r *Reconciler) variantDropsWriteError(ctx context.Context, err error) bool {
	if !r.is(variant.DropWriteErrors) {
		return false
	}
	logr.FromContextOrDiscard(ctx).Info("calibration variant: a refused write taken for done; no retry", "error", err.Error())
	return true
}

// variantKeepsOrphanPods is keep-orphan-pods'.
func (r *Reconciler) variantKeepsOrphanPods(ctx context.Context) bool {
	if !r.is(variant.KeepOrphanPods) {
		return false
	}
	logr.FromContextOrDiscard(ctx).Info("calibration variant: nodemodulesconfig gone; keeping its worker pods")
	return true
}

// variantRequeue is reload-loop's (its loop needs no event) and
// stale-boot-cache's (a reconcile when its entry of the node expires).
func (r *Reconciler) variantRequeue(result reconcile.Result, staleFor time.Duration) reconcile.Result {
	switch {
	case r.is(variant.ReloadLoop):
		if result.RequeueAfter == 0 {
			result.RequeueAfter = reloadLoopAfter
		}
	case r.is(variant.StaleBootCache):
		// It reads the node again once its entry expires.
		if staleFor > 0 && (result.RequeueAfter == 0 || result.RequeueAfter > staleFor) {
			result.RequeueAfter = staleFor
		}
	}
	return result
}

// variantStaleBoot is stale-boot-cache's defect: the reconciler shows
// node in the boot ID it cached, read again only once the entry is
// staleBootFor old, so a reboot goes unnoticed until then. It returns how
// long until the entry is read again when the node's own boot differs
// (the reconcile is requeued then), else 0.
func (r *Reconciler) variantStaleBoot(node *corev1.Node) time.Duration {
	if !r.is(variant.StaleBootCache) {
		return 0
	}
	now := r.Clock.Now()
	if v, ok := r.vs.boots.Load(node.Name); ok {
		c := v.(cachedBoot)
		if age := now.Sub(c.at); age < staleBootFor {
			if c.boot == node.Status.NodeInfo.BootID {
				return 0
			}
			node.Status.NodeInfo.BootID = c.boot
			return staleBootFor - age
		}
	}
	r.vs.boots.Store(node.Name, cachedBoot{boot: node.Status.NodeInfo.BootID, at: now})
	return 0
}

// variantAfterCreate is status-on-create's.
func (r *Reconciler) variantAfterCreate(ctx context.Context, p *pending, created []*corev1.Pod) {
	if !r.is(variant.StatusOnCreate) {
		return
	}
	if err := r.claimCreated(ctx, p, created); err != nil {
		p.fail(err)
	}
}

// variantDropsLoad is two-workers': true when it drops the finished load
// of key in boot.
func (r *Reconciler) variantDropsLoad(ctx context.Context, p *pending, key, boot string) bool {
	if !r.is(variant.TwoWorkers) {
		return false
	}
	if !r.firstLoadDropped(p.nmc.Name, key, boot) {
		return false
	}
	logr.FromContextOrDiscard(ctx).Info("calibration variant: first load of the boot not recorded; loading again", "module", key, "bootID", boot)
	return true
}

// variantBoot is the boot recorded for a load, as no-boot-record records
// it (none).
func (r *Reconciler) variantBoot(boot string) string {
	if r.is(variant.NoBootRecord) {
		return ""
	}
	return boot
}

// variantRefusePatch is refused-status-patches' simulated API server.
func (r *Reconciler) variantRefusePatch(node *corev1.Node) error {
	if !r.is(variant.RefusedStatusPatches) {
		return nil
	}
	return r.refusePatch(node)
}
