package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/bootproof/bootproof/scenarios/trace"
)

// LeaseRef names a Lease.
type LeaseRef struct {
	Namespace string `yaml:"namespace" json:"namespace"`
	Name      string `yaml:"name" json:"name"`
}

func (r LeaseRef) String() string { return r.Namespace + "/" + r.Name }

// LeaderLeaser is the optional capability of a subject instance whose
// operator elects a leader: it names the Lease it elects it with (ok
// false: it elects none, or does not know yet). After the harness stops
// and starts the subject (pause-subject then resume-subject,
// restart-subject), the next reload window opens when an instance holds
// that Lease again: an operator that keeps its Lease on exit
// (controller-runtime's default) may not act before the old Lease
// expires, and that is no fault of its own. A subject without it, or
// whose Lease is not known, is given the window from its resume.
type LeaderLeaser interface {
	LeaderLease() (LeaseRef, bool)
}

// LeaseWrite is one write of a Lease the harness saw: when, and its
// holder after it (empty: released).
type LeaseWrite struct {
	At     time.Time
	Holder string
}

// LeaseFollower follows the Leases of a cluster outside kube-node-lease
// (or the one Lease of Only) through a watch, and keeps each Lease's
// writes as seen: what the reload window's leader rule (LeaderLeaser) and
// the discovery of a subject's Lease (FirstAcquired) read. Start it
// before the subject starts.
type LeaseFollower struct {
	// Clientset watches the Leases.
	Clientset kubernetes.Interface
	// Only, when set, is the one Lease followed.
	Only *LeaseRef
	// Clock stamps what is seen; default the real clock.
	Clock clock.PassiveClock
	// OnHolder, when set, learns of every holder change seen after the
	// initial list (and of the holder the list showed): the trace.
	OnHolder func(ref LeaseRef, w LeaseWrite, previous string)

	mu     sync.Mutex
	synced bool
	leases map[LeaseRef]*leaseSeen
	stop   func()
}

type leaseSeen struct {
	rv, holder string
	// initial is the holder the first list showed ("": not listed).
	initial string
	writes  []LeaseWrite // every write seen after the initial list
}

// Start lists and watches until ctx ends or Stop; it returns once the
// list is in (within a minute).
func (f *LeaseFollower) Start(ctx context.Context) error {
	if f.Clock == nil {
		f.Clock = clock.RealClock{}
	}
	f.leases = map[LeaseRef]*leaseSeen{}
	ns, sel := metav1.NamespaceAll, fields.OneTermNotEqualSelector("metadata.namespace", corev1.NamespaceNodeLease).String()
	if f.Only != nil {
		ns, sel = f.Only.Namespace, fields.OneTermEqualSelector("metadata.name", f.Only.Name).String()
	}
	leases := f.Clientset.CoordinationV1().Leases(ns)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return leases.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return leases.Watch(ctx, o)
		},
	}
	// A client that cannot stream the initial list (a fake) says so.
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, f.Clientset), &coordinationv1.Lease{}, 0, cache.Indexers{})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: f.on, UpdateFunc: func(_, n any) { f.on(n) }}); err != nil {
		return fmt.Errorf("follow Leases: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	f.stop = func() { cancel(); wg.Wait() }
	syncCtx, done := context.WithTimeout(ctx, time.Minute)
	defer done()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		f.Stop()
		return fmt.Errorf("follow Leases: cannot list and watch Leases within a minute")
	}
	f.mu.Lock()
	f.synced = true
	f.mu.Unlock()
	return nil
}

// Stop ends the watch.
func (f *LeaseFollower) Stop() {
	if f.stop != nil {
		f.stop()
	}
}

func (f *LeaseFollower) on(obj any) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return
	}
	ref := LeaseRef{Namespace: l.Namespace, Name: l.Name}
	// The watch's field selector says the same; a client that ignores
	// it (a fake) must not change what is followed.
	if f.Only != nil && ref != *f.Only || f.Only == nil && ref.Namespace == corev1.NamespaceNodeLease {
		return
	}
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	now := f.Clock.Now()
	f.mu.Lock()
	s := f.leases[ref]
	if s != nil && s.rv == l.ResourceVersion && s.rv != "" {
		f.mu.Unlock()
		return // a relist of what was seen
	}
	if s == nil {
		s = &leaseSeen{}
		f.leases[ref] = s
	}
	s.rv = l.ResourceVersion
	previous := s.holder
	s.holder = holder
	if !f.synced {
		s.initial = holder
	} else {
		s.writes = append(s.writes, LeaseWrite{At: now, Holder: holder})
	}
	on := f.OnHolder
	report := on != nil && (holder != previous || !f.synced)
	f.mu.Unlock()
	if report {
		on(ref, LeaseWrite{At: now, Holder: holder}, previous)
	}
}

