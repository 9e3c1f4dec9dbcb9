package cli_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/internal/cli"
	"github.com/bootproof/bootproof/scenarios/fileformat"
)

// TestRunRefusesLargeFiles: scenario and subject files over
// fileformat.MaxInputFileSize are refused with one line naming the flag,
// the file and the limit, before anything starts.
func TestRunRefusesLargeFiles(t *testing.T) {
	big := filepath.Join(t.TempDir(), "huge.yaml")
	data := bytes.Repeat([]byte("# padding\n"), fileformat.MaxInputFileSize/10+1)
	if err := os.WriteFile(big, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--scenario-file", "--subject-file"} {
		var out, errb bytes.Buffer
		code := cli.Run(context.Background(), []string{"run", flag, big}, &out, &errb)
		msg := strings.TrimSpace(errb.String())
		if code != cli.ExitUsage || strings.Contains(msg, "\n") {
			t.Errorf("%s: exit %d, stderr %q", flag, code, msg)
		}
		for _, w := range []string{flag, big, "limit of 1 MiB"} {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: stderr %q lacks %q", flag, msg, w)
			}
		}
	}
}

// TestKubeconfigPointingNowhere: 'run --cluster kubeconfig' and 'nodes
// run' against a kubeconfig whose server is a closed loopback port stop
// at once with exit 2 and one line naming --kubeconfig and the server.
func TestKubeconfigPointingNowhere(t *testing.T) {
	// Its own TMPDIR: the run sweeps what dead bootproof processes left
	// there and says so, which is not this test's subject.
	t.Setenv("TMPDIR", t.TempDir())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://`+addr+`", insecure-skip-tls-verify: true}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
users: [{name: u, user: {token: t}}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"run", "--cluster", "kubeconfig", "--kubeconfig", kc, "--grace-period", "10s", "--scenario", "fast-reboot-0.5g"},
		{"nodes", "run", "--kubeconfig", kc, "--control-socket", filepath.Join(t.TempDir(), "s")},
	} {
		var out, errb bytes.Buffer
		start := time.Now()
		code := cli.Run(context.Background(), args, &out, &errb)
		msg := strings.TrimSpace(errb.String())
		if code != cli.ExitUsage || strings.Contains(msg, "\n") || time.Since(start) > 30*time.Second {
			t.Errorf("%v: exit %d after %s, stderr %q", args[:2], code, time.Since(start), msg)
		}
		for _, w := range []string{"--kubeconfig " + kc, "https://" + addr, "did not answer"} {
			if !strings.Contains(msg, w) {
				t.Errorf("%v: stderr %q lacks %q", args[:2], msg, w)
			}
		}
	}
}
