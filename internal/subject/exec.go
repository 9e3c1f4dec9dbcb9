package subject

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"

	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/internal/shutdown"
	"github.com/bootproof/bootproof/ownership"
	"github.com/bootproof/bootproof/scenarios"
)

// startupGrace is how long a start waits to catch a process that exits
// at once (a bad flag, a missing CRD), so the error says so there.
const startupGrace = time.Second

// tailLines is how many lines of the subject's log an error quotes.
const tailLines = 20

// Exec is a subject file's operator process, shared by all of the
// subject's cases: started in Setup, stopped in Teardown, stopped and
// started again by pause-subject, resume-subject and restart-subject.
type Exec struct {
	File    *File
	Cluster scenarios.Cluster
	// LogDir receives <name>.log, the process's stdout and stderr.
	LogDir string
	// RunID labels what the file's manifests create.
	RunID string
	// Clientset finds the process's leader Lease when the file names
	// none; default a client of Cluster.
	Clientset kubernetes.Interface

	mu         sync.Mutex
	proc       *execProc
	kubeconfig string // the 0600 kubeconfig the process reads
	tmpDir     string
	crashes    []crash
	log        logr.Logger
	unregister func()
	applied    *Applied
	// leases finds the process's leader Lease when the file names none
	// (nil: it names one); firstStart is when the process first started,
	// lease the Lease found.
	leases     *scenarios.LeaseFollower
	firstStart time.Time
	lease      *scenarios.LeaseRef
}

// crash is an exit the harness did not ask for.
type crash struct {
	at  time.Time
	err error
	// own: the subject stopped by its own doing (scenarios.OwnFault).
	own bool
}

type execProc struct {
	cmd      *exec.Cmd
	done     chan struct{}
	waitErr  error
	stopping bool
}

// Name implements scenarios.Subject.
// ReloadSLO implements scenarios.ReloadSLOSetter: the file's reloadSLO.
func (x *Exec) ReloadSLO() (time.Duration, bool) { return x.File.SLO() }

func (x *Exec) Name() string { return x.File.Name }

// Expectation implements scenarios.Expecter.
func (x *Exec) Expectation(s *scenarios.Scenario) (scenarios.Expectation, bool) {
	return x.File.Expectation(s)
}

// CanPause implements scenarios.PauseChecker: the harness owns the
// process.
func (x *Exec) CanPause() error { return nil }

// LogPath is the file the process's output goes to.
func (x *Exec) LogPath() string { return filepath.Join(x.LogDir, x.File.Name+".log") }

// Setup applies the file's CRDs and manifests, writes the kubeconfig and
// starts the process.
func (x *Exec) Setup(ctx context.Context) error {
	x.log = logr.FromContextOrDiscard(ctx).WithValues("subject", x.File.Name)
	var err error
	if x.applied, err = applyAll(ctx, x.Cluster.RESTConfig(), x.File, x.RunID); err != nil {
		return err
	}
	data, err := cluster.KubeconfigData(x.Cluster)
	if err != nil {
		return fmt.Errorf("kubeconfig for subject %s: %w", x.File.Name, err)
	}
	if x.tmpDir, err = ownership.TempDir("subject"); err != nil {
		return fmt.Errorf("subject %s: %w", x.File.Name, err)
	}
	x.unregister = shutdown.Register("subject "+x.File.Name, x.kill)
	x.kubeconfig = filepath.Join(x.tmpDir, "kubeconfig")
	if err := os.WriteFile(x.kubeconfig, data, 0o600); err != nil {
		return fmt.Errorf("subject %s: write kubeconfig: %w", x.File.Name, err)
	}
	if err := os.MkdirAll(x.LogDir, 0o755); err != nil {
		return fmt.Errorf("subject %s: log directory: %w", x.File.Name, err)
	}
	if x.File.LeaderElection == nil {
		cs := x.Clientset
		if cs == nil {
			if cs, err = kubernetes.NewForConfig(x.Cluster.RESTConfig()); err != nil {
				return fmt.Errorf("subject %s: %w", x.File.Name, err)
			}
		}
		// Started before the process, so that the Lease it takes is
		// seen taking its holder.
		x.leases = &scenarios.LeaseFollower{Clientset: cs}
		if err := x.leases.Start(ctx); err != nil {
			x.leases = nil
			return fmt.Errorf("subject %s: find its leader Lease: %w", x.File.Name, err)
		}
	}
	x.firstStart = time.Now()
	return x.start()
}

