//go:build linux

package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/bootproof/bootproof/fakes"
	"github.com/bootproof/bootproof/vmprovision"
	"github.com/bootproof/bootproof/vmprovision/agentapi"
	"github.com/bootproof/bootproof/vmprovision/guest"
)

type fakeMachine struct {
	mu      sync.Mutex
	actions []string
	done    chan struct{}
}

func (m *fakeMachine) record(a string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.actions = append(m.actions, a)
	close(m.done)
	return nil
}

func (m *fakeMachine) Reboot() error { return m.record("reboot") }
func (m *fakeMachine) Panic() error  { return m.record("panic") }
func (m *fakeMachine) RestartKubelet(_ context.Context, d time.Duration) error {
	return m.record("restart-kubelet " + d.String())
}
func (m *fakeMachine) RejectWorkerPods(n int) { _ = m.record(fmt.Sprintf("reject-pods %d", n)) }

func TestControlHandler(t *testing.T) {
	secret, err := agentapi.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := agentapi.NewSecret()
	open, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	closed.Close()
	tests := []struct {
		method, path string
		// auth is the request's secret: "" the node's, "-" none.
		auth       string
		wantCode   int
		wantAction string
		wantDial   string // "connected" or "refused"
	}{
		// Without the node's secret nothing is done.
		{method: "GET", path: "/state", auth: "-", wantCode: http.StatusUnauthorized},
		{method: "POST", path: "/reboot", auth: "-", wantCode: http.StatusUnauthorized},
		{method: "POST", path: "/panic", auth: other, wantCode: http.StatusUnauthorized},
		{method: "PUT", path: "/modules/bonding", auth: secret[:32], wantCode: http.StatusUnauthorized},
		{method: "DELETE", path: "/modules/dummy", auth: "-", wantCode: http.StatusUnauthorized},
		{method: "POST", path: "/dial?addr=" + open.Addr().String(), auth: "-", wantCode: http.StatusUnauthorized},
		{method: "POST", path: "/dial?addr=" + open.Addr().String(), wantCode: http.StatusOK, wantDial: "connected"},
		{method: "POST", path: "/dial?addr=" + closedAddr + "&timeout=2s", wantCode: http.StatusOK, wantDial: "refused"},
		{method: "POST", path: "/dial?addr=nowhere", wantCode: http.StatusBadRequest},
		{method: "POST", path: "/dial?addr=" + closedAddr + "&timeout=1h", wantCode: http.StatusBadRequest},
		{method: "GET", path: "/state", wantCode: http.StatusOK},
		{method: "POST", path: "/reboot", wantCode: http.StatusAccepted, wantAction: "reboot"},
		{method: "POST", path: "/panic", wantCode: http.StatusAccepted, wantAction: "panic"},
		{method: "POST", path: "/restart-kubelet?downtime=15s", wantCode: http.StatusOK, wantAction: "restart-kubelet 15s"},
		{method: "POST", path: "/restart-kubelet?downtime=soon", wantCode: http.StatusBadRequest},
		{method: "POST", path: "/restart-kubelet", wantCode: http.StatusBadRequest},
		{method: "POST", path: "/reject-pods?count=2", wantCode: http.StatusOK, wantAction: "reject-pods 2"},
		{method: "POST", path: "/reject-pods?count=-1", wantCode: http.StatusBadRequest},
		{method: "POST", path: "/reject-pods?count=many", wantCode: http.StatusBadRequest},
		{method: "POST", path: "/reject-pods", wantCode: http.StatusBadRequest},
		{method: "POST", path: "/reject-pods?count=2", auth: "-", wantCode: http.StatusUnauthorized},
		{method: "GET", path: "/reboot", wantCode: http.StatusMethodNotAllowed},
		{method: "POST", path: "/halt", wantCode: http.StatusNotFound},
		{method: "PUT", path: "/modules/bonding", wantCode: http.StatusOK},
		{method: "PUT", path: "/modules/nosuchmod", wantCode: http.StatusNotFound},
		{method: "DELETE", path: "/modules/dummy", wantCode: http.StatusOK},
		{method: "DELETE", path: "/modules/nosuchmod", wantCode: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.path, func(t *testing.T) {
			k, err := fakes.NewSimKernel(fakes.SimKernelConfig{})
			if err != nil {
				t.Fatal(err)
			}
			if err := k.Load("dummy"); err != nil {
				t.Fatal(err)
			}
			m := &fakeMachine{done: make(chan struct{})}
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(tt.method, tt.path, nil)
			switch tt.auth {
			case "":
				agentapi.SetAuthorization(req, secret)
			case "-":
			default:
				agentapi.SetAuthorization(req, tt.auth)
			}
			before := k.Loaded()
			ControlHandler(secret, k, m, m, logr.Discard()).ServeHTTP(rec, req)
			if rec.Code != tt.wantCode {
				t.Fatalf("code %d, want %d: %s", rec.Code, tt.wantCode, rec.Body)
			}
			if rec.Code == http.StatusUnauthorized {
				time.Sleep(200 * time.Millisecond) // an accepted action would run by now
				if len(m.actions) != 0 || !slices.Equal(k.Loaded(), before) {
					t.Errorf("refused request changed the guest: actions %v, modules %v -> %v", m.actions, before, k.Loaded())
				}
				return
			}
			if tt.wantDial != "" {
				var d agentapi.DialResult
				if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
					t.Fatal(err)
				}
				if d.Connected != (tt.wantDial == "connected") || (!d.Connected && d.Error == "") {
					t.Errorf("dial %+v, want %s", d, tt.wantDial)
				}
			}
			if tt.path == "/state" {
				var s agentapi.State
				if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
					t.Fatal(err)
				}
				if s.BootID != k.BootID() || s.KernelVersion != k.Version() || strings.Join(s.Modules, ",") != "dummy" {
					t.Errorf("state %+v", s)
				}
			}
			if tt.wantAction == "" {
				return
			}
			select {
			case <-m.done:
			case <-time.After(5 * time.Second):
				t.Fatal("action not taken")
			}
			if strings.Join(m.actions, ",") != tt.wantAction {
				t.Errorf("actions %v, want %s", m.actions, tt.wantAction)
			}
		})
	}
}

