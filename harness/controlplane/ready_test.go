package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

// fakeAPI answers the bootstrap checks' GETs: with the object when ready
// says so, else 404 NotFound. It counts the namespace GETs (one a check).
func fakeAPI(t *testing.T, ready func() bool) (*rest.Config, *atomic.Int32) {
	t.Helper()
	var checks atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/namespaces/default") {
			checks.Add(1)
		}
		if !ready() {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
			return
		}
		kind, version := "Namespace", "v1"
		switch {
		case strings.Contains(r.URL.Path, "/serviceaccounts/"):
			kind = "ServiceAccount"
		case strings.Contains(r.URL.Path, "/clusterroles/"):
			kind, version = "ClusterRole", "rbac.authorization.k8s.io/v1"
		case strings.Contains(r.URL.Path, "/clusterrolebindings/"):
			kind, version = "ClusterRoleBinding", "rbac.authorization.k8s.io/v1"
		}
		fmt.Fprintf(w, `{"kind":%q,"apiVersion":%q,"metadata":{"name":"x"}}`, kind, version)
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL, QPS: 200, Burst: 400}, &checks
}

func TestWaitBootstrapTimesOutNamingWhatIsMissing(t *testing.T) {
	cfg, checks := fakeAPI(t, func() bool { return false })
	cp := &ControlPlane{cfg: Config{StartTimeout: time.Second}.Default(), rest: cfg}
	// Between checks, so none is cut short by the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 1100*time.Millisecond)
	defer cancel()
	err := cp.waitBootstrap(ctx)
	if err == nil || !strings.HasPrefix(err.Error(), "cluster bootstrap not complete within 1s: namespace default: ") {
		t.Fatalf("waitBootstrap = %v, want the bootstrap timeout naming the default namespace", err)
	}
	if !apierrors.IsNotFound(err) {
		t.Errorf("waitBootstrap = %v, does not wrap the API's NotFound", err)
	}
	// A check at once, then one 200ms after each: about 6 in 1.1s.
	n := checks.Load()
	t.Logf("%d checks in 1.1s", n)
	if n < 2 || n > 8 {
		t.Errorf("%d checks in 1.1s, want about 6 (one every %s)", n, bootstrapPollInterval)
	}
}

func TestWaitBootstrapRetriesUntilReady(t *testing.T) {
	start := time.Now()
	cfg, checks := fakeAPI(t, func() bool { return time.Since(start) > 500*time.Millisecond })
	cp := &ControlPlane{cfg: Config{StartTimeout: 10 * time.Second}.Default(), rest: cfg}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cp.waitBootstrap(ctx); err != nil {
		t.Fatalf("waitBootstrap = %v", err)
	}
	if n := checks.Load(); n < 2 {
		t.Errorf("%d checks, want a retry after NotFound", n)
	}
}

func TestWaitBootstrapEndsWhenAProcessExits(t *testing.T) {
	cfg, _ := fakeAPI(t, func() bool { return false })
	dir := t.TempDir()
	p, err := startProcess(BinEtcd, "/bin/sh", []string{"-c", "echo stand-in failure >&2; exit 3"}, dir, dir)
	if err != nil {
		t.Fatal(err)
	}
	<-p.done
	cp := &ControlPlane{cfg: Config{}.Default(), rest: cfg, procs: []*process{p}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = cp.waitBootstrap(ctx)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Process != BinEtcd || !strings.Contains(ee.Tail, "stand-in failure") {
		t.Fatalf("waitBootstrap = %v, want etcd's ExitError quoting its log", err)
	}
	if ctx.Err() != nil {
		t.Errorf("waitBootstrap waited for the deadline instead of ending at the exit")
	}
}
