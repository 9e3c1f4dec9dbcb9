package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
	"github.com/bootproof/bootproof/kmm/detect"
	"github.com/bootproof/bootproof/kmm/variant"
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
	// Client reads Nodes, Pods and NodeModulesConfigs from the cache and
	// writes.
	Client client.Client
	// APIReader reads a NodeModulesConfig from the API server when the
	// cache may be behind (see readNMC).
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
	// OnPanic, when set, learns of a reconcile that panicked (Recovering);
	// the reconcile then fails and is retried.
	OnPanic PanicHandler
	// Variant, when set, seeds one calibration defect or slowness
	// (package variant); the zero value is the correct reconciler. The
	// detector and boot-source variants are set through Detector and
	// BootSource (kmm.NewManager does).
	Variant variant.Name
	// LeaderLease is the Lease the manager elects its leader with (empty:
	// it elects none); only slow-after-restart reads it.
	LeaderLease types.NamespacedName

	// seen holds, per NMC name, the resourceVersion of the newest state
	// of the NMC the reconciler knows of (its own status write, or an API
	// read after one) until the cache shows that state.
	seen sync.Map
	// finished holds, per node name, the UIDs of finished (Succeeded or
	// Failed) worker pods the reconciler deleted, until the cache no
	// longer lists them (a map[types.UID]struct{}, touched only by that
	// node's reconcile, of which there is one at a time). A reconcile on a
	// cache that still shows such a pod would otherwise record its result,
	// emit its Event and delete it once more: under a reboot storm that
	// was 0.44 extra Events and deletes per load.
	finished sync.Map
	// vs is the calibration variants' memory.
	vs variantState
	// schema is what the cluster's schema keeps of a status entry.
	schema statusSchema
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

	if err := r.variantWait(ctx); err != nil {
		return reconcile.Result{}, err
	}
	nmc, err := r.readNMC(ctx, nodeName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			if r.variantKeepsOrphanPods(ctx) {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, r.releaseOrphanPods(ctx, nodeName)
		}
		return reconcile.Result{}, fmt.Errorf("get nodemodulesconfig %s: %w", nodeName, err)
	}
	if err := r.checkSchema(ctx, nmc); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.restoreLoadTimes(nmc); err != nil {
		return reconcile.Result{}, err
	}
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: nodeName}, node); err != nil {
		if apierrors.IsNotFound(err) {
			log.V(1).Info("node does not exist (yet); waiting for it")
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("get node %s: %w", nodeName, err)
	}
	staleFor := r.variantStaleBoot(node)
	pods, err := r.workerPods(ctx, nmc)
	if err != nil {
		return reconcile.Result{}, err
	}

	p := &pending{nmc: nmc, node: node, release: map[types.UID]*corev1.Pod{}}
	before := nmc.Status.DeepCopy()
	r.syncStatus(ctx, p, pods.current)
	r.decide(ctx, p, pods)

	statusChanged := !equality.Semantic.DeepEqual(before, &nmc.Status)
	if statusChanged {
		// Write status before releasing pods: a result is never lost, and a
		// conflict (someone changed the NMC) leaves everything for a retry.
		if err := r.saveLoadTimes(ctx, nmc, nmc.Status.Modules); err != nil {
			return reconcile.Result{}, err
		}
		if err := r.writeStatus(ctx, nmc, node, before); err != nil && !r.variantDropsWriteError(ctx, err) {
			return reconcile.Result{}, fmt.Errorf("patch status of nodemodulesconfig %s: %w", nodeName, errors.Join(append(p.errs, err)...))
		}
		r.seen.Store(nodeName, nmc.ResourceVersion)
	}
	for _, pod := range p.release {
		if err := r.releasePod(ctx, pod); err != nil && !r.variantDropsWriteError(ctx, err) {
			p.fail(err)
			continue
		}
		r.noteFinished(nodeName, pod)
	}
	for _, e := range p.events {
		r.event(node, e)
	}
	result, created := r.createPods(ctx, p)
	result = r.variantRequeue(result, staleFor)
	r.variantAfterCreate(ctx, p, created)
	log.V(1).Info("reconciled", "bootID", node.Status.NodeInfo.BootID, "ready", detect.IsReady(node), "statusChanged", statusChanged,
		"created", len(created), "released", len(p.release), "retry", result.RequeueAfter > 0, "errors", len(p.errs))
	return result, errors.Join(p.errs...)
}

// readNMC returns the NMC from the cache when the cache shows the newest
// state the reconciler knows of, and from the API server otherwise: when
// the cache lacks the NMC (not there yet, or not selected), or has not
// caught up with the reconciler's last status write. Deciding on a
// status older than that write could load a module twice in one boot;
// reading the cache otherwise spares the API server a read per reconcile,
// which under a reboot storm delays every loader pod.
func (r *Reconciler) readNMC(ctx context.Context, name string) (*kmmv1beta1.NodeModulesConfig, error) {
	key := types.NamespacedName{Name: name}
	nmc := &kmmv1beta1.NodeModulesConfig{}
	err := r.Client.Get(ctx, key, nmc)
	switch {
	case err == nil:
		rv, pending := r.seen.Load(name)
		if !pending {
			return nmc, nil
		}
		if rv == nmc.ResourceVersion {
			r.seen.Delete(name)
			return nmc, nil
		}
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	nmc = &kmmv1beta1.NodeModulesConfig{}
	if err := r.APIReader.Get(ctx, key, nmc); err != nil {
		return nil, err
	}
	if _, pending := r.seen.Load(name); pending {
		// Someone may have written after the reconciler: wait for the
		// cache to show this state instead.
		r.seen.Store(name, nmc.ResourceVersion)
	}
	return nmc, nil
}

// live returns pod unless this reconcile already released it.
func (p *pending) live(pod *corev1.Pod) *corev1.Pod {
	if pod == nil || p.release[pod.UID] != nil {
		return nil
	}
	return pod
}

func (r *Reconciler) event(node *corev1.Node, e nodeEvent) {
	if r.Recorder == nil {
		return
	}
	r.Recorder.Eventf(node, nil, e.typ, e.reason, e.action, "%s", e.note)
}

func moduleKey(namespace, name string) string { return namespace + "/" + name }

var _ reconcile.Reconciler = (*Reconciler)(nil)
