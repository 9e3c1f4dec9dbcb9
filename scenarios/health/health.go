package health

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Fault is a period in which a part of the cluster that serves or
// judges the cases was not working: a component that exited (until it was
// back), the API server not answering, kube-controller-manager's leader
// Lease not renewed. A case whose window overlaps one is not judged.
type Fault struct {
	// Component is etcd, kube-apiserver or kube-controller-manager.
	Component string
	From      time.Time
	// To is zero while the fault lasts.
	To     time.Time
	Detail string
}

// Overlaps reports whether f overlaps [from, to].
func (f Fault) Overlaps(from, to time.Time) bool {
	return f.From.Before(to) && (f.To.IsZero() || f.To.After(from))
}

// Cluster is the cluster a Monitor watches: an identity that may read
// /readyz and the kube-system Leases. A Cluster that is also a
// FaultReporter reports its own components' exits.
type Cluster interface {
	RESTConfig() *rest.Config
}

// FaultReporter is the optional capability of a Cluster that supervises
// its own components (the embedded cluster): every exit of one, until it
// was back.
type FaultReporter interface {
	ComponentFaults() []Fault
}

// Names of the components a Fault names.
const (
	ComponentAPIServer         = "kube-apiserver"
	ComponentControllerManager = "kube-controller-manager"
)

// Monitor watches a cluster for a whole run, so a fault of the
// harness's world is never judged as the subject's: the API server's
// /readyz, the renewals of kube-controller-manager's leader Lease
// (kube-system/kube-controller-manager, where the cluster lets it be
// read), and the component exits a FaultReporter cluster reports.
type Monitor struct {
	Cluster Cluster
	// Interval between probes; default 500ms.
	Interval time.Duration
	// ProbeTimeout bounds one /readyz request; default 5s.
	ProbeTimeout time.Duration
	// MinLeaseGap is the least pause of the leader Lease's renewals that
	// counts as a leadership gap; default 5s (or half the lease's
	// duration, if longer).
	MinLeaseGap time.Duration
	// FreshTimeout bounds WaitFresh; default a minute.
	FreshTimeout time.Duration

	mu     sync.Mutex
	faults []Fault   // closed API and lease faults
	api    *Fault    // the API fault under way
	lastOK time.Time // last /readyz answered
	fails  int       // failed probes in a row
	lease  leaseState
	// cycle counts finished probe rounds; cycleStart is when the last
	// finished one began.
	cycle      int
	cycleStart time.Time
	cycleDone  chan struct{} // closed and replaced at each round's end
	off        error         // why Start failed: no round will come
}

type leaseState struct {
	observable bool
	renew      time.Time // last renewTime seen
	holder     string
	// gap is how long renewals may pause before leadership counts as
	// lost: half the lease duration, at least 5s.
	gap time.Duration
}

