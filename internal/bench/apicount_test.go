package bench_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/bootproof/bootproof/internal/bench"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		method, path, watch string
		verb, resource      string
	}{
		{http.MethodPost, "/api/v1/namespaces/ns/pods", "", "create", "pods"},
		{http.MethodGet, "/api/v1/namespaces/ns/pods", "", "list", "pods"},
		{http.MethodGet, "/api/v1/pods", "true", "watch", "pods"},
		{http.MethodGet, "/api/v1/namespaces/ns/pods/p", "", "get", "pods"},
		{http.MethodPatch, "/api/v1/namespaces/ns/pods/p/status", "", "patch", "pods/status"},
		{http.MethodDelete, "/api/v1/namespaces/ns/pods/p", "", "delete", "pods"},
		{http.MethodDelete, "/api/v1/nodes", "", "deletecollection", "nodes"},
		{http.MethodPatch, "/api/v1/nodes/n/status", "", "patch", "nodes/status"},
		{http.MethodGet, "/api/v1/namespaces/ns", "", "get", "namespaces"},
		{http.MethodDelete, "/api/v1/namespaces/ns", "", "delete", "namespaces"},
		{http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n", "", "update", "leases.coordination.k8s.io"},
		{http.MethodPatch, "/apis/kmm.sigs.x-k8s.io/v1beta1/nodemodulesconfigs/n/status", "", "patch", "nodemodulesconfigs.kmm.sigs.x-k8s.io/status"},
		{http.MethodPost, "/apis/events.k8s.io/v1/namespaces/default/events", "", "create", "events.events.k8s.io"},
		{http.MethodGet, "/apis/events.k8s.io/v1", "", "get", "nonresource"},
		{http.MethodGet, "/healthz", "", "get", "nonresource"},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			verb, resource := bench.Classify(tc.method, tc.path, tc.watch)
			if verb != tc.verb || resource != tc.resource {
				t.Errorf("Classify = %s %s, want %s %s", verb, resource, tc.verb, tc.resource)
			}
		})
	}
}

// TestAPICounter: requests through a wrapped config are counted by
// client, verb and resource; Tally keeps writes and divides by units.
func TestAPICounter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	var n bench.APICounter
	start := time.Now()
	do := func(client, method, path string) {
		rc := n.Wrap(&rest.Config{Host: srv.URL}, client)
		hc, err := rest.HTTPClientFor(rc)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	do("a", http.MethodPost, "/api/v1/namespaces/ns/pods")
	do("a", http.MethodPost, "/api/v1/namespaces/ns/pods")
	do("a", http.MethodGet, "/api/v1/namespaces/ns/pods/p")
	do("b", http.MethodDelete, "/api/v1/namespaces/ns/pods/p")
	reqs := n.Requests(start, time.Now().Add(time.Second))
	if len(reqs) != 4 {
		t.Fatalf("counted %d requests, want 4: %+v", len(reqs), reqs)
	}
	if got := n.Requests(time.Now().Add(time.Second), time.Now().Add(2*time.Second)); len(got) != 0 {
		t.Errorf("requests outside the window: %+v", got)
	}
	rows := bench.Tally(reqs, 2, true)
	if len(rows) != 2 {
		t.Fatalf("Tally = %+v, want 2 rows (writes only)", rows)
	}
	if r := rows[0]; r.Client != "a" || r.Verb != "create" || r.Resource != "pods" || r.Total != 2 || r.PerUnit != 1 {
		t.Errorf("rows[0] = %+v, want a create pods 2 (1 per unit)", r)
	}
	if r := rows[1]; r.Client != "b" || r.Verb != "delete" || r.Total != 1 || r.PerUnit != 0.5 {
		t.Errorf("rows[1] = %+v, want b delete pods 1 (0.5 per unit)", r)
	}
	if all := bench.Tally(reqs, 2, false); len(all) != 3 {
		t.Errorf("Tally with reads = %+v, want 3 rows", all)
	}
}
