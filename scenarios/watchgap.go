package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
)

// WatchGap is a period in which one of the observer's watches was broken:
// from its last event before a watch failure (a 410 Gone after
// compaction, an API server restart) to the relist that followed. Events
// in it may be lost: a short NotReady, a worker pod that came and went.
type WatchGap struct {
	What string // Nodes, Leases, Pods, NodeModulesConfigs
	From time.Time
	// To is zero while the watch has not relisted.
	To  time.Time
	Err string
}

type watchState struct {
	lastEvent time.Time
	open      *WatchGap
}

// watch registers f for inf's adds and updates, and records inf's watch
// failures and relists as gaps, in the trace too.
func (o *Observer) watch(ctx context.Context, what string, inf cache.SharedIndexInformer, f func(any)) error {
	o.mu.Lock()
	if o.watches == nil {
		o.watches = map[string]*watchState{}
	}
	st := &watchState{lastEvent: o.start}
	o.watches[what] = st
	o.mu.Unlock()
	seen := func(obj any) {
		o.mu.Lock()
		st.lastEvent = time.Now()
		o.mu.Unlock()
		f(obj)
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, n any) { seen(n) }}); err != nil {
		return err
	}
	return inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		o.onWatchError(ctx, what, inf, err)
	})
}

// onWatchError opens a gap for what's watch (once until it relists) and
// closes it when the informer has synced again.
func (o *Observer) onWatchError(ctx context.Context, what string, inf cache.SharedIndexInformer, err error) {
	now := time.Now()
	why := err.Error()
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || strings.Contains(why, "too old resource version") {
		why = "watch expired (410 Gone): " + why
	}
	o.mu.Lock()
	st := o.watches[what]
	if st.open != nil {
		o.mu.Unlock()
		return
	}
	st.open = &WatchGap{What: what, From: st.lastEvent, Err: why}
	o.record(TraceEvent{Kind: TraceWatch, Detail: fmt.Sprintf("%s watch failed (%s); events since %.1fs may be lost until it relists",
		what, why, st.lastEvent.Sub(o.start).Seconds())}, now)
	o.mu.Unlock()
	rv := inf.LastSyncResourceVersion()
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if inf.LastSyncResourceVersion() == rv {
				continue
			}
			o.mu.Lock()
			g := *st.open
			g.To = time.Now()
			o.gaps = append(o.gaps, g)
			st.open = nil
			o.record(TraceEvent{Kind: TraceWatch, Detail: what + " watch relisted"}, g.To)
			o.mu.Unlock()
			return
		}
	}()
}

// Gaps returns the watch gaps that overlap [from, to], open ones included.
func (o *Observer) Gaps(from, to time.Time) []WatchGap {
	o.mu.Lock()
	defer o.mu.Unlock()
	all := append([]WatchGap(nil), o.gaps...)
	for _, st := range o.watches {
		if st.open != nil {
			all = append(all, *st.open)
		}
	}
	var out []WatchGap
	for _, g := range all {
		if g.From.Before(to) && (g.To.IsZero() || g.To.After(from)) {
			out = append(out, g)
		}
	}
	return out
}

// checkObservation makes the case invalid when a watch gap overlaps it
// between its first disruption and its judgement at until.
func (c *caseRun) checkObservation(until time.Time) error {
	if c.obs == nil || c.baseAt.IsZero() {
		return nil
	}
	from := c.firstDisruption()
	gaps := c.obs.Gaps(from, until)
	if len(gaps) == 0 {
		return nil
	}
	var parts []string
	for _, g := range gaps {
		to := "the judgement"
		if !g.To.IsZero() {
			to = fmt.Sprintf("%.1fs", g.To.Sub(c.start).Seconds())
		}
		parts = append(parts, fmt.Sprintf("the %s watch was broken from %.1fs to %s (%s)", g.What, g.From.Sub(c.start).Seconds(), to, g.Err))
	}
	return &invalidRunError{"observation gap: " + strings.Join(parts, "; ") +
		": a short NotReady or a worker pod that came and went may have been missed"}
}

// firstDisruption is when the case's first disruption began, or, without
// one, when its nodes were up.
func (c *caseRun) firstDisruption() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.disrupted) > 0 && !c.disrupted[0].start.IsZero() {
		return c.disrupted[0].start
	}
	return c.baseAt
}
