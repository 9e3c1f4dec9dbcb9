package fakes_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/bootproof/bootproof/fakes"
)

func TestKubeletRESTConfig(t *testing.T) {
	in := &rest.Config{Host: "https://127.0.0.1:6443", QPS: 7}
	got := fakes.KubeletRESTConfig(in)
	if got.ContentType != "application/vnd.kubernetes.protobuf" {
		t.Errorf("ContentType = %q, want protobuf as the kubelet's default", got.ContentType)
	}
	if got.AcceptContentTypes != "application/vnd.kubernetes.protobuf,application/json" {
		t.Errorf("AcceptContentTypes = %q, want protobuf then JSON", got.AcceptContentTypes)
	}
	if got.Host != in.Host || got.QPS != in.QPS {
		t.Errorf("copy lost fields: host %q qps %v", got.Host, got.QPS)
	}
	if in.ContentType != "" || in.AcceptContentTypes != "" {
		t.Errorf("input changed: %q %q", in.ContentType, in.AcceptContentTypes)
	}
	if got.Burst != fakes.KubeletAPIBurst {
		t.Errorf("Burst = %d, want the kubelet's default %d where the input sets none", got.Burst, fakes.KubeletAPIBurst)
	}
}

// TestKubeletRESTConfigLimits checks that a config without client limits
// gets the kubelet's (50/100), not client-go's (5/10), which would
// throttle a rebooted node's registration.
func TestKubeletRESTConfigLimits(t *testing.T) {
	got := fakes.KubeletRESTConfig(&rest.Config{Host: "https://127.0.0.1:6443"})
	if got.QPS != 50 || got.Burst != 100 {
		t.Errorf("limits = %v/%d, want 50/100 (kubelet --kube-api-qps/--kube-api-burst defaults)", got.QPS, got.Burst)
	}
}

// TestKubeletRESTConfigSendsProtobuf checks what a client built from the
// config puts on the wire when it renews a Lease.
func TestKubeletRESTConfigSendsProtobuf(t *testing.T) {
	var mu sync.Mutex
	var contentType, accept string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		contentType, accept = r.Header.Get("Content-Type"), r.Header.Get("Accept")
		mu.Unlock()
		http.Error(w, "not here", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(fakes.KubeletRESTConfig(&rest.Config{Host: srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease"}}
	_, _ = cs.CoordinationV1().Leases("kube-node-lease").Update(context.Background(), lease, metav1.UpdateOptions{})
	mu.Lock()
	defer mu.Unlock()
	if contentType != "application/vnd.kubernetes.protobuf" {
		t.Errorf("Lease update sent Content-Type %q, want protobuf", contentType)
	}
	if accept != "application/vnd.kubernetes.protobuf,application/json" {
		t.Errorf("Lease update sent Accept %q, want protobuf then JSON", accept)
	}
}
