package vmprovision

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/bootproof/bootproof/vmprovision/agentapi"
)

// TestNodeSetWaitsWithAdmin covers the waits that read the API server:
// the Node reporting the agent's boot and the node renewing its Lease.
func TestNodeSetWaitsWithAdmin(t *testing.T) {
	var mu sync.Mutex
	boot := "boot-a"
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_ = json.NewEncoder(w).Encode(agentapi.State{BootID: boot, KernelVersion: testKernelVersion, Modules: []string{}})
	}))
	defer agent.Close()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vm-0"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{BootID: "boot-a"}}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "vm-0", Namespace: corev1.NamespaceNodeLease, ResourceVersion: "1"}}
	admin := fake.NewClientset(node, lease)
	ns := &NodeSet{b: &Backend{Admin: admin, BootTimeout: 2 * time.Second}, log: logr.Discard(), client: &http.Client{Timeout: 5 * time.Second},
		nodes: map[string]*vmNode{}}
	n := &vmNode{name: "vm-0", ctlURL: agent.URL, serial: "vm-0.serial.log"}
	ctx := context.Background()

	st, _, err := ns.waitBoot(ctx, n, "")
	if err != nil || st.BootID != "boot-a" {
		t.Fatalf("waitBoot = %+v, %v", st, err)
	}

	// A new boot the Node reports only later.
	mu.Lock()
	boot = "boot-b"
	mu.Unlock()
	go func() {
		time.Sleep(300 * time.Millisecond)
		nd := node.DeepCopy()
		nd.Status.NodeInfo.BootID = "boot-b"
		_, _ = admin.CoreV1().Nodes().UpdateStatus(ctx, nd, metav1.UpdateOptions{})
	}()
	start := time.Now()
	if st, _, err := ns.waitBoot(ctx, n, "boot-a"); err != nil || st.BootID != "boot-b" {
		t.Fatalf("waitBoot after a reboot = %+v, %v", st, err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("waitBoot returned after %s, before the Node reported the boot", took)
	}

	rv := ns.leaseVersion(ctx, n)
	if rv == "" {
		t.Fatal("no Lease resourceVersion")
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		l := lease.DeepCopy()
		l.ResourceVersion = ""
		_, _ = admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, l, metav1.UpdateOptions{})
	}()
	if err := ns.waitRenewed(ctx, n, rv); err != nil {
		t.Fatalf("waitRenewed = %v", err)
	}

	// Timeouts name what was awaited and keep the deadline in the chain.
	ns.b.BootTimeout = 300 * time.Millisecond
	rv = ns.leaseVersion(ctx, n)
	err = ns.waitRenewed(ctx, n, rv)
	if err == nil || !strings.Contains(err.Error(), "Lease not renewed since resourceVersion "+rv) || !strings.Contains(err.Error(), "vm-0.serial.log") ||
		!errorsIsDeadline(err) {
		t.Errorf("waitRenewed without a renewal = %v", err)
	}
	_, _, err = ns.waitBoot(ctx, n, "boot-b")
	if err == nil || !strings.Contains(err.Error(), `no new boot after "boot-b"`) || !errorsIsDeadline(err) {
		t.Errorf("waitBoot without a new boot = %v", err)
	}
	mu.Lock()
	boot = "boot-c"
	mu.Unlock()
	_, _, err = ns.waitBoot(ctx, n, "boot-b")
	if err == nil || !strings.Contains(err.Error(), "Node does not report boot boot-c") || !errorsIsDeadline(err) {
		t.Errorf("waitBoot without the Node's report = %v", err)
	}
}

func errorsIsDeadline(err error) bool { return errors.Is(err, context.DeadlineExceeded) }
