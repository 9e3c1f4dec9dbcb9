package controlplane_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
)

// TestNodeLifecycle drives a Node by hand with kubelet credentials and
// checks that the real node lifecycle controller judges its heartbeats
// with the configured grace period.
func TestNodeLifecycle(t *testing.T) {
	const grace, monitor = 6 * time.Second, time.Second
	cp := cptest.Start(t, controlplane.Config{GracePeriod: grace, MonitorPeriod: monitor})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	creds, err := cp.NodeCredentials("n1")
	if err != nil {
		t.Fatal(err)
	}
	node := kubernetes.NewForConfigOrDie(creds.RESTConfig)
	admin := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	if _, err := node.CoreV1().Nodes().Create(ctx, newNode("n1"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("register node n1 as system:node:n1: %v", err)
	}

	// Watch Ready continuously from here on.
	w, err := admin.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=n1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ready := make(chan readyObs, 1000)
	go func() {
		for ev := range w.ResultChan() {
			if n, ok := ev.Object.(*corev1.Node); ok && ev.Type != watch.Deleted {
				ready <- readyObs{at: time.Now(), status: readyStatus(n), unreachable: hasTaint(n, corev1.TaintNodeUnreachable)}
			}
		}
		close(ready)
	}()

	hb := &heartbeater{cs: node, name: "n1"}
	// Renew for longer than the grace period: Ready must stay True.
	renewUntil := time.Now().Add(grace + 4*time.Second)
	for time.Now().Before(renewUntil) {
		if err := hb.beat(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	drain(ready, func(o readyObs) {
		if o.status != corev1.ConditionTrue {
			t.Errorf("Ready = %s at %s while heartbeats were renewed", o.status, o.at.Format(time.RFC3339Nano))
		}
	})

	// Stop renewing: Ready goes Unknown after the grace period, and well
	// before the controller manager's default one.
	sent, last := hb.lastSent, hb.lastBeat
	var unknownAt time.Time
	var sawTaint bool
	deadline := time.After(grace + 60*time.Second)
	for unknownAt.IsZero() || !sawTaint {
		select {
		case o, ok := <-ready:
			if !ok {
				t.Fatal("node watch ended")
			}
			if o.status == corev1.ConditionUnknown && unknownAt.IsZero() {
				unknownAt = o.at
			}
			sawTaint = sawTaint || o.unreachable
		case <-deadline:
			t.Fatalf("after the last heartbeat at %s: Ready Unknown seen at %v, unreachable taint seen %v", last.Format(time.RFC3339Nano), unknownAt, sawTaint)
		}
	}
	took := unknownAt.Sub(last)
	t.Logf("Ready=Unknown %s after the last heartbeat returned, %s after it was sent (grace %s, monitor %s)", took, unknownAt.Sub(sent), grace, monitor)
	// The controller manager cannot have seen the last heartbeat before it
	// was sent, so under any load Unknown comes at least grace after that.
	if early := unknownAt.Sub(sent); early < grace {
		t.Errorf("Ready went Unknown %s after the last heartbeat was sent, before the grace period %s", early, grace)
	}
	// On a quiet machine Unknown comes within grace + 2 x monitor (the log
	// line above reports it). The bound here leaves room for a loaded
	// machine delaying the controller's ticks and the watch, and still tells
	// the configured grace period from the default one (18 s against 40 s).
	const loadSlack = 10 * time.Second
	if limit := grace + 2*monitor + loadSlack; took > limit {
		t.Errorf("Ready went Unknown %s after the last heartbeat, later than grace + 2 x monitor + %s = %s", took, loadSlack, limit)
	}

	// Renew again: Ready returns and the taint goes.
	for {
		if err := hb.beat(ctx); err != nil {
			t.Fatal(err)
		}
		n, err := admin.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if readyStatus(n) == corev1.ConditionTrue && !hasTaint(n, corev1.TaintNodeUnreachable) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("node n1 did not return to Ready without the unreachable taint: Ready=%s taints=%v", readyStatus(n), n.Spec.Taints)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestNodeRestriction checks that a node's credentials reach only its own
// Node and Lease.
func TestNodeRestriction(t *testing.T) {
	cp := cptest.Start(t, controlplane.Config{GracePeriod: 6 * time.Second, MonitorPeriod: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	c1, err := cp.NodeCredentials("n1")
	if err != nil {
		t.Fatal(err)
	}
	n1 := kubernetes.NewForConfigOrDie(c1.RESTConfig)
	if _, err := n1.CoreV1().Nodes().Create(ctx, newNode("n1"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("n1 registers itself: %v", err)
	}
	if _, err := admin.CoreV1().Nodes().Create(ctx, newNode("n2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"labels":{"bootproof.test/touched":"yes"}}}`)
	// Positive control: the same credentials may patch their own node.
	if _, err := n1.CoreV1().Nodes().Patch(ctx, "n1", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("n1 patches its own Node: %v", err)
	}
	_, err = n1.CoreV1().Nodes().Patch(ctx, "n2", types.MergePatchType, patch, metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("n1 patches Node n2: err = %v, want Forbidden", err)
	}
	_, err = n1.CoreV1().Nodes().PatchStatus(ctx, "n2", []byte(`{"status":{"nodeInfo":{"bootID":"forged"}}}`))
	if !apierrors.IsForbidden(err) {
		t.Errorf("n1 patches Node n2's status: err = %v, want Forbidden", err)
	}
	if err := (&heartbeater{cs: n1, name: "n1"}).beat(ctx); err != nil {
		t.Fatalf("n1 renews its own Lease: %v", err)
	}
	_, err = n1.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, newLease("n2"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("n1 creates Lease n2: err = %v, want Forbidden", err)
	}
}

// TestStopLeavesNothing checks that Stop ends every child and frees every
// port, and removes the temporary run directory.
func TestStopLeavesNothing(t *testing.T) {
	cptest.RequireBinaries(t)
	cp, err := controlplane.Start(context.Background(), controlplane.Config{GracePeriod: 6 * time.Second, MonitorPeriod: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	pids, ports, dir := cp.Pids(), cp.Ports(), cp.Dir()
	if len(pids) != 3 || len(ports) != 4 {
		t.Fatalf("pids %v ports %v: want 3 processes and 4 ports", pids, ports)
	}
	for name, port := range ports {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second); err != nil {
			t.Errorf("%s port %d not listening while running: %v", name, port, err)
		} else {
			c.Close()
		}
	}
	cp.Stop()
	cptest.AssertGone(t, pids, ports)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temporary run directory %s still exists after Stop (err %v)", dir, err)
	}
	cp.Stop() // a second Stop is harmless
}

// TestEtcdRefusesClusterIdentities checks that etcd answers only to the
// API server's etcd client certificate, not to the admin's or a node's.
func TestEtcdRefusesClusterIdentities(t *testing.T) {
	cp := cptest.Start(t, controlplane.Config{GracePeriod: 6 * time.Second, MonitorPeriod: time.Second})
	creds, err := cp.NodeCredentials("n1")
	if err != nil {
		t.Fatal(err)
	}
	pki := filepath.Join(cp.Dir(), "pki")
	etcdCA, err := os.ReadFile(filepath.Join(pki, "etcd-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	apiCert, err := os.ReadFile(filepath.Join(pki, "apiserver-etcd-client.crt"))
	if err != nil {
		t.Fatal(err)
	}
	apiKey, err := os.ReadFile(filepath.Join(pki, "apiserver-etcd-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/health", cp.Ports()["etcd-client"])
	get := func(cert, key []byte) error {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(etcdCA)
		cfg := &tls.Config{RootCAs: pool}
		if cert != nil {
			c, err := tls.X509KeyPair(cert, key)
			if err != nil {
				return err
			}
			cfg.Certificates = []tls.Certificate{c}
		}
		hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		resp, err := hc.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %s", resp.Status)
		}
		return nil
	}
	if err := get(apiCert, apiKey); err != nil {
		t.Fatalf("etcd refuses the API server's own client certificate: %v", err)
	}
	admin := cp.RESTConfig()
	for name, kp := range map[string][2][]byte{
		"no":    {nil, nil},
		"admin": {admin.CertData, admin.KeyData},
		"node":  {creds.RESTConfig.CertData, creds.RESTConfig.KeyData},
	} {
		if err := get(kp[0], kp[1]); err == nil {
			t.Errorf("etcd answered a client with %s certificate", name)
		}
	}
}

type readyObs struct {
	at          time.Time
	status      corev1.ConditionStatus
	unreachable bool
}

func drain(ch <-chan readyObs, f func(readyObs)) {
	for {
		select {
		case o := <-ch:
			f(o)
		default:
			return
		}
	}
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func newNode(name string) *corev1.Node {
	now := metav1.Now()
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{
			Capacity: res, Allocatable: res,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: now, LastTransitionTime: now}},
			NodeInfo: corev1.NodeSystemInfo{BootID: "boot-a", KubeletVersion: "v1.37.2"},
		},
	}
}

func newLease(name string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}
}

// heartbeater renews a node's Lease and posts Ready=True status, as a
// kubelet does.
type heartbeater struct {
	cs       kubernetes.Interface
	name     string
	lastSent time.Time // when the last beat began writing
	lastBeat time.Time // when the last beat's writes had all returned
	mu       sync.Mutex
}

func (h *heartbeater) beat(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	leases := h.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	h.lastSent = time.Now()
	l, err := leases.Get(ctx, h.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := leases.Create(ctx, newLease(h.name), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create lease %s: %w", h.name, err)
		}
	case err != nil:
		return fmt.Errorf("get lease %s: %w", h.name, err)
	default:
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("renew lease %s: %w", h.name, err)
		}
	}
	// Patch only the Ready condition, as the kubelet does: an update of
	// the whole object would race the controller manager's taints, which
	// NodeRestriction forbids a node to change.
	n, err := h.cs.CoreV1().Nodes().Get(ctx, h.name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %s: %w", h.name, err)
	}
	now := metav1.Now()
	cond := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			cond.LastTransitionTime = c.LastTransitionTime
		}
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{cond}}})
	if err != nil {
		return err
	}
	if _, err := h.cs.CoreV1().Nodes().PatchStatus(ctx, h.name, patch); err != nil {
		return fmt.Errorf("post status of node %s: %w", h.name, err)
	}
	h.lastBeat = time.Now()
	return nil
}
