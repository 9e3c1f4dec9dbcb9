package subject

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/internal/shutdown"
	"github.com/bootproof/bootproof/kmm"
	"github.com/bootproof/bootproof/ownership"
	"github.com/bootproof/bootproof/scenarios"
)

// processStopTimeout is how long a stopped reconciler process gets to
// exit after SIGTERM before SIGKILL.
const processStopTimeout = 10 * time.Second

// Process is bootproof's reconciler run from an executable ('Executable
// kmm'), one process per case, scoped to the case's nodes and namespace
// as the in-process KMM subject is (--selector, --worker-namespace),
// with leader election off and the identity of the reconciler's RBAC
// manifest where the cluster issues identities. Unlike an exec subject,
// which reconciles the whole cluster, its cases run side by side. 'bootproof
// mutate' judges each mutant of the reconciler this way; it is judged
// with the bootid subject's expectations.
type Process struct {
	// SubjectName is its name in reports.
	SubjectName string
	// Executable is a bootproof executable (a build of cmd/bootproof).
	Executable string
	// Cluster is the cluster its cases run on.
	Cluster scenarios.Cluster
	// LogDir receives each case's log, <namespace>.log.
	LogDir string
	// Env is added to the process's environment (GOCOVERDIR for a
	// build with coverage, say).
	Env []string
}

// Name implements scenarios.Subject.
func (p *Process) Name() string { return p.SubjectName }

// Expectation implements scenarios.Expecter: the bootid subject's.
func (p *Process) Expectation(s *scenarios.Scenario) (scenarios.Expectation, bool) {
	e, ok := s.Expect[BootID]
	if ok {
		e.Source = "scenario " + s.Name + " (expectation of the bootid subject, whose reconciler this is)"
	}
	return e, ok
}

// CanPause implements scenarios.PauseChecker: the harness owns the
// process.
func (p *Process) CanPause() error { return nil }

// Prepare installs the CRD and the RBAC manifest for the case's
// namespace, as for the in-process subject.
func (p *Process) Prepare(ctx context.Context, req scenarios.SubjectRequest) error {
	return (&KMM{Cluster: p.Cluster}).Prepare(ctx, req)
}

// Start writes the case's kubeconfig and starts the process.
func (p *Process) Start(ctx context.Context, req scenarios.SubjectRequest) (scenarios.SubjectInstance, error) {
	rc := p.Cluster.RESTConfig()
	if iss := cluster.IssuerOf(p.Cluster); iss != nil {
		var err error
		if rc, err = iss.UserRESTConfig("bootproof:kmm:"+req.Namespace, kmm.RBACGroup); err != nil {
			return nil, err
		}
	}
	data, err := cluster.KubeconfigData(restConfig{rc})
	if err != nil {
		return nil, fmt.Errorf("kubeconfig for subject %s: %w", p.SubjectName, err)
	}
	dir, err := ownership.TempDir("subject")
	if err != nil {
		return nil, fmt.Errorf("subject %s: %w", p.SubjectName, err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("subject %s: write kubeconfig: %w", p.SubjectName, err)
	}
	if err := os.MkdirAll(p.LogDir, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("subject %s: log directory: %w", p.SubjectName, err)
	}
	var sel []string
	for k, v := range req.Selector {
		sel = append(sel, k+"="+v)
	}
	args := []string{"kmm", "--kubeconfig=" + kubeconfig, "--selector=" + strings.Join(sel, ","),
		"--worker-namespace=" + req.Namespace, "--leader-elect=false", "--leader-election-namespace=" + req.Namespace,
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--kube-api-qps=" + strconv.FormatFloat(float64(rc.QPS), 'f', -1, 32), "--kube-api-burst=" + strconv.Itoa(rc.Burst)}
	in := &processInstance{name: p.SubjectName, exe: p.Executable, args: args, env: p.Env, dir: dir,
		logPath: filepath.Join(p.LogDir, req.Namespace+".log")}
	in.unregister = shutdown.Register("subject "+p.SubjectName+" for "+req.Namespace, in.kill)
	if err := in.start(); err != nil {
		in.cleanup()
		return nil, err
	}
	return in, nil
}

// restConfig lends a REST config to cluster.KubeconfigData.
type restConfig struct{ rc *rest.Config }

func (r restConfig) RESTConfig() *rest.Config { return r.rc }

// processInstance is one case's reconciler process.
type processInstance struct {
	name, exe, dir, logPath string
	args, env               []string
	unregister              func()

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	// exited is the exit the harness did not ask for, if any.
	exited error
}

// ProcessExit is how a subject's process ended on its own.
type ProcessExit struct {
	// Status is the wait status ("exit status 2", "signal: killed").
	Status string
	// Signaled: a signal ended it (from outside, as far as anyone can
	// tell); otherwise it exited by itself.
	Signaled bool
	// Log names the process's log, Tail is its last lines.
	Log, Tail string
}

// OwnFault implements scenarios.OwnFault: an exit by itself, not by a
// signal, is the subject's own.
func (e *ProcessExit) OwnFault() bool { return !e.Signaled }

func (e *ProcessExit) Error() string {
	return fmt.Sprintf("its process ended on its own (%s); last lines of %s:\n%s", e.Status, e.Log, e.Tail)
}

func (in *processInstance) start() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd != nil {
		return errors.New("subject " + in.name + " is already running")
	}
	f, err := os.OpenFile(in.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("subject %s: open log: %w", in.name, err)
	}
	cmd := exec.Command(in.exe, in.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), in.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(f, "# bootproof: %s starting %s %s\n", time.Now().Format(time.RFC3339), in.exe, strings.Join(in.args, " "))
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start subject %s (%s): %w", in.name, in.exe, err)
	}
	done := make(chan struct{})
	in.cmd, in.done = cmd, done
	go func() {
		err := cmd.Wait()
		in.mu.Lock()
		if in.cmd == cmd { // not stopped by the harness
			status := "exit status 0"
			if err != nil {
				status = err.Error()
			}
			var ee *exec.ExitError
			signaled := errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled()
			in.exited = &ProcessExit{Status: status, Signaled: signaled, Log: in.logPath,
				Tail: controlplane.TailFile(in.logPath, tailLines)}
			in.cmd = nil
		}
		in.mu.Unlock()
		f.Close()
		close(done)
	}()
	return nil
}

// Pause stops the process (SIGTERM, then SIGKILL).
func (in *processInstance) Pause(context.Context) error {
	in.mu.Lock()
	cmd, done := in.cmd, in.done
	in.cmd = nil
	in.mu.Unlock()
	if cmd == nil {
		return errors.New("the process is not running")
	}
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(processStopTimeout):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return nil
}

// Resume starts the process again.
func (in *processInstance) Resume(context.Context) error { return in.start() }

// Err implements scenarios.HealthReporter.
func (in *processInstance) Err() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.exited != nil {
		return in.exited
	}
	return nil
}

// Stop stops the process if it runs and removes its kubeconfig.
func (in *processInstance) Stop() error {
	in.mu.Lock()
	running := in.cmd != nil
	in.mu.Unlock()
	if running {
		_ = in.Pause(context.Background())
	}
	in.cleanup()
	return nil
}

func (in *processInstance) cleanup() {
	if in.unregister != nil {
		in.unregister()
	}
	_ = os.RemoveAll(in.dir)
}

// kill is the forced-exit cleanup.
func (in *processInstance) kill() {
	in.mu.Lock()
	cmd := in.cmd
	in.cmd = nil
	in.mu.Unlock()
	if cmd != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	_ = os.RemoveAll(in.dir)
}
