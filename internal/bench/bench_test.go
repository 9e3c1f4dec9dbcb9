package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/bootproof/bootproof/internal/bench"
)

func TestProcessFigures(t *testing.T) {
	pid := os.Getpid()
	end := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(end) { // burn some CPU
	}
	cpu, err := bench.CPUSeconds(pid)
	if err != nil || cpu <= 0 {
		t.Fatalf("CPUSeconds(self) = %v, %v; want > 0", cpu, err)
	}
	m, err := bench.MemoryOf(pid)
	if err != nil || m.RSS <= 0 || m.Peak < m.RSS {
		t.Fatalf("MemoryOf(self) = %+v, %v; want 0 < RSS <= Peak", m, err)
	}
	if _, err := bench.CPUSeconds(-1); err == nil {
		t.Error("CPUSeconds(-1): no error")
	}
}

func node(name string, ready corev1.ConditionStatus) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
}

func lease(name string, at time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: at}}}
}

// TestObserver: only matching Nodes count; NotReady updates and transitions
// and renewal lateness are counted only while recording.
func TestObserver(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Now().Truncate(time.Second)
	c := fake.NewClientset(node("a-0", corev1.ConditionTrue), node("b-0", corev1.ConditionTrue), lease("a-0", t0), lease("b-0", t0))
	o, err := bench.Observe(ctx, c, func(n string) bool { return strings.HasPrefix(n, "a-") }, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.WaitReady(ctx, 1); err != nil {
		t.Fatal(err)
	}
	update := func(n *corev1.Node, l *coordinationv1.Lease) {
		t.Helper()
		if n != nil {
			if _, err := c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if l != nil {
			if _, err := c.CoordinationV1().Leases(l.Namespace).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	update(node("a-0", corev1.ConditionFalse), lease("a-0", t0.Add(15*time.Second))) // not recording
	waitFor(t, func() bool { return o.Ready() == 0 })
	update(node("a-0", corev1.ConditionTrue), nil)
	waitFor(t, func() bool { return o.Ready() == 1 })
	time.Sleep(100 * time.Millisecond) // the Lease's informer too
	o.Record(true)
	update(node("a-0", corev1.ConditionUnknown), lease("a-0", t0.Add(25500*time.Millisecond)))
	update(node("a-0", corev1.ConditionUnknown), lease("b-0", t0.Add(30*time.Second)))
	update(node("b-0", corev1.ConditionFalse), nil)
	waitFor(t, func() bool { f := o.Figures(); return f.NotReadyObservations == 2 && f.Renewals == 1 })
	o.Record(false)
	f := o.Figures()
	if f.NotReadyTransitions != 1 || len(f.LatenessMs) != 1 || f.LatenessMs[0] != 500 {
		t.Errorf("figures %+v; want 2 observations, 1 transition, 1 renewal 500 ms late", f)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestKWOKStagesMatchModule: the stage files in testdata/kwok are the
// module's, byte for byte. With BOOTPROOF_REQUIRE_TOOLS=1 ('make test') the
// module is downloaded when the cache lacks it (a fresh machine); otherwise
// the test skips, saying so, when it is not cached.
func TestKWOKStagesMatchModule(t *testing.T) {
	require := os.Getenv("BOOTPROOF_REQUIRE_TOOLS") == "1" // make test: fetch it, never skip
	dir, err := kwokModuleDir(filepath.Join("..", "..", "tools", "kwok"), require, nil)
	if err != nil && require {
		t.Fatalf("sigs.k8s.io/kwok of tools/kwok: %v", err)
	}
	if err != nil {
		t.Skipf("sigs.k8s.io/kwok not in the module cache (go mod download in tools/kwok, or BOOTPROOF_REQUIRE_TOOLS=1): %v", err)
	}
	for file, path := range map[string]string{
		"node-initialize.yaml":           "kustomize/stage/node/fast/node-initialize.yaml",
		"node-heartbeat-with-lease.yaml": "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	} {
		want, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			t.Fatalf("module cache holds sigs.k8s.io/kwok at %s but not %s: %v", dir, path, err)
		}
		got, err := os.ReadFile(filepath.Join("testdata", "kwok", file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/kwok/%s differs from %s in sigs.k8s.io/kwok: copy it again (ORIGIN.md)", file, path)
		}
	}
}

// kwokModuleDir returns the directory of tools/kwok's pinned
// sigs.k8s.io/kwok in the module cache. 'go mod download -json' fills
// Dir only once the module is there, unlike 'go list -m', whose Dir is
// empty (and no error) for a module not yet downloaded. Without download
// the proxy is off, so only the cache is read.
func kwokModuleDir(toolsDir string, download bool, env []string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", "sigs.k8s.io/kwok")
	cmd.Dir = toolsDir
	cmd.Env = append(os.Environ(), env...)
	if !download {
		cmd.Env = append(cmd.Env, "GOPROXY=off")
	}
	out, runErr := cmd.Output()
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", fmt.Errorf("go mod download -json sigs.k8s.io/kwok in %s: %w (output %q, exit %v)", toolsDir, err, out, runErr)
	}
	if m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("go mod download -json sigs.k8s.io/kwok in %s: %q (exit %v)", toolsDir, m.Error, runErr)
	}
	return m.Dir, nil
}

// TestKWOKModuleDirFromEmptyCache guards the fresh machine: with an empty
// module cache, the presence check of TestKWOKStagesMatchModule downloads
// the module when 'make test' requires tools, and reports it missing
// (never an empty directory) when it may not download.
func TestKWOKModuleDirFromEmptyCache(t *testing.T) {
	if os.Getenv("BOOTPROOF_REQUIRE_TOOLS") != "1" {
		t.Skip("downloads sigs.k8s.io/kwok from the module proxy into an empty cache: runs with BOOTPROOF_REQUIRE_TOOLS=1 ('make test')")
	}
	cache := t.TempDir()
	t.Cleanup(func() { // the module cache is read-only; go clean empties it
		clean := exec.Command("go", "clean", "-modcache")
		clean.Env = append(os.Environ(), "GOMODCACHE="+cache)
		if out, err := clean.CombinedOutput(); err != nil {
			t.Errorf("go clean -modcache in %s: %v\n%s", cache, err, out)
		}
	})
	env := []string{"GOMODCACHE=" + cache, "GOFLAGS=-modcacherw"}
	tools := filepath.Join("..", "..", "tools", "kwok")
	if dir, err := kwokModuleDir(tools, false, env); err == nil {
		t.Fatalf("an empty cache without the proxy gave a module directory %q, want an error", dir)
	}
	dir, err := kwokModuleDir(tools, true, env)
	if err != nil {
		t.Fatalf("download into an empty cache: %v", err)
	}
	if !strings.HasPrefix(dir, cache) {
		t.Fatalf("module directory %s is outside the empty cache %s", dir, cache)
	}
	if _, err := os.Stat(filepath.Join(dir, "kustomize", "stage", "node", "fast", "node-initialize.yaml")); err != nil {
		t.Fatalf("downloaded module lacks its stage file: %v", err)
	}
}
