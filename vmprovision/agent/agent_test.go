//go:build linux

package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/bootproof/bootproof/fakes"
	"github.com/bootproof/bootproof/vmprovision"
	"github.com/bootproof/bootproof/vmprovision/agentapi"
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

func TestControlHandler(t *testing.T) {
	tests := []struct {
		method, path string
		wantCode     int
		wantAction   string
	}{
		{"GET", "/state", http.StatusOK, ""},
		{"POST", "/reboot", http.StatusAccepted, "reboot"},
		{"POST", "/panic", http.StatusAccepted, "panic"},
		{"POST", "/restart-kubelet?downtime=15s", http.StatusOK, "restart-kubelet 15s"},
		{"POST", "/restart-kubelet?downtime=soon", http.StatusBadRequest, ""},
		{"POST", "/restart-kubelet", http.StatusBadRequest, ""},
		{"GET", "/reboot", http.StatusMethodNotAllowed, ""},
		{"POST", "/halt", http.StatusNotFound, ""},
		{"PUT", "/modules/bonding", http.StatusOK, ""},
		{"PUT", "/modules/nosuchmod", http.StatusNotFound, ""},
		{"DELETE", "/modules/dummy", http.StatusOK, ""},
		{"DELETE", "/modules/nosuchmod", http.StatusNotFound, ""},
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
			ControlHandler(k, m, m, logr.Discard()).ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			if rec.Code != tt.wantCode {
				t.Fatalf("code %d, want %d: %s", rec.Code, tt.wantCode, rec.Body)
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
	cfg := vmprovision.AgentConfig{NodeName: "vm-1", APIServer: "https://10.0.2.2:6443", CAData: "ca", CertData: "cert", KeyData: "key", TLSServerName: "127.0.0.1"}
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
