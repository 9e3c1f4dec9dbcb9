// Package cptest helps tests start an embedded control plane: it finds the
// binaries (skipping with a reason, or failing when
// BOOTPROOF_REQUIRE_CONTROLPLANE=1 as 'make test' sets it), stops the plane
// at the end of the test and checks that nothing was left behind.
package cptest

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/bootproof/bootproof/harness/controlplane"
)

// EnvRequire makes a missing binary a test failure instead of a skip.
const EnvRequire = "BOOTPROOF_REQUIRE_CONTROLPLANE"

// RequireBinaries skips t, saying why, when the control-plane binaries are
// missing; with BOOTPROOF_REQUIRE_CONTROLPLANE=1 it fails t instead.
func RequireBinaries(t testing.TB) controlplane.Binaries {
	t.Helper()
	b, err := controlplane.FindBinaries("")
	if err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("embedded control plane required (%s=1): %v", EnvRequire, err)
		}
		t.Skipf("needs the embedded control plane's binaries, which are missing (run 'make test', which builds them): %v", err)
	}
	return b
}

// Start starts a control plane for t and stops it when t ends. When the test
// failed, the tails of the process logs are written to the test log.
func Start(t testing.TB, cfg controlplane.Config) *controlplane.ControlPlane {
	t.Helper()
	RequireBinaries(t)
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start embedded control plane: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, name := range []string{controlplane.BinKubeControllerManager, controlplane.BinKubeAPIServer} {
				if data, err := os.ReadFile(filepath.Join(cp.Dir(), "logs", name+".log")); err == nil {
					t.Logf("tail of %s.log:\n%s", name, tail(string(data), 30))
				}
			}
		}
		cp.Stop()
	})
	return cp
}

func tail(s string, n int) string {
	lines := 0
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			lines++
			if lines > n {
				return s[i+1:]
			}
		}
	}
	return s
}

// AssertGone fails t if any of the processes still exists or any of the
// ports is still bound on 127.0.0.1.
func AssertGone(t testing.TB, pids map[string]int, ports map[string]int) {
	t.Helper()
	for name, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) still exists after stop (kill -0: %v)", name, pid, err)
		}
	}
	for name, port := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Errorf("%s port %d still bound after stop: %v", name, port, err)
			continue
		}
		l.Close()
	}
}
