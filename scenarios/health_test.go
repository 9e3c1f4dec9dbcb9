package scenarios

import (
	"context"
	"github.com/bootproof/bootproof/scenarios/health"
	"github.com/bootproof/bootproof/scenarios/judging"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

type restCluster struct{ host string }

func (restCluster) Name() string               { return "test" }
func (restCluster) GracePeriod() time.Duration { return 10 * time.Second }
func (c restCluster) RESTConfig() *rest.Config { return &rest.Config{Host: c.host} }

// A case overlapping a cluster fault is an error naming the component,
// whatever its assertions say; one after the fault is judged.
func TestClusterFaultMakesTheCaseAnError(t *testing.T) {
	s := newScript(t, "fast")
	now := time.Now()
	s.c.e.Health = &health.Monitor{Cluster: faultyCluster{{Component: "kube-controller-manager", From: now.Add(-2 * time.Second), To: now.Add(-time.Second), Detail: "exited: signal: killed"}}}
	s.c.baseAt = now.Add(-10 * time.Second)
	s.c.dis.list = []*judging.Disruption{{Kind: "reboot", Reboot: true, Node: "n0", Start: now.Add(-5 * time.Second)}}
	err := s.c.checkCluster(now)
	d := decide("fast-reboot-0.5g", "legacy", Expectation{Outcome: Fail}, []AssertionResult{{Name: AssertReload, OK: false}}, err)
	verdict, msg := d.Verdict, d.Message
	if verdict != Error || !strings.Contains(msg, "cluster fault during the case: kube-controller-manager down from") || !strings.Contains(msg, "signal: killed") {
		t.Errorf("verdict %s: %s", verdict, msg)
	}
	// A fault that ended before the first disruption does not count.
	s.c.dis.list[0].Start = now.Add(-500 * time.Millisecond)
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
	h := &health.Monitor{Cluster: clientlessCluster{}, FreshTimeout: time.Minute}
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
	idle := &health.Monitor{Cluster: restCluster{"http://127.0.0.1:1"}, FreshTimeout: 100 * time.Millisecond}
	if err := idle.WaitFresh(ctx, time.Now()); err == nil || !strings.Contains(err.Error(), "finished no probe round") || !strings.Contains(err.Error(), "100ms") {
		t.Errorf("WaitFresh on a monitor that never probes = %v", err)
	}
	// Interrupted: no error of its own (the case is not run, not faulty).
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := (&health.Monitor{Cluster: restCluster{"http://127.0.0.1:1"}}).WaitFresh(cctx, time.Now()); err != nil {
		t.Errorf("WaitFresh on a cancelled context = %v", err)
	}

	// A whole case judged with the monitor down is an error naming it.
	r := runScriptedScenario(t, scriptedFastReboot(20*time.Second), 100*time.Millisecond, 100*time.Millisecond, Expectation{Outcome: Pass, Source: "test"},
		func(e *Engine) { e.Health = h })
	if r.Verdict != Error || !strings.Contains(r.Message, "the cluster's health is unknown: health monitor:") {
		t.Errorf("case judged with no health monitor: verdict %s (%s)", r.Verdict, r.Message)
	}
}

type faultyCluster []health.Fault

func (faultyCluster) Name() string                      { return "test" }
func (faultyCluster) GracePeriod() time.Duration        { return 10 * time.Second }
func (faultyCluster) RESTConfig() *rest.Config          { return &rest.Config{} }
func (f faultyCluster) ComponentFaults() []health.Fault { return f }