// LeaderLease is the Lease the file names, else the first Lease outside
// kube-node-lease that took a new holder after the process first
// started, once one did.
func (x *Exec) LeaderLease() (scenarios.LeaseRef, bool) {
	if x.File.LeaderElection != nil {
		return *x.File.LeaderElection, true
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.lease != nil {
		return *x.lease, true
	}
	if x.leases == nil {
		return scenarios.LeaseRef{}, false
	}
	ref, w, ok := x.leases.FirstAcquired(x.firstStart)
	if !ok {
		return scenarios.LeaseRef{}, false
	}
	x.lease = &ref
	x.logf("# bootproof: leader Lease %s found: held by %s %s after the process started (name it in leaderElection if this is not the operator's)",
		ref, w.Holder, w.At.Sub(x.firstStart).Round(time.Millisecond))
	return ref, true
}

// Teardown stops the process, removes the kubeconfig and deletes the
// objects of the file's manifests that Setup created.
func (x *Exec) Teardown() error {
	x.stop()
	if x.leases != nil {
		x.leases.Stop()
	}
	var errs []error
	if x.tmpDir != "" {
		errs = append(errs, os.RemoveAll(x.tmpDir))
	}
	if x.unregister != nil {
		x.unregister()
	}
	if err := x.applied.Remove(context.Background(), removeTimeout); err != nil {
		errs = append(errs, fmt.Errorf("subject %s: %w", x.File.Name, err))
	}
	return errors.Join(errs...)
}

// removeTimeout bounds the removal of what a subject's Setup created.
const removeTimeout = 2 * time.Minute

// kill is the forced-exit cleanup: SIGKILL to the process group, the
// kubeconfig removed.
func (x *Exec) kill() {
	x.mu.Lock()
	p := x.proc
	if p != nil {
		p.stopping = true
	}
	x.mu.Unlock()
	if p != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	if x.tmpDir != "" {
		_ = os.RemoveAll(x.tmpDir)
	}
}

// Start implements scenarios.Subject: the process runs already (it is
// started again if it exited after an earlier case).
func (x *Exec) Start(context.Context, scenarios.SubjectRequest) (scenarios.SubjectInstance, error) {
	x.mu.Lock()
	running := x.proc != nil
	x.mu.Unlock()
	if !running {
		x.logf("# bootproof: the process was not running at the start of a case; starting it again")
		if err := x.start(); err != nil {
			return nil, err
		}
	}
	return &execInstance{x: x, since: time.Now()}, nil
}

// start runs the command and waits startupGrace for an early exit.
func (x *Exec) start() error {
	x.mu.Lock()
	if x.proc != nil {
		x.mu.Unlock()
		return fmt.Errorf("subject %s is already running", x.File.Name)
	}
	f, err := os.OpenFile(x.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		x.mu.Unlock()
		return fmt.Errorf("subject %s: open log: %w", x.File.Name, err)
	}
	e := x.File.Exec
	cmd := exec.Command(e.Command[0], e.Command[1:]...)
	cmd.Dir = e.Dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), "KUBECONFIG="+x.kubeconfig)
	for k, v := range e.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group: the harness stops it and whatever it
		// started; a terminal's Ctrl-C reaches only the harness.
		Setpgid: true,
		// If the harness dies without stopping it, the kernel kills it.
		Pdeathsig: syscall.SIGKILL,
	}
	fmt.Fprintf(f, "# bootproof: %s starting %s (in %s; ${NAME} as written, values not logged)\n", time.Now().Format(time.RFC3339), e.logged(), e.Dir)
	if err := cmd.Start(); err != nil {
		f.Close()
		x.mu.Unlock()
		return fmt.Errorf("start subject %s (%s): %w", x.File.Name, e.Command[0], err)
	}
	p := &execProc{cmd: cmd, done: make(chan struct{})}
	x.proc = p
	x.mu.Unlock()
	x.log.V(1).Info("subject process started", "pid", cmd.Process.Pid)
	go x.wait(p, f)
	select {
	case <-p.done:
		return fmt.Errorf("subject %s exited at start: %w", x.File.Name, x.exitErr(p))
	case <-time.After(startupGrace):
		return nil
	}
}