// Start probes until ctx ends; it returns nil then, or an error when the
// cluster gives no client.
func (h *Monitor) Start(ctx context.Context) error {
	interval, timeout := h.Interval, h.ProbeTimeout
	if interval == 0 {
		interval = 500 * time.Millisecond
	}
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	rc := rest.CopyConfig(h.Cluster.RESTConfig())
	hc, err := rest.HTTPClientFor(rc)
	var cs kubernetes.Interface
	if err == nil {
		hc.Timeout = timeout
		cs, err = kubernetes.NewForConfigAndClient(rc, hc)
	}
	if err != nil {
		err = fmt.Errorf("health monitor: %w", err)
		h.mu.Lock()
		h.off = err
		h.init()
		close(h.cycleDone) // wakes WaitFresh: no round will come
		h.cycleDone = make(chan struct{})
		h.mu.Unlock()
		return err
	}
	h.mu.Lock()
	h.lastOK = time.Now()
	h.init()
	h.mu.Unlock()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		start := time.Now()
		// Side by side: a frozen API server holds each probe for its
		// whole timeout, and one after the other they would take turns
		// and see half as many failures.
		var wg sync.WaitGroup
		wg.Go(func() { h.probeAPI(ctx, hc, strings.TrimSuffix(rc.Host, "/")+"/readyz") })
		wg.Go(func() { h.probeLease(ctx, cs) })
		wg.Wait()
		h.mu.Lock()
		h.cycle++
		h.cycleStart = start
		close(h.cycleDone)
		h.cycleDone = make(chan struct{})
		h.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// init makes the round channel; call with h.mu held.
func (h *Monitor) init() {
	if h.cycleDone == nil {
		h.cycleDone = make(chan struct{})
	}
}

// WaitFresh waits until a round of probes that began after t has
// finished and the API's state is settled (not one failure short of a
// fault), so a fault under way at t is known. It returns an error when
// the cluster's health at t cannot be known: the monitor could not start,
// or no such round finished within FreshTimeout. It returns nil when ctx
// ends (the run is interrupted: no verdict either way), and at once for a
// nil monitor (an engine run without one, as in tests).
func (h *Monitor) WaitFresh(ctx context.Context, t time.Time) error {
	if h == nil {
		return nil
	}
	timeout := h.FreshTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	limit := time.NewTimer(timeout)
	defer limit.Stop()
	for {
		h.mu.Lock()
		h.init()
		fresh, done, off := h.cycleStart.After(t) && (h.fails == 0 || h.api != nil), h.cycleDone, h.off
		h.mu.Unlock()
		switch {
		case off != nil:
			return fmt.Errorf("the cluster's health is unknown: %w", off)
		case fresh:
			return nil
		}
		select {
		case <-done:
		case <-ctx.Done():
			return nil
		case <-limit.C:
			return fmt.Errorf("the cluster's health is unknown: the health monitor finished no probe round of the API server and the leader Lease within %s after the case was judged", timeout)
		}
	}
}

// probeAPI records the API as down from its last answer to its next one,
// when /readyz fails twice in a row (no answer within ProbeTimeout, or a
// 5xx).
func (h *Monitor) probeAPI(ctx context.Context, hc *http.Client, url string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return
	}
	resp, err := hc.Do(req)
	if ctx.Err() != nil {
		return
	}
	now := time.Now()
	var why string
	switch {
	case err != nil:
		why = err.Error()
	case resp.StatusCode >= 500:
		why = resp.Status
	}
	if resp != nil {
		resp.Body.Close()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if why == "" {
		if h.api != nil {
			h.api.To = now
			h.faults = append(h.faults, *h.api)
			h.api = nil
		}
		h.fails, h.lastOK = 0, now
		return
	}
	// Two failures in a row: one request cut short (a connection reset)
	// is not an outage.
	h.fails++
	if h.api == nil && h.fails >= 2 {
		h.api = &Fault{Component: ComponentAPIServer, From: h.lastOK, Detail: "not answering /readyz: " + why}
	}
}

// probeLease reads kube-controller-manager's leader Lease: a renewal later
// than the allowed gap is a leadership gap, from the renewal before it.
func (h *Monitor) probeLease(ctx context.Context, cs kubernetes.Interface) {
	l, err := cs.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, ComponentControllerManager, metav1.GetOptions{})
	if err != nil || l.Spec.RenewTime == nil {
		// Not found or not readable: not observable (yet). Other
		// errors are the API's, which probeAPI records.
		return
	}
	renew := l.Spec.RenewTime.Time
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	gap := h.MinLeaseGap
	if gap == 0 {
		gap = 5 * time.Second
	}
	if l.Spec.LeaseDurationSeconds != nil {
		gap = max(gap, time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second/2)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &h.lease
	if s.observable && renew.After(s.renew) && renew.Sub(s.renew) > s.gap {
		detail := fmt.Sprintf("leader Lease not renewed for %s", renew.Sub(s.renew).Round(100*time.Millisecond))
		if holder != s.holder {
			detail += " (leader changed)"
		}
		h.faults = append(h.faults, Fault{Component: ComponentControllerManager, From: s.renew, To: renew, Detail: detail})
	}
	if !s.observable || renew.After(s.renew) {
		s.renew, s.holder = renew, holder
	}
	s.observable, s.gap = true, gap
}

// Faults returns the faults that overlap [from, to]: closed and ongoing
// ones of the API and the leader Lease, and the components' own.
func (h *Monitor) Faults(from, to time.Time) []Fault {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	all := slices.Clone(h.faults)
	if h.api != nil {
		all = append(all, *h.api)
	}
	if s := h.lease; s.observable && time.Since(s.renew) > s.gap {
		all = append(all, Fault{Component: ComponentControllerManager, From: s.renew,
			Detail: fmt.Sprintf("leader Lease not renewed for %s", time.Since(s.renew).Round(100*time.Millisecond))})
	}
	h.mu.Unlock()
	if fr, ok := h.Cluster.(FaultReporter); ok {
		all = append(all, fr.ComponentFaults()...)
	}
	var out []Fault
	for _, f := range all {
		if f.Overlaps(from, to) {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b Fault) int { return a.From.Compare(b.From) })
	return out
}

// LeaseObservable reports whether kube-controller-manager's leader Lease
// could be read.
func (h *Monitor) LeaseObservable() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease.observable
}
