package scenarios

import (
	"context"
	"encoding/json"
	"github.com/bootproof/bootproof/scenarios/judging"
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
	h := &HealthMonitor{Cluster: restCluster{srv.URL}, Interval: 20 * time.Millisecond, ProbeTimeout: time.Second, MinLeaseGap: 200 * time.Millisecond}
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

// A case overlapping a cluster fault is an error naming the component,
// whatever its assertions say; one after the fault is judged.
func TestClusterFaultMakesTheCaseAnError(t *testing.T) {
	s := newScript(t, "fast")
	now := time.Now()
	s.c.e.Health = &HealthMonitor{Cluster: faultyCluster{{Component: "kube-controller-manager", From: now.Add(-2 * time.Second), To: now.Add(-time.Second), Detail: "exited: signal: killed"}}}
	s.c.baseAt = now.Add(-10 * time.Second)
	s.c.disrupted = []*judging.Disruption{{Kind: "reboot", Reboot: true, Node: "n0", Start: now.Add(-5 * time.Second)}}
	err := s.c.checkCluster(now)
	d := decide("fast-reboot-0.5g", "legacy", Expectation{Outcome: Fail}, []AssertionResult{{Name: AssertReload, OK: false}}, err)
	verdict, msg := d.Verdict, d.Message
	if verdict != Error || !strings.Contains(msg, "cluster fault during the case: kube-controller-manager down from") || !strings.Contains(msg, "signal: killed") {
		t.Errorf("verdict %s: %s", verdict, msg)
	}
	// A fault that ended before the first disruption does not count.
	s.c.disrupted[0].Start = now.Add(-500 * time.Millisecond)
	if err := s.c.checkCluster(now); err != nil {
		t.Errorf("a fault before the first disruption: %v", err)
	}
}

// clientlessCluster gives a REST config no client can be made of (its
// client certificate does not exist).
type clientlessCluster struct{}

func (clientlessCluster) Name() string               { return "test" }
func (clientlessCluster) GracePeriod() time.Duration { return 10 * time.Second }
func (clientlessCluster) RESTConfig() *rest.Config {
	return &rest.Config{Host: "https://127.0.0.1:1", TLSClientConfig: rest.TLSClientConfig{CertFile: "/nonexistent/client.crt", KeyFile: "/nonexistent/client.key"}}
}

// TestUnknownHealthIsAnError: a monitor that cannot start, or that
// finishes no probe round after the case, leaves the cluster's health
// unknown; WaitFresh says so (it used to return as if all was well), and
// a case judged then is an error naming it, never a verdict.
func TestUnknownHealthIsAnError(t *testing.T) {
	ctx := context.Background()
	// Cannot start: a waiter already waiting is woken, not left to time out.
	h := &HealthMonitor{Cluster: clientlessCluster{}, FreshTimeout: time.Minute}
	waited := make(chan error, 1)
	go func() { waited <- h.WaitFresh(ctx, time.Now()) }()
	time.Sleep(20 * time.Millisecond)
	if err := h.Start(ctx); err == nil {
		t.Fatal("Start with no client: nil error")
	}
	select {
	case err := <-waited:
		if err == nil || !strings.Contains(err.Error(), "the cluster's health is unknown: health monitor: ") {
			t.Errorf("WaitFresh on a monitor that could not start = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("WaitFresh still waits on a monitor that could not start")
	}

	// Never probing: WaitFresh gives up after FreshTimeout, with an error.
	idle := &HealthMonitor{Cluster: restCluster{"http://127.0.0.1:1"}, FreshTimeout: 100 * time.Millisecond}
	if err := idle.WaitFresh(ctx, time.Now()); err == nil || !strings.Contains(err.Error(), "finished no probe round") || !strings.Contains(err.Error(), "100ms") {
		t.Errorf("WaitFresh on a monitor that never probes = %v", err)
	}
	// Interrupted: no error of its own (the case is not run, not faulty).
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := (&HealthMonitor{Cluster: restCluster{"http://127.0.0.1:1"}}).WaitFresh(cctx, time.Now()); err != nil {
		t.Errorf("WaitFresh on a cancelled context = %v", err)
	}

	// A whole case judged with the monitor down is an error naming it.
	r := runScriptedScenario(t, scriptedFastReboot(20*time.Second), 100*time.Millisecond, 100*time.Millisecond, Expectation{Outcome: Pass, Source: "test"},
		func(e *Engine) { e.Health = h })
	if r.Verdict != Error || !strings.Contains(r.Message, "the cluster's health is unknown: health monitor:") {
		t.Errorf("case judged with no health monitor: verdict %s (%s)", r.Verdict, r.Message)
	}
}

type faultyCluster []ClusterFault

func (faultyCluster) Name() string                      { return "test" }
func (faultyCluster) GracePeriod() time.Duration        { return 10 * time.Second }
func (faultyCluster) RESTConfig() *rest.Config          { return &rest.Config{} }
func (f faultyCluster) ComponentFaults() []ClusterFault { return f }