// wait reaps p and records an exit the harness did not ask for.
func (x *Exec) wait(p *execProc, f *os.File) {
	err := p.cmd.Wait()
	x.mu.Lock()
	p.waitErr = err
	status := "exited with status 0"
	if err != nil {
		status = err.Error()
	}
	if !p.stopping {
		fmt.Fprintf(f, "# bootproof: %s the process %s on its own\n", time.Now().Format(time.RFC3339), status)
		x.crashes = append(x.crashes, crash{at: time.Now(), err: errors.New(status), own: exitedByItself(err)})
		x.proc = nil
	} else {
		fmt.Fprintf(f, "# bootproof: %s stopped by the harness (%s)\n", time.Now().Format(time.RFC3339), status)
	}
	x.mu.Unlock()
	f.Close()
	close(p.done)
}

// exitErr describes p's exit with the tail of the log.
func (x *Exec) exitErr(p *execProc) error {
	x.mu.Lock()
	werr := p.waitErr
	x.mu.Unlock()
	status := "exit status 0"
	if werr != nil {
		status = werr.Error()
	}
	return fmt.Errorf("%s; last lines of %s:\n%s", status, x.LogPath(), controlplane.TailFile(x.LogPath(), tailLines))
}

// stop sends SIGTERM to the process group, SIGKILL after the stop timeout,
// and waits for the process to end.
func (x *Exec) stop() {
	x.mu.Lock()
	p := x.proc
	x.proc = nil
	if p != nil {
		p.stopping = true
	}
	x.mu.Unlock()
	if p == nil {
		return
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(x.File.Exec.stopTimeout):
		x.logf("# bootproof: no exit %s after SIGTERM; sending SIGKILL", x.File.Exec.stopTimeout)
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// Whatever the process left in its group goes too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// crashedSince returns an error for the first exit the harness did not
// ask for after t.
func (x *Exec) crashedSince(t time.Time) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, c := range x.crashes {
		if !c.at.Before(t) {
			return &stopped{own: c.own, err: fmt.Errorf("its process %s at %s; last lines of %s:\n%s", c.err, c.at.Format("15:04:05"), x.LogPath(), controlplane.TailFile(x.LogPath(), tailLines))}
		}
	}
	return nil
}

// logf writes a line of the harness's own into the subject's log.
func (x *Exec) logf(format string, args ...any) {
	f, err := os.OpenFile(x.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, format+"\n", args...)
}

// execInstance is one case's handle on the shared process.
type execInstance struct {
	x     *Exec
	since time.Time
}

// LeaderLease implements scenarios.LeaderLeaser.
func (in *execInstance) LeaderLease() (scenarios.LeaseRef, bool) { return in.x.LeaderLease() }

// Stop implements scenarios.SubjectInstance: the process outlives the
// case.
func (in *execInstance) Stop() error { return nil }

// Pause stops the process.
func (in *execInstance) Pause(context.Context) error {
	in.x.mu.Lock()
	running := in.x.proc != nil
	in.x.mu.Unlock()
	if !running {
		return errors.New("the process is not running")
	}
	in.x.stop()
	return nil
}

// Resume starts the process again.
func (in *execInstance) Resume(context.Context) error { return in.x.start() }

// Err implements scenarios.HealthReporter.
func (in *execInstance) Err() error { return in.x.crashedSince(in.since) }
