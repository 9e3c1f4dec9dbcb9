package observe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/scenarios/judging"
	"github.com/bootproof/bootproof/scenarios/trace"
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
	"k8s.io/utils/clock"
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
	Actions map[string]judging.ActionCount
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
		t.Actions = make(map[string]judging.ActionCount, len(g.Actions))
		for _, a := range g.Actions {
			t.Actions[a.Module] = judging.ActionCount{Loads: a.Loads, Unloads: a.Unloads}
		}
	}
	return t
}

// podObs is what the observer knows of one worker pod.
type podObs struct {
	name, node, action, moduleName string
	image                          string
	created                        time.Time
	runningAt, succeededAt         time.Time // first seen so (zero: never)
	phase                          corev1.PodPhase
	running, succeeded, deleted    bool
	// deleting: its deletion started (a deletionTimestamp), and a
	// finalizer or the kubelet still keeps it.
	deleting bool
	loadBoot string // boot the action ran in
}

// load is one successful worker action.
type load struct {
	node, moduleName, action, boot string
	at                             time.Time
	modules                        []string
	image                          string
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
	status        []judging.StatusEntry
	spec          []judging.StatusEntry
	lastModule    map[string]time.Time // first observation of module loaded, per boot+module
	truthBootSeen map[string]time.Time // when each boot ID was first in the ground truth
	// truthActions is the highest action count the kernel published per
	// boot and module.
	truthActions map[string]map[string]judging.ActionCount
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

// Config is what an Observer watches.
type Config struct {
	// Start is the case's start: trace times are relative to it.
	Start time.Time
	// Nodes names the nodes observed; events of others are ignored.
	Nodes []string
	// GroundTruth decodes what a node published on its Lease.
	GroundTruth GroundTruthReader
	// Clock stamps every observation; default the real clock.
	Clock clock.PassiveClock

	// Clientset and Dynamic are the clients Start watches with.
	Clientset kubernetes.Interface
	Dynamic   dynamic.Interface
	// Selector selects the case's Nodes and NodeModulesConfigs.
	Selector map[string]string
	// Namespace holds the case's worker pods.
	Namespace string
}

// Observer watches one case's Nodes, Leases, worker pods and
// NodeModulesConfigs and keeps an ordered trace. It never samples: every
// state it holds came from a watch event (Start), or from an object
// handed to Observe as an informer would.
type Observer struct {
	cfg     Config
	clock   clock.PassiveClock
	start   time.Time
	nodes   map[string]bool
	readTr  GroundTruthReader
	mu      sync.Mutex
	trace   []trace.Event
	state   map[string]*nodeObs
	pods    map[string]*podObs
	loads   []load
	changed chan struct{}
	// errs is the first ground truth of each node that could not be
	// read.
	errs map[string]error
	// watches tracks each informer's last event and its failures.
	watches map[string]*watchState
	gaps    []WatchGap
	// statusBoot: some status entry carried a bootId.
	statusBoot bool
	stopFns    []func()
}

// New returns an Observer of cfg's nodes; Start begins the watches.
func New(cfg Config) (*Observer, error) {
	if len(cfg.Nodes) == 0 {
		return nil, errors.New("observer: Config.Nodes: no node to observe")
	}
	if cfg.GroundTruth == nil {
		return nil, errors.New("observer: Config.GroundTruth: no reader of the nodes' ground truth")
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	o := &Observer{cfg: cfg, clock: clk, start: cfg.Start, nodes: map[string]bool{}, readTr: cfg.GroundTruth, state: map[string]*nodeObs{},
		pods: map[string]*podObs{}, changed: make(chan struct{}), errs: map[string]error{}}
	for _, n := range cfg.Nodes {
		o.nodes[n] = true
		o.state[n] = &nodeObs{bootSeen: map[string]time.Time{}, lastModule: map[string]time.Time{}, truthBootSeen: map[string]time.Time{},
			truthActions: map[string]map[string]judging.ActionCount{}, kernelLoaded: map[string]time.Time{}}
	}
	return o, nil
}

// Observe takes in obj (a Node, a Lease, a Pod or a NodeModulesConfig as
// *unstructured.Unstructured) as an informer's add or update would:
// Start's informers call it, and tests feed scripted objects through it.
// Objects of other kinds, and of nodes not observed, are ignored.
func (o *Observer) Observe(obj any) {
	switch obj.(type) {
	case *corev1.Node:
		o.onNode(obj)
	case *coordinationv1.Lease:
		o.onLease(obj)
	case *corev1.Pod:
		o.onPod(obj)
	case *unstructured.Unstructured:
		o.onNMC(obj)
	}
}

// ObserveDeleted takes in the deletion of a worker pod or a
// NodeModulesConfig (the object, or the informer's
// cache.DeletedFinalStateUnknown of one).
func (o *Observer) ObserveDeleted(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if _, ok := obj.(*unstructured.Unstructured); ok {
		o.onNMCDelete(obj)
		return
	}
	o.onPodDelete(obj)
}

// Err reports the ground truths the observer could not read (a Lease
// whose annotation did not decode), nil when there were none.
func (o *Observer) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var errs []error
	for _, n := range sortedKeys(o.errs) {
		errs = append(errs, o.errs[n])
	}
	return errors.Join(errs...)
}

func (o *Observer) ms(t time.Time) int64 { return t.Sub(o.start).Milliseconds() }

// record appends to the trace and wakes waiters; call with o.mu held.
func (o *Observer) record(ev trace.Event, at time.Time) {
	ev.TMS = o.ms(at)
	o.trace = append(o.trace, ev)
	close(o.changed)
	o.changed = make(chan struct{})
}

// Add records ev as seen at time at (before later events, if at is
// earlier: Trace sorts by time): what the engine learnt elsewhere, such
// as a cluster fault.
func (o *Observer) Add(ev trace.Event, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.record(ev, at)
}

// Action records one of the engine's actions in the trace: the timeline
// action it belongs to (empty for the engine's own steps) and prose.
func (o *Observer) Action(node string, kind trace.ActionKind, detail string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.record(trace.Event{Kind: trace.KindAction, Node: node, Action: kind, Detail: detail}, o.clock.Now())
}

// Disruption records the start (trace.PhaseStart, with its downtime or
// length) or the end (trace.PhaseDone) of a node disruption.
func (o *Observer) Disruption(node string, kind trace.ActionKind, phase trace.Phase, downtime time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.record(trace.DisruptionEvent(node, kind, phase, downtime), o.clock.Now())
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

// CRDWait bounds Start's wait for the NodeModulesConfig API to be
// served.
const CRDWait = time.Minute

// Start runs the informers until ctx ends or Stop, and returns once
// each has listed: the NodeModulesConfig API must be served within
// CRDWait, each list must succeed within a minute.
func (o *Observer) Start(ctx context.Context) error {
	cs, dyn, namespace := o.cfg.Clientset, o.cfg.Dynamic, o.cfg.Namespace
	if cs == nil || dyn == nil {
		return errors.New("observer: Config.Clientset and Config.Dynamic are required to watch")
	}
	sel := labels.SelectorFromSet(o.cfg.Selector).String()
	if err := nmcServed(ctx, dyn, sel); err != nil {
		return err
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
		if i.what == "NodeModulesConfigs" {
			if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: o.onNMCDelete}); err != nil {
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

// nmcServed waits, up to CRDWait, until the cluster serves
// NodeModulesConfigs. A missing CRD would only show as a cache that never
// syncs, and a subject that installs its CRD as it starts may not have
// done so yet.
func nmcServed(ctx context.Context, dyn dynamic.Interface, sel string) error {
	var missing error
	_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, CRDWait, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(contract.NMCResource).List(ctx, metav1.ListOptions{Limit: 1, LabelSelector: sel})
		if missing = nil; apierrors.IsNotFound(err) {
			missing = err
		}
		return missing == nil, nil
	})
	if missing != nil {
		return fmt.Errorf("observer: the cluster does not serve %s within %s (is its CRD installed? the subject, or a subject file's crds, installs it): %w", contract.NMCResource.GroupResource(), CRDWait, missing)
	}
	return nil
}

// Stop stops the informers and waits for them to end.
func (o *Observer) Stop() {
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
	Status          []judging.StatusEntry
	Spec            []judging.StatusEntry
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