func TestRestConfig(t *testing.T) {
	cfg := guest.AgentConfig{NodeName: "vm-1", APIServer: "https://10.0.2.2:6443", CAData: "ca", CertData: "cert", KeyData: "key", TLSServerName: "127.0.0.1"}
	rc := RestConfig(cfg)
	if rc.Host != cfg.APIServer || string(rc.CAData) != "ca" || string(rc.CertData) != "cert" || string(rc.KeyData) != "key" ||
		rc.ServerName != "127.0.0.1" || !strings.Contains(rc.UserAgent, "vm-1") {
		t.Errorf("rest config %+v", rc)
	}
}

func TestRunFailsOnBadConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "agent.json")
	if err := os.WriteFile(p, []byte(`{"nodeName":"vm-2"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ path, want string }{
		{filepath.Join(dir, "missing.json"), "read agent config"},
		{p, "agent config for node vm-2: apiServer"},
	}
	for _, tt := range tests {
		err := Run(context.Background(), Options{ConfigPath: tt.path, Root: dir})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Run(%s) = %v, want %q", tt.path, err, tt.want)
		}
	}
}

func TestRebootRefusedOutsideGuest(t *testing.T) {
	if os.Getpid() == 1 {
		t.Skip("running as PID 1: the test would reboot this machine")
	}
	if err := rebootNow(); err == nil || !strings.Contains(err.Error(), "not PID 1") {
		t.Errorf("rebootNow = %v, want a refusal", err)
	}
}

// TestBootLogLine pins the console line vmprovision.ProbeKVM waits for.
func TestBootLogLine(t *testing.T) {
	var b strings.Builder
	newLogger(&b).Info("boot", "node", "vm-0")
	if !strings.Contains(b.String(), vmprovision.AgentBootLogLine) {
		t.Errorf("boot log %q lacks %q", b.String(), vmprovision.AgentBootLogLine)
	}
}
