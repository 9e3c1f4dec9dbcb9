package health

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// fakeAPI serves /readyz and kube-controller-manager's leader Lease the
// way a test tells it to.
type fakeAPI struct {
	mu     sync.Mutex
	ready  int // HTTP status of /readyz
	renew  time.Time
	holder string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.URL.Path == "/readyz":
		w.WriteHeader(f.ready)
	case strings.HasSuffix(r.URL.Path, "/namespaces/kube-system/leases/kube-controller-manager"):
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
			"metadata": map[string]any{"name": "kube-controller-manager", "namespace": "kube-system"},
			"spec": map[string]any{"holderIdentity": f.holder, "leaseDurationSeconds": 1,
				"renewTime": f.renew.UTC().Format("2006-01-02T15:04:05.000000Z07:00")}})
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeAPI) set(change func(*fakeAPI)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

type restCluster struct{ host string }

func (restCluster) Name() string               { return "test" }
func (restCluster) GracePeriod() time.Duration { return 10 * time.Second }
func (c restCluster) RESTConfig() *rest.Config { return &rest.Config{Host: c.host} }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 20s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHealthMonitor(t *testing.T) {
	api := &fakeAPI{ready: http.StatusOK, renew: time.Now(), holder: "kcm-1"}
	srv := httptest.NewServer(api)
	defer srv.Close()
	h := &Monitor{Cluster: restCluster{srv.URL}, Interval: 20 * time.Millisecond, ProbeTimeout: time.Second, MinLeaseGap: 200 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = h.Start(ctx) }()
	// Renewals every 20ms: healthy.
	stopRenew := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopRenew:
				return
			case <-time.After(20 * time.Millisecond):
				api.set(func(f *fakeAPI) { f.renew = time.Now() })
			}
		}
	}()
	start := time.Now()
	if err := h.WaitFresh(ctx, time.Now().Add(100*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if !h.LeaseObservable() {
		t.Fatal("the leader Lease is served but not observed")
	}
	if f := h.Faults(start, time.Now()); len(f) != 0 {
		t.Fatalf("faults of a healthy cluster: %+v", f)
	}

	// /readyz fails for a while: one API fault, closed when it answers.
	api.set(func(f *fakeAPI) { f.ready = http.StatusServiceUnavailable })
	waitFor(t, "API fault", func() bool { return len(h.Faults(start, time.Now())) == 1 })
	down := h.Faults(start, time.Now())[0]
	if down.Component != ComponentAPIServer || !down.To.IsZero() || !strings.Contains(down.Detail, "503") {
		t.Errorf("ongoing API fault %+v", down)
	}
	api.set(func(f *fakeAPI) { f.ready = http.StatusOK })
	waitFor(t, "API back", func() bool { f := h.Faults(start, time.Now()); return len(f) == 1 && !f[0].To.IsZero() })
	apiBack := time.Now()
	// A window after the fault does not see it.
	time.Sleep(50 * time.Millisecond)
	if err := h.WaitFresh(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if f := h.Faults(apiBack.Add(10*time.Millisecond), time.Now()); len(f) != 0 {
		t.Errorf("a window after the fault sees %+v", f)
	}

	// The leader stops renewing, and another takes over later: a
	// leadership gap, ongoing and then closed.
	close(stopRenew)
	lastRenew := time.Now()
	waitFor(t, "leadership gap", func() bool {
		for _, f := range h.Faults(lastRenew, time.Now()) {
			if f.Component == ComponentControllerManager && f.To.IsZero() {
				return true
			}
		}
		return false
	})
	api.set(func(f *fakeAPI) { f.renew, f.holder = time.Now(), "kcm-2" })
	waitFor(t, "leadership gap closed", func() bool {
		for _, f := range h.Faults(lastRenew, time.Now()) {
			if f.Component == ComponentControllerManager && !f.To.IsZero() && strings.Contains(f.Detail, "leader changed") {
				return true
			}
		}
		return false
	})

	// The API server gone: connection refused is a fault at once.
	srv.Close()
	closed := time.Now()
	waitFor(t, "API gone", func() bool {
		for _, f := range h.Faults(closed, time.Now()) {
			if f.Component == ComponentAPIServer && f.To.IsZero() {
				return true
			}
		}
		return false
	})
}
