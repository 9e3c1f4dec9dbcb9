package subject

import (
	"context"
	"fmt"
	"k8s.io/client-go/kubernetes/fake"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/bootproof/bootproof/kmm/controller"
	"github.com/bootproof/bootproof/scenarios"
)

// restOnly is a cluster reached through a REST config alone (no
// kubeconfig file): the exec subject writes one from it.
type restOnly struct{}

func (restOnly) Name() string               { return "test" }
func (restOnly) GracePeriod() time.Duration { return 10 * time.Second }
func (restOnly) RESTConfig() *rest.Config {
	return &rest.Config{Host: "https://127.0.0.1:1", BearerToken: "t0ken", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}}
}

// newExec returns an exec subject running sh -c script.
func newExec(t *testing.T, script string, stop time.Duration) *Exec {
	t.Helper()
	dir := t.TempDir()
	f := &File{Name: "op", Path: filepath.Join(dir, "op.yaml"),
		Exec: &ExecSpec{Command: []string{"sh", "-c", script}, Dir: dir, Env: map[string]string{"OPERATOR_NAMESPACE": "ops"}, stopTimeout: stop}}
	x := &Exec{File: f, Cluster: restOnly{}, LogDir: filepath.Join(dir, "subjects"), Clientset: fake.NewClientset()}
	t.Cleanup(func() { _ = x.Teardown() })
	return x
}

// alive reports whether pid runs (a zombie, dead but not reaped by an
// init that does not reap, does not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}

func (x *Exec) pid() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.proc == nil {
		return 0
	}
	return x.proc.cmd.Process.Pid
}

func TestExecLifecycle(t *testing.T) {
	x := newExec(t, `stat -c 'kubeconfig mode %a' "$KUBECONFIG"; grep -c t0ken "$KUBECONFIG"; echo "namespace $OPERATOR_NAMESPACE"; exec sleep 600`, 5*time.Second)
	ctx := context.Background()
	if err := x.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	first := x.pid()
	if first == 0 || !alive(first) {
		t.Fatal("the process does not run after Setup")
	}
	inst, err := x.Start(ctx, scenarios.SubjectRequest{})
	if err != nil {
		t.Fatal(err)
	}
	p := inst.(scenarios.Pauser)
	if err := p.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if alive(first) {
		t.Error("the process still runs after Pause")
	}
	if err := inst.(scenarios.HealthReporter).Err(); err != nil {
		t.Errorf("a pause is not a crash: %v", err)
	}
	if err := p.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	second := x.pid()
	if second == 0 || second == first || !alive(second) {
		t.Errorf("Resume: pid %d (before %d)", second, first)
	}
	if err := inst.Stop(); err != nil || !alive(second) {
		t.Errorf("a case's Stop must leave the shared process running: %v", err)
	}
	kubeconfig := x.kubeconfig
	if err := x.Teardown(); err != nil {
		t.Fatal(err)
	}
	if alive(second) {
		t.Error("the process runs after Teardown")
	}
	if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
		t.Errorf("the kubeconfig is left after Teardown: %v", err)
	}
	log, _ := os.ReadFile(x.LogPath())
	for _, want := range []string{"kubeconfig mode 600", "\n1\n", "namespace ops", "stopped by the harness"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(string(log), "on its own") {
		t.Errorf("a stop by the harness was logged as a crash:\n%s", log)
	}
}

