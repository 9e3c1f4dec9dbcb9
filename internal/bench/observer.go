package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/bootproof/bootproof/contract"
)

// Observer watches the Nodes of one fleet, and their Leases in
// kube-node-lease, from the API: what a control plane sees of the fleet,
// whoever runs it. Between Record(true) and Record(false) it counts every
// Node update whose Ready condition is not True (an observation) and every
// Ready True -> not True change (a transition), and the lateness of every
// Lease renewal: the gap between two successive renewTimes minus the
// expected renew interval.
type Observer struct {
	match         func(name string) bool
	renewInterval time.Duration

	mu          sync.Mutex
	ready       map[string]bool
	recording   bool
	observed    int
	transitions int
	renewals    int
	lateness    []float64 // ms
}

// Figures is what an Observer counted while recording.
type Figures struct {
	// NotReadyObservations counts Node updates with Ready not True.
	NotReadyObservations int
	// NotReadyTransitions counts Ready True -> not True changes.
	NotReadyTransitions int
	// Renewals counts Lease renewals (a later renewTime).
	Renewals int
	// LatenessMs holds each renewal's gap minus the renew interval, in ms.
	LatenessMs []float64
}

// Observe starts watching the Nodes whose names match and their Leases,
// until ctx ends, and returns once both caches are synced.
// renewInterval is the interval renewals are expected at (kubelet: a
// quarter of the lease duration).
func Observe(ctx context.Context, client kubernetes.Interface, match func(name string) bool, renewInterval time.Duration) (*Observer, error) {
	o := &Observer{match: match, renewInterval: renewInterval, ready: map[string]bool{}}
	nodes := informers.NewSharedInformerFactory(client, 0).Core().V1().Nodes().Informer()
	if _, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.node(nil, obj) },
		UpdateFunc: func(old, obj any) { o.node(old, obj) },
		DeleteFunc: o.nodeGone,
	}); err != nil {
		return nil, err
	}
	leases := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(corev1.NamespaceNodeLease)).
		Coordination().V1().Leases().Informer()
	if _, err := leases.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: o.lease}); err != nil {
		return nil, err
	}
	go nodes.Run(ctx.Done())
	go leases.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), nodes.HasSynced, leases.HasSynced) {
		return nil, fmt.Errorf("observe fleet: caches not synced: %w", ctx.Err())
	}
	return o, nil
}

func (o *Observer) node(old, obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok || !o.match(n.Name) {
		return
	}
	ready := contract.NodeReady(n) == corev1.ConditionTrue
	o.mu.Lock()
	defer o.mu.Unlock()
	was := o.ready[n.Name]
	o.ready[n.Name] = ready
	if !o.recording || old == nil || ready {
		return
	}
	o.observed++
	if was {
		o.transitions++
	}
}

func (o *Observer) nodeGone(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if n, ok := obj.(*corev1.Node); ok {
		o.mu.Lock()
		delete(o.ready, n.Name)
		o.mu.Unlock()
	}
}

func (o *Observer) lease(old, obj any) {
	a, ok1 := old.(*coordinationv1.Lease)
	l, ok2 := obj.(*coordinationv1.Lease)
	if !ok1 || !ok2 || !o.match(l.Name) || a.Spec.RenewTime == nil || l.Spec.RenewTime == nil {
		return
	}
	gap := l.Spec.RenewTime.Sub(a.Spec.RenewTime.Time)
	if gap <= 0 {
		return // not a renewal: another field changed
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.recording {
		o.renewals++
		o.lateness = append(o.lateness, float64((gap-o.renewInterval).Microseconds())/1000)
	}
}

// Ready returns how many matching Nodes are Ready now.
func (o *Observer) Ready() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, r := range o.ready {
		if r {
			n++
		}
	}
	return n
}

// WaitReady waits until at least n matching Nodes are Ready, or ctx ends.
func (o *Observer) WaitReady(ctx context.Context, n int) error {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		got := o.Ready()
		if got >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d nodes Ready: %w", got, n, ctx.Err())
		case <-t.C:
		}
	}
}

// Record starts (true) or stops (false) counting.
func (o *Observer) Record(on bool) {
	o.mu.Lock()
	o.recording = on
	o.mu.Unlock()
}

// Figures returns what was counted while recording.
func (o *Observer) Figures() Figures {
	o.mu.Lock()
	defer o.mu.Unlock()
	return Figures{NotReadyObservations: o.observed, NotReadyTransitions: o.transitions, Renewals: o.renewals,
		LatenessMs: append([]float64(nil), o.lateness...)}
}
