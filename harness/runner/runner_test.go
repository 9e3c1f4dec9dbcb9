package runner

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/rest"

	"github.com/bootproof/bootproof/nodeapi"
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
