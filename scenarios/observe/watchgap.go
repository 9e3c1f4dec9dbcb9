package observe

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bootproof/bootproof/scenarios/trace"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// WatchGap is a period in which one of the observer's watches could not
// be trusted to have seen everything: from when a watch broke off (a 410
// Gone after etcd compaction, an API server restart) to the relist that
// followed. The informer then coalesces what happened in between: a
// short NotReady, a worker pod that came and went are lost.
type WatchGap struct {
	What string // Nodes, Leases, Pods, NodeModulesConfigs
	From time.Time
	// To is zero while the watch has not relisted.
	To  time.Time
	Err string
}

// watchState is what the observer knows of one informer's list and
// watches.
type watchState struct {
	mu        sync.Mutex
	listed    bool      // the initial list is done
	lastSeen  time.Time // last event, or the end of the last watch
	lastError string    // why the last watch ended, if it said
	open      *WatchGap
}

// listWatch wraps lw so the observer sees every (re)list and every watch
// event of the informer named what: a list after the first one is a
// relist, and opens a gap from the last thing the watch delivered.
func (o *Observer) listWatch(what string, list cache.ListWithContextFunc, watchFn cache.WatchFuncWithContext) *cache.ListWatch {
	st := &watchState{lastSeen: o.start}
	o.mu.Lock()
	if o.watches == nil {
		o.watches = map[string]*watchState{}
	}
	o.watches[what] = st
	o.mu.Unlock()
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			o.listStarts(what, st)
			obj, err := list(ctx, opts)
			if err == nil {
				o.listDone(what, st)
			}
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
			if initial {
				o.listStarts(what, st) // a streaming list
			}
			w, err := watchFn(ctx, opts)
			if err != nil {
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					st.mu.Lock()
					st.lastError = "watch expired (410 Gone): " + err.Error()
					st.mu.Unlock()
				}
				return nil, err
			}
			return o.trackWatch(what, st, w, initial), nil
		},
	}
}

// listStarts opens a gap when this is a relist.
func (o *Observer) listStarts(what string, st *watchState) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.listed || st.open != nil {
		return
	}
	why := st.lastError
	if why == "" {
		why = "the watch ended and could not resume"
	}
	st.open = &WatchGap{What: what, From: st.lastSeen, Err: why}
	o.Add(trace.Event{Kind: trace.KindWatch, Detail: fmt.Sprintf("%s relisting (%s): events since %.1fs may be lost", what, why, st.lastSeen.Sub(o.start).Seconds())}, o.clock.Now())
}

// listDone closes the gap of a relist, or marks the initial list done.
func (o *Observer) listDone(what string, st *watchState) {
	now := o.clock.Now()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.listed, st.lastSeen, st.lastError = true, now, ""
	if st.open == nil {
		return
	}
	g := *st.open
	g.To = now
	st.open = nil
	o.mu.Lock()
	o.gaps = append(o.gaps, g)
	o.mu.Unlock()
	o.Add(trace.Event{Kind: trace.KindWatch, Detail: what + " relisted"}, now)
}

// trackWatch passes w's events on, noting each one's time, a 410 in the
// stream, the end of a streaming list, and when the watch ends.
func (o *Observer) trackWatch(what string, st *watchState, w watch.Interface, initial bool) watch.Interface {
	out := make(chan watch.Event)
	pw := &passWatch{Interface: w, out: out, stop: make(chan struct{})}
	go func() {
		defer close(out)
		defer func() {
			st.mu.Lock()
			st.lastSeen = o.clock.Now() // nothing is missed before the watch ends
			st.mu.Unlock()
		}()
		for ev := range w.ResultChan() {
			now := o.clock.Now()
			switch ev.Type {
			case watch.Error:
				if err := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					st.mu.Lock()
					st.lastError = "watch expired (410 Gone): " + err.Error()
					st.mu.Unlock()
				}
			case watch.Bookmark:
				if initial {
					if m, err := meta.Accessor(ev.Object); err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
						o.listDone(what, st)
					}
				}
			}
			st.mu.Lock()
			st.lastSeen = now
			st.mu.Unlock()
			select {
			case out <- ev:
			case <-pw.stop:
				return
			}
		}
	}()
	return pw
}

// passWatch is a watch whose events come through the observer.
type passWatch struct {
	watch.Interface
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (p *passWatch) ResultChan() <-chan watch.Event { return p.out }

func (p *passWatch) Stop() {
	p.stopOnce.Do(func() { close(p.stop) })
	p.Interface.Stop()
}

// Gaps returns the watch gaps that overlap [from, to], open ones included.
func (o *Observer) Gaps(from, to time.Time) []WatchGap {
	o.mu.Lock()
	all := append([]WatchGap(nil), o.gaps...)
	states := make([]*watchState, 0, len(o.watches))
	for _, st := range o.watches {
		states = append(states, st)
	}
	o.mu.Unlock()
	for _, st := range states {
		st.mu.Lock()
		if st.open != nil {
			all = append(all, *st.open)
		}
		st.mu.Unlock()
	}
	var out []WatchGap
	for _, g := range all {
		if g.From.Before(to) && (g.To.IsZero() || g.To.After(from)) {
			out = append(out, g)
		}
	}
	return out
}
