package runner

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/rest"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/scenarios"
)

// noClient is a cluster whose REST config gives no client: the health
// monitor stops at once with an error, which it logs.
type noClient struct{}

func (noClient) Name() string { return "no-client" }
func (noClient) RESTConfig() *rest.Config {
	return &rest.Config{Host: "https://127.0.0.1:1", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("not a certificate")}}
}
func (noClient) GracePeriod() time.Duration { return 10 * time.Second }

type noBackend struct{}

func (noBackend) Name() string { return "none" }
func (noBackend) Provision(context.Context, nodeapi.ProvisionRequest) (nodeapi.NodeSet, error) {
	return nil, context.Canceled
}
func (noBackend) ReadGroundTruth(*coordinationv1.Lease) (*contract.GroundTruth, error) {
	return nil, nil
}

// Run joins the goroutines it starts: when it returns, its cluster
// health monitor has ended (here with the error it logs).
func TestRunJoinsTheHealthMonitor(t *testing.T) {
	for i := range 20 {
		var mu sync.Mutex
		var logged []string
		log := funcr.New(func(_, args string) {
			mu.Lock()
			logged = append(logged, args)
			mu.Unlock()
		}, funcr.Options{})
		Run(logr.NewContext(context.Background(), log), Config{Cluster: noClient{}, Backend: noBackend{}})
		mu.Lock()
		got := strings.Join(logged, "\n")
		mu.Unlock()
		if !strings.Contains(got, `"msg"="cluster health monitor"`) {
			t.Fatalf("run %d: Run returned before its health monitor ended (logged: %q)", i, got)
		}
	}
}

// stubSubject never starts; it expects pass everywhere.
type stubSubject struct{ name string }

func (s stubSubject) Name() string { return s.name }
func (stubSubject) Start(context.Context, scenarios.SubjectRequest) (scenarios.SubjectInstance, error) {
	return nil, context.Canceled
}
func (stubSubject) Expectation(*scenarios.Scenario) (scenarios.Expectation, bool) {
	return scenarios.Expectation{Outcome: scenarios.Pass, Source: "test"}, true
}

// TestRepeat: with Repeat, every scenario x subject runs that many times,
// each a case of its own numbered 1 to Repeat, in scenario, subject,
// attempt order; without it, each runs once, unnumbered.
func TestRepeat(t *testing.T) {
	ss := []*scenarios.Scenario{{Name: "s1", Nodes: 1}, {Name: "s2", Nodes: 1}}
	subjects := []scenarios.Subject{stubSubject{"a"}, stubSubject{"b"}}
	var got []string
	for _, c := range Run(context.Background(), Config{Cluster: noClient{}, Backend: noBackend{}, Subjects: subjects, Scenarios: ss, Repeat: 3}).Cases {
		got = append(got, fmt.Sprintf("%s/%s#%d", c.Scenario, c.Subject, c.Attempt))
	}
	want := "s1/a#1 s1/a#2 s1/a#3 s1/b#1 s1/b#2 s1/b#3 s2/a#1 s2/a#2 s2/a#3 s2/b#1 s2/b#2 s2/b#3"
	if strings.Join(got, " ") != want {
		t.Errorf("cases %v, want %s", got, want)
	}
	once := Run(context.Background(), Config{Cluster: noClient{}, Backend: noBackend{}, Subjects: subjects[:1], Scenarios: ss[:1]}).Cases
	if len(once) != 1 || once[0].Attempt != 0 {
		t.Errorf("without Repeat: %+v", once)
	}
}