func TestExecCrashIsReportedWithLogTail(t *testing.T) {
	x := newExec(t, `echo operator starting; sleep 1.5; echo "panic: simulated crash" >&2; exit 3`, 5*time.Second)
	ctx := context.Background()
	if err := x.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	inst, err := x.Start(ctx, scenarios.SubjectRequest{})
	if err != nil {
		t.Fatal(err)
	}
	h := inst.(scenarios.HealthReporter)
	deadline := time.Now().Add(20 * time.Second)
	for h.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	err = h.Err()
	if err == nil {
		t.Fatal("the process exited, but the instance reports no error")
	}
	for _, want := range []string{"exit status 3", "panic: simulated crash", x.LogPath()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	// The next case starts it again and is not blamed for the old crash.
	next, err := x.Start(ctx, scenarios.SubjectRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if x.pid() == 0 {
		t.Error("the next case did not start the process again")
	}
	if err := next.(scenarios.HealthReporter).Err(); err != nil {
		t.Errorf("the next case is blamed for an earlier crash: %v", err)
	}
}

func TestExecExitAtStart(t *testing.T) {
	x := newExec(t, `echo "error: unknown flag --bogus" >&2; exit 2`, 5*time.Second)
	err := x.Setup(context.Background())
	if err == nil || !strings.Contains(err.Error(), "exited at start") || !strings.Contains(err.Error(), "unknown flag --bogus") {
		t.Errorf("Setup = %v, want the early exit with the log tail", err)
	}
}

// A process that ignores SIGTERM is killed after the stop timeout, with
// whatever it started in its process group.
func TestExecStopKillsAfterTimeout(t *testing.T) {
	x := newExec(t, `trap '' TERM; sleep 600 & echo child $!; wait`, time.Second)
	if err := x.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	pid := x.pid()
	start := time.Now()
	if err := x.Teardown(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Teardown took %s", d)
	}
	if alive(pid) {
		t.Error("the process survived Teardown")
	}
	log, _ := os.ReadFile(x.LogPath())
	var child int
	for _, l := range strings.Split(string(log), "\n") {
		if n, ok := strings.CutPrefix(l, "child "); ok {
			child = atoi(n)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if child == 0 || alive(child) {
		t.Errorf("the process's child (%d) survived Teardown; log:\n%s", child, log)
	}
	if !strings.Contains(string(log), "sending SIGKILL") {
		t.Errorf("log does not say SIGKILL was sent:\n%s", log)
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range strings.TrimSpace(s) {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// A reconcile that panics makes the in-process instance report a fault:
// the instance gives kmm its panic handler, which each reconcile's
// recover calls with the value.
func TestInProcessPanicIsReported(t *testing.T) {
	in := &instance{}
	boom := controller.Recovering(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		panic("runtime error: index out of range [3] with length 1")
	}), in.panicked)
	if in.Err() != nil {
		t.Fatalf("a fault before any reconcile: %v", in.Err())
	}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "node-1"}}
	if _, err := boom.Reconcile(context.Background(), req); err == nil {
		t.Error("the panicking reconcile returned no error")
	}
	if err := in.Err(); err == nil || err.Error() != "its reconciler panicked on node node-1: runtime error: index out of range [3] with length 1" {
		t.Errorf("Err = %v", err)
	}
}

// TestExecLogHidesExpandedValues: the subject's log records its command
// as the file wrote it, so a token passed as ${NAME} never lands in the
// log (which the GitHub Action uploads as an artifact), while the process
// gets the value.
func TestExecLogHidesExpandedValues(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "op.yaml")
	if err := os.WriteFile(p, []byte("apiVersion: bootproof.dev/v1alpha1\nkind: Subject\nname: op\nexec:\n  command:\n    - sh\n    - -c\n    - exec sleep 600\n    - --token=${OP_TOKEN}\n  stopTimeout: 5s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(p, func(name string) (string, bool) {
		if name == "OP_TOKEN" {
			return "s3cr3t-value", true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(f.Exec.Command, "--token=s3cr3t-value") {
		t.Fatalf("the process must get the value: %q", f.Exec.Command)
	}
	x := &Exec{File: f, Cluster: restOnly{}, LogDir: filepath.Join(dir, "subjects"), Clientset: fake.NewClientset()}
	if err := x.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := x.Teardown(); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(x.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), "s3cr3t-value") || !strings.Contains(string(log), "--token=${OP_TOKEN}") {
		t.Errorf("log must show ${OP_TOKEN} as written, never its value:\n%s", log)
	}
}
