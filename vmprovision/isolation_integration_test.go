//go:build linux

package vmprovision_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/vmprovision"
	"github.com/bootproof/bootproof/vmprovision/agentapi"
	"github.com/bootproof/bootproof/vmprovision/guest"
	"github.com/bootproof/bootproof/vmprovision/vmtest"
)

// TestVMIsolation boots two libvirt VM nodes (TCG) and shows from inside
// vm-0 that the guest reaches the API server (through its forward; the
// Node goes Ready) and nothing else on the host: not etcd's client port,
// not the API server's own port, not vm-1's forwarded agent port, not an
// unrelated listener on the host's loopback. It also shows that the
// agent refuses (401) a request without the node's secret, or with
// another node's, and that the refused request changes nothing.
func TestVMIsolation(t *testing.T) {
	if os.Getenv(vmTestEnv) == "" {
		t.Skipf("boots libvirt VMs: set %s=1 (needs libvirtd and virtlogd running, qemu-system-x86_64, socat, the guest %s prepares, bin/kube-apiserver and bin/etcd)", vmTestEnv, vmtest.PrepareCommand)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	fx := newVMFixture(ctx, t)
	b, _ := fx.libvirtBackend(t, "iso")
	start := time.Now()
	set, err := b.Provision(ctx, nodeapi.ProvisionRequest{Names: []string{"vm-0", "vm-1"}, Timing: "fast"})
	if err != nil {
		t.Fatal(err)
	}
	ns := set.(*vmprovision.NodeSet)
	defer func() {
		if err := ns.Close(); err != nil {
			t.Error(err)
		}
	}()
	t.Logf("nodes up in %s; serial logs in %s", time.Since(start).Round(time.Millisecond), b.Dir)

	// The API server is reachable: the Node is Ready.
	waitReady(ctx, t, fx, "vm-0")

	// An unrelated listener on the host's loopback counts what reaches it.
	var accepted atomic.Int32
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := func(addr string) string {
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	vm1, err := ns.ControlAddress("vm-1")
	if err != nil {
		t.Fatal(err)
	}
	apiPort := strconv.Itoa(fx.cp.Ports()["kube-apiserver"])
	etcdPort := strconv.Itoa(fx.cp.Ports()["etcd-client"])
	hostPorts := map[string]string{
		"etcd client": etcdPort, "api server (direct)": apiPort,
		"vm-1 agent (forwarded)": port(vm1), "unrelated listener": port(ln.Addr().String()),
	}
	// Each is listening on the host: the guest's failure is the network's.
	for what, p := range hostPorts {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+p, time.Second)
		if err != nil {
			t.Fatalf("%s on the host's 127.0.0.1:%s is not listening: %v", what, p, err)
		}
		c.Close()
	}
	// The listener counts from zero once it took the check's connection.
	for deadline := time.Now().Add(5 * time.Second); accepted.Load() < 1 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	accepted.Store(0)
	dial := func(what, addr string) agentapi.DialResult {
		t.Helper()
		d, err := ns.Dial(ctx, "vm-0", addr, 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("from vm-0: dial %s (%s): connected=%v %s (%s)", addr, what, d.Connected, d.Error, d.Took.Round(time.Millisecond))
		return d
	}
	// Positive controls: the forward to the API server, and the guest's
	// own agent.
	for what, addr := range map[string]string{
		"api server forward": net.JoinHostPort(vmprovision.GuestAPIServerAddress, strconv.Itoa(vmprovision.GuestAPIServerPort)),
		"own agent":          "127.0.0.1:" + strconv.Itoa(guest.DefaultAgentControlPort),
	} {
		if d := dial(what, addr); !d.Connected {
			t.Errorf("vm-0 cannot reach its %s %s: %s", what, addr, d.Error)
		}
	}
	// 10.0.2.2 is where QEMU's unrestricted user network maps the host's
	// loopback; the forward's address has no other port.
	for what, p := range hostPorts {
		for _, host := range []string{"10.0.2.2", vmprovision.GuestAPIServerAddress} {
			if d := dial("host's "+what, net.JoinHostPort(host, p)); d.Connected {
				t.Errorf("vm-0 reaches the host's %s (127.0.0.1:%s) as %s:%s", what, p, host, p)
			}
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the unrelated listener accepted %d connections from the guest", n)
	}
	agentRefusesWithoutSecret(ctx, t, ns)
}

// agentRefusesWithoutSecret sends a reboot and a state request to vm-0's
// agent without a secret and with another one: each is 401 and the boot
// stays; the host client (with the node's secret) is answered.
func agentRefusesWithoutSecret(ctx context.Context, t *testing.T, ns *vmprovision.NodeSet) {
	t.Helper()
	before, err := ns.State(ctx, "vm-0")
	if err != nil {
		t.Fatal(err)
	}
	addr, err := ns.ControlAddress("vm-0")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := agentapi.NewSecret()
	for _, secret := range []string{"", other} {
		for _, path := range []string{agentapi.PathReboot, agentapi.PathState} {
			method := http.MethodPost
			if path == agentapi.PathState {
				method = http.MethodGet
			}
			req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if secret != "" {
				agentapi.SetAuthorization(req, secret)
			}
			resp, err := httpClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			t.Logf("%s %s with secret %q: %s", method, path, shorten(secret), resp.Status)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s %s without the node's secret: %s, want 401", method, path, resp.Status)
			}
		}
	}
	time.Sleep(3 * time.Second) // an accepted reboot would have happened
	after, err := ns.State(ctx, "vm-0")
	if err != nil {
		t.Fatalf("with the secret: %v", err)
	}
	if after.BootID != before.BootID {
		t.Errorf("a refused reboot rebooted vm-0: boot %s -> %s", before.BootID, after.BootID)
	}
	t.Logf("with the secret: state answered, boot %s unchanged", after.BootID)
}

func shorten(s string) string {
	if len(s) > 8 {
		return s[:8] + "…"
	}
	return s
}

// waitReady waits for the node's Ready condition to be True.
func waitReady(ctx context.Context, t *testing.T, fx *vmFixture, node string) {
	t.Helper()
	start := time.Now()
	for {
		n, err := fx.admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err == nil {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					t.Logf("Node %s Ready (boot %s) after %s more", node, n.Status.NodeInfo.BootID, time.Since(start).Round(time.Millisecond))
					return
				}
			}
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("Node %s not Ready: %v", node, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
