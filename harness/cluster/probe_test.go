package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/contract"
)

// kubeconfigFor writes a kubeconfig whose server is https://addr.
func kubeconfigFor(t *testing.T, addr string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	data := `apiVersion: v1
kind: Config
clusters:
- cluster: {server: "https://` + addr + `", insecure-skip-tls-verify: true}
  name: c
contexts:
- context: {cluster: c, user: u}
  name: x
current-context: x
users:
- name: u
  user: {token: t}
`
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestKubeconfigPointingNowhere: a kubeconfig whose server does not
// answer (a closed loopback port; a listener that accepts and never
// answers) is refused within the probe's bound, with a one-line
// InputError about the Kubeconfig that names the server.
func TestKubeconfigPointingNowhere(t *testing.T) {
	old := probeTimeout
	probeTimeout = time.Second
	t.Cleanup(func() { probeTimeout = old })

	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	go func() {
		var held []net.Conn // accepted, never answered
		for {
			c, err := hang.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	for name, addr := range map[string]string{"closed port": closedPort(t), "silent server": hang.Addr().String()} {
		t.Run(name, func(t *testing.T) {
			path := kubeconfigFor(t, addr)
			start := time.Now()
			_, err := NewKubeconfig(context.Background(), path, 10*time.Second, false)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %s, want about the probe bound of 1s", took)
			}
			var ie *contract.InputError
			if !errors.As(err, &ie) || ie.Field.String() != "Kubeconfig" || ie.Value != path {
				t.Fatalf("error %v, want an InputError about the Kubeconfig %s", err, path)
			}
			msg := err.Error()
			if !strings.Contains(msg, "https://"+addr) || !strings.Contains(msg, "did not answer within 1s") || strings.Contains(msg, "\n") {
				t.Errorf("message %q", msg)
			}
		})
	}
}

// TestKubeconfigRejectedCredentials: an API server that refuses the
// kubeconfig's credentials (401 everywhere; or 403 on Nodes for an
// identity that may read only the version) is an InputError about the
// Kubeconfig saying the credentials were refused, so 'run' exits 2
// naming them instead of failing every case later.
func TestKubeconfigRejectedCredentials(t *testing.T) {
	for _, tc := range []struct {
		name string
		// code answers a path; 0 is a version answer.
		code func(path string) int
		want string
	}{
		{"401", func(string) int { return http.StatusUnauthorized }, "refused its credentials (Unauthorized, asked for its version)"},
		{"403 on nodes", func(p string) int {
			if p == "/version" {
				return 0
			}
			return http.StatusForbidden
		}, "refused its credentials (Forbidden, asked for the list of Nodes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				code := tc.code(r.URL.Path)
				if code == 0 {
					_, _ = w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.2"}`))
					return
				}
				w.WriteHeader(code)
				reason := map[int]string{http.StatusUnauthorized: "Unauthorized", http.StatusForbidden: "Forbidden"}[code]
				_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":%q,"code":%d}`, reason, code)
			}))
			defer srv.Close()
			path := kubeconfigFor(t, strings.TrimPrefix(srv.URL, "https://"))
			_, err := NewKubeconfig(context.Background(), path, 10*time.Second, false)
			var ie *contract.InputError
			if !errors.As(err, &ie) || ie.Field.String() != "Kubeconfig" || ie.Value != path {
				t.Fatalf("error %v, want an InputError about the Kubeconfig %s", err, path)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || !strings.Contains(msg, srv.URL) {
				t.Errorf("message %q, want %q and the server", msg, tc.want)
			}
		})
	}
}
