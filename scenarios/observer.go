package scenarios

import (
	"cmp"
	"context"
	"fmt"
	"github.com/bootproof/bootproof/scenarios/trace"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/scenarios/judging"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Truth is a node's kernel ground truth as its kubelet published it.
type Truth struct {
	BootID        string
	KernelVersion string
	// Modules maps each loaded module to its load time.
	Modules map[string]time.Time
	// Actions counts, per module, the loads and unloads the node's
	// kernel was asked to make in this boot (nil: the node does not
	// count them).
	Actions map[string]ActionCount
}

// GroundTruthReader is the capability of a node backend whose nodes
// publish their kernel's ground truth on their Leases (the lightweight
// kubelet, simulated or in a VM, does: contract.GroundTruthAnnotation).
type GroundTruthReader interface {
	// ReadGroundTruth decodes what a node published on its Lease; nil
	// when it has published nothing yet.
	ReadGroundTruth(*coordinationv1.Lease) (*contract.GroundTruth, error)
}

// truthOf is the observer's form of a published ground truth.
func truthOf(g *contract.GroundTruth) Truth {
	t := Truth{BootID: g.BootID, KernelVersion: g.KernelVersion, Modules: make(map[string]time.Time, len(g.Modules))}
	for _, m := range g.Modules {
		t.Modules[m.Name] = m.LoadedAt
	}
	if len(g.Actions) > 0 {
		t.Actions = make(map[string]ActionCount, len(g.Actions))
		for _, a := range g.Actions {
			t.Actions[a.Module] = ActionCount{Loads: a.Loads, Unloads: a.Unloads}
		}
	}
	return t
}

// podObs is what the observer knows of one worker pod.
type podObs struct {
	name, node, action, moduleName string
	created                        time.Time
	runningAt, succeededAt         time.Time // first seen so (zero: never)
	phase                          corev1.PodPhase
	running, succeeded, deleted    bool
	loadBoot                       string // boot the action ran in
}

// load is one successful worker action.
type load struct {
	node, moduleName, action, boot string
	at                             time.Time
	modules                        []string
}

// nodeObs is the observer's view of one node.
type nodeObs struct {
	ready         corev1.ConditionStatus
	bootID        string
	kernelVersion string
	bootSeen      map[string]time.Time // when each boot ID was first visible
	notReadyAt    []time.Time          // every observation of Ready != True
	truth         *Truth
	truthAt       time.Time
	renewTime     time.Time
	renewSeen     []time.Time // when each renewal was observed (the harness's clock)
	status        []StatusEntry
	spec          []StatusEntry
	lastModule    map[string]time.Time // first observation of module loaded, per boot+module
	truthBootSeen map[string]time.Time // when each boot ID was first in the ground truth
	// truthActions is the highest action count the kernel published per
	// boot and module.
	truthActions map[string]map[string]ActionCount
	// lifecycleTaints are the node's not-ready and unreachable taints.
	lifecycleTaints []string
	truths          []judging.TruthSeen // every ground truth, in the order seen
	// kernelLoaded is the kernel's own stamp of each module's load, per
	// boot+module, from the first ground truth that listed it.
	kernelLoaded map[string]time.Time
	// claims is every status claim seen, in the order seen; the open
	// ones have a zero Until.
	claims []judging.StatusClaim
}

// Observer watches one case's Nodes, Leases, worker pods and
// NodeModulesConfigs and keeps an ordered trace. It never samples: every
// state it holds came from a watch event.
type Observer struct {
	start   time.Time
	nodes   map[string]bool
	readTr  GroundTruthReader
	mu      sync.Mutex
	trace   []trace.Event
	state   map[string]*nodeObs
	pods    map[string]*podObs
	loads   []load
	changed chan struct{}
	errs    []string
	// watches tracks each informer's last event and its failures.
	watches map[string]*watchState
	gaps    []WatchGap
	// statusBoot: some status entry carried a bootId.
	statusBoot bool
	stopFns    []func()
}

func newObserver(start time.Time, nodeNames []string, readTruth GroundTruthReader) *Observer {
	o := &Observer{start: start, nodes: map[string]bool{}, readTr: readTruth, state: map[string]*nodeObs{},
		pods: map[string]*podObs{}, changed: make(chan struct{})}
	for _, n := range nodeNames {
		o.nodes[n] = true
		o.state[n] = &nodeObs{bootSeen: map[string]time.Time{}, lastModule: map[string]time.Time{}, truthBootSeen: map[string]time.Time{},
			truthActions: map[string]map[string]ActionCount{}, kernelLoaded: map[string]time.Time{}}
	}
	return o
}

func (o *Observer) ms(t time.Time) int64 { return t.Sub(o.start).Milliseconds() }

// record appends to the trace and wakes waiters; call with o.mu held.
func (o *Observer) record(ev trace.Event, at time.Time) {
	ev.TMS = o.ms(at)
	o.trace = append(o.trace, ev)
	close(o.changed)
	o.changed = make(chan struct{})
}

// recordAt records ev as seen at time at (before later events, if at
// is earlier: Trace sorts by time).
func (o *Observer) recordAt(ev trace.Event, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.record(ev, at)
}

// Action records one of the engine's actions in the trace: the timeline
// action it belongs to (empty for the engine's own steps) and prose.
func (o *Observer) Action(node string, kind ActionKind, detail string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.record(trace.Event{Kind: trace.KindAction, Node: node, Action: kind, Detail: detail}, time.Now())
}

// Disruption records the start (trace.PhaseStart, with its downtime or
// length) or the end (trace.PhaseDone) of a node disruption.
func (o *Observer) Disruption(node string, kind ActionKind, phase trace.Phase, downtime time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.record(trace.DisruptionEvent(node, kind, phase, downtime), time.Now())
}

// Changed returns a channel closed at the next observation.
func (o *Observer) Changed() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.changed
}