// HeldAfter returns the first write of ref seen after t that leaves it
// with a holder: an instance holds the Lease (one that waits for another's
// Lease to expire writes nothing until it takes it; one that leads
// renews it). ok is false when none was seen yet.
func (f *LeaseFollower) HeldAfter(ref LeaseRef, t time.Time) (LeaseWrite, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.leases[ref]
	if s == nil {
		return LeaseWrite{}, false
	}
	for _, w := range s.writes {
		if w.At.After(t) && w.Holder != "" {
			return w, true
		}
	}
	return LeaseWrite{}, false
}

// FirstAcquired returns the Lease that first took a holder it did not
// have in the initial list (a new Lease, or a new holder), after t: the
// Lease of an operator started at t that elects a leader, when nothing
// else in the cluster changed leader meanwhile. ok is false when no Lease
// did.
func (f *LeaseFollower) FirstAcquired(t time.Time) (LeaseRef, LeaseWrite, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var best LeaseRef
	var bestW LeaseWrite
	found := false
	refs := make([]LeaseRef, 0, len(f.leases))
	for r := range f.leases {
		refs = append(refs, r)
	}
	slices.SortFunc(refs, func(a, b LeaseRef) int { return strings.Compare(a.String(), b.String()) })
	for _, r := range refs {
		s := f.leases[r]
		prev := s.initial
		for _, w := range s.writes {
			if w.Holder != "" && w.Holder != prev && w.At.After(t) {
				if !found || w.At.Before(bestW.At) {
					best, bestW, found = r, w, true
				}
				break
			}
			prev = w.Holder
		}
	}
	return best, bestW, found
}

// followLeader starts following the subject's leader Lease, once its
// instance names one (LeaderLeaser): the holder changes go into the
// trace, and awaitLeader reads the writes. Nothing when the subject
// names none or it is followed already.
func (c *caseRun) followLeader(ctx context.Context) error {
	ll, ok := c.inst.(LeaderLeaser)
	if !ok {
		return nil
	}
	ref, ok := ll.LeaderLease()
	c.mu.Lock()
	started := c.leader != nil
	c.mu.Unlock()
	if !ok || started {
		return nil
	}
	f := &LeaseFollower{Clientset: c.cs, Only: &ref, OnHolder: func(ref LeaseRef, w LeaseWrite, previous string) {
		detail := fmt.Sprintf("leader Lease %s held by %s", ref, w.Holder)
		switch {
		case w.Holder == "":
			detail = fmt.Sprintf("leader Lease %s released by %s", ref, previous)
		case previous != "":
			detail = fmt.Sprintf("leader Lease %s taken by %s from %s", ref, w.Holder, previous)
		}
		c.obs.Add(trace.Event{Kind: trace.KindLeader, Detail: detail}, w.At)
	}}
	if err := f.Start(ctx); err != nil {
		return infra("subject %s: %w", c.subj.Name(), err)
	}
	c.mu.Lock()
	c.leader, c.leaderRef = f, ref
	c.mu.Unlock()
	return nil
}

// awaitLeader holds a reload window back, after the harness stopped and
// started the subject, until an instance of it holds its leader Lease
// again (LeaderLeaser): the subject can act from then on, the same rule
// whatever verdict it is expected to get. A subject that names no Lease,
// or one not stopped, is not held; a Lease that is not held within
// timeout leaves the wait to judge.
func (c *caseRun) awaitLeader(ctx context.Context, timeout time.Duration) {
	c.mu.Lock()
	f, ref, pausedAt, resumedAt := c.leader, c.leaderRef, c.pausedAt, c.resumedAt
	c.mu.Unlock()
	if f == nil || pausedAt.IsZero() || resumedAt.Before(pausedAt) {
		return
	}
	if _, ok := f.HeldAfter(ref, pausedAt); ok {
		return
	}
	var held LeaseWrite
	err := c.waitFor(ctx, timeout, func() error {
		var ok bool
		if held, ok = f.HeldAfter(ref, pausedAt); ok {
			return nil
		}
		return errNotYet
	})
	if err != nil {
		c.obs.Action("", "", fmt.Sprintf("reload window: leader Lease %s not held within %s of the subject's resume", ref, HumanDuration(time.Since(resumedAt))))
		return
	}
	c.obs.Action("", "", fmt.Sprintf("reload window opens: leader Lease %s held by %s, %s after the subject's resume", ref, held.Holder,
		HumanDuration(held.At.Sub(resumedAt))))
}