// Trace returns a copy of the trace, in time order.
func (o *Observer) Trace() []trace.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := slices.Clone(o.trace)
	slices.SortStableFunc(out, func(a, b trace.Event) int { return cmp.Compare(a.TMS, b.TMS) })
	return out
}

// crdWait bounds the wait for the NodeModulesConfig API to be served.
const crdWait = time.Minute

// start runs the informers until ctx ends and waits for their first sync.
func (o *Observer) run(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, selector map[string]string, namespace string) error {
	sel := labels.SelectorFromSet(selector).String()
	// A missing CRD would only show as a cache that never syncs. A subject
	// that installs its CRD as it starts may not have done so yet: wait.
	var missing error
	_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, crdWait, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(contract.NMCResource).List(ctx, metav1.ListOptions{Limit: 1, LabelSelector: sel})
		if missing = nil; apierrors.IsNotFound(err) {
			missing = err
		}
		return missing == nil, nil
	})
	if missing != nil {
		return fmt.Errorf("observer: the cluster does not serve %s within %s (is its CRD installed? the subject, or a subject file's crds, installs it): %w", contract.NMCResource.GroupResource(), crdWait, missing)
	}
	withSel := func(o metav1.ListOptions) metav1.ListOptions { o.LabelSelector = sel; return o }
	nodes := cs.CoreV1().Nodes()
	leases := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	pods := cs.CoreV1().Pods(namespace)
	nmcs := dyn.Resource(contract.NMCResource)
	informers := []struct {
		what string
		obj  runtime.Object
		lw   *cache.ListWatch
		on   func(any)
	}{
		{"Nodes", &corev1.Node{}, o.listWatch("Nodes",
			func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
				return nodes.List(ctx, withSel(lo))
			},
			func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
				return nodes.Watch(ctx, withSel(lo))
			}), o.onNode},
		{"Leases", &coordinationv1.Lease{}, o.listWatch("Leases",
			func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) { return leases.List(ctx, lo) },
			func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
				return leases.Watch(ctx, lo)
			}), o.onLease},
		{"Pods", &corev1.Pod{}, o.listWatch("Pods",
			func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) { return pods.List(ctx, lo) },
			func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) { return pods.Watch(ctx, lo) }), o.onPod},
		{"NodeModulesConfigs", &unstructured.Unstructured{}, o.listWatch("NodeModulesConfigs",
			func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
				return nmcs.List(ctx, withSel(lo))
			},
			func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
				return nmcs.Watch(ctx, withSel(lo))
			}), o.onNMC},
	}
	infCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	o.stopFns = append(o.stopFns, func() { stop(); wg.Wait() })
	started := make([]cache.SharedIndexInformer, len(informers))
	for n, i := range informers {
		inf := cache.NewSharedIndexInformer(i.lw, i.obj, 0, cache.Indexers{})
		on := i.on
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: on, UpdateFunc: func(_, n any) { on(n) }}); err != nil {
			return fmt.Errorf("observer: %w", err)
		}
		if i.what == "Pods" {
			if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: o.onPodDelete}); err != nil {
				return fmt.Errorf("observer: %w", err)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			inf.RunWithContext(infCtx)
		}()
		started[n] = inf
	}
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for n, inf := range started {
		if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("observer: cannot list and watch %s within a minute", informers[n].what)
		}
	}
	return nil
}

func (o *Observer) shutdown() {
	for _, f := range o.stopFns {
		f()
	}
}

// readyOf is a Node's Ready status, Unknown when it has no Ready
// condition yet.
func readyOf(n *corev1.Node) corev1.ConditionStatus {
	return cmp.Or(contract.NodeReady(n), corev1.ConditionUnknown)
}

// NodeSnapshot is the observer's last view of one node, for messages.
type NodeSnapshot struct {
	Ready string
	// LifecycleTaints are the node lifecycle controller's taints the node
	// carries (not-ready, unreachable).
	LifecycleTaints []string
	BootID          string
	KernelVersion   string
	TruthBoot       string
	TruthModules    []string
	Status          []StatusEntry
	Spec            []StatusEntry
	Pods            []string
}

// Snapshot returns the last observed state of node.
func (o *Observer) Snapshot(node string) NodeSnapshot {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.state[node]
	out := NodeSnapshot{Ready: string(s.ready), LifecycleTaints: slices.Clone(s.lifecycleTaints), BootID: s.bootID, KernelVersion: s.kernelVersion,
		Status: slices.Clone(s.status), Spec: slices.Clone(s.spec)}
	if s.truth != nil {
		out.TruthBoot = s.truth.BootID
		out.TruthModules = sortedKeys(s.truth.Modules)
	}
	var pods []*podObs
	for _, p := range o.pods {
		if p.node == node {
			pods = append(pods, p)
		}
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].created.Before(pods[j].created) })
	for _, p := range pods {
		out.Pods = append(out.Pods, fmt.Sprintf("%s(%s %s %s)", p.name, p.action, p.moduleName, p.phase))
	}
	return out
}

func (s NodeSnapshot) String() string {
	var st []string
	for _, e := range s.Status {
		st = append(st, fmt.Sprintf("%s@%s", e.Name, judging.Short(e.BootID)))
	}
	return fmt.Sprintf("Ready=%s boot=%s kernel=%s; ground truth: boot=%s modules=%v; NMC status: %v; worker pods: %v",
		s.Ready, judging.Short(s.BootID), s.KernelVersion, judging.Short(s.TruthBoot), s.TruthModules, st, s.Pods)
}
