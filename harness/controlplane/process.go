package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// tailLines is how many log lines an early-exit error quotes.
const tailLines = 20

// process is one child of the control plane: in its own process group, with
// a parent-death signal, its output in a log file and its pid in a pid file.
type process struct {
	// spec says how to start it again and check its health.
	spec    procSpec
	name    string
	cmd     *exec.Cmd
	logPath string
	pidPath string
	logFile *os.File

	done     chan struct{}
	waitErr  error
	stopping bool
	mu       sync.Mutex
}

// procSpec is how a control-plane process is started and checked.
type procSpec struct {
	name, bin string
	args      []string
	client    *http.Client
	health    string // URL that answers 200 when it is ready
}

// startProcess starts bin with args. stdout and stderr go to
// <logDir>/<name>.log, the pid to <runDir>/<name>.pid.
func startProcess(name, bin string, args []string, runDir, logDir string) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log of %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.Dir = runDir
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group: a terminal's Ctrl-C reaches only the
		// harness, which then stops the children in order.
		Setpgid: true,
		// If the harness dies without stopping it, the kernel kills it.
		Pdeathsig: syscall.SIGKILL,
	}
	fmt.Fprintf(f, "# bootproof: %s %s\n", bin, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, logFile: f, done: make(chan struct{}),
		pidPath: filepath.Join(runDir, name+".pid")}
	_ = os.WriteFile(p.pidPath, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid returns the process id.
func (p *process) Pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes an early exit, quoting the tail of the log.
func (p *process) exitError() error {
	p.mu.Lock()
	werr := p.waitErr
	p.mu.Unlock()
	status := "exited"
	if werr != nil {
		status = werr.Error()
	}
	return &ExitError{Process: p.name, Status: status, LogPath: p.logPath, Tail: TailFile(p.logPath, tailLines)}
}

// stop sends SIGTERM to the process group, then SIGKILL after timeout, and
// waits for the process to end.
func (p *process) stop(timeout time.Duration) {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	defer os.Remove(p.pidPath)
	if p.exited() {
		return
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// Anything the process left in its group goes too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// ExitError is returned when a control-plane process ends before it should.
type ExitError struct {
	Process string
	Status  string
	LogPath string
	Tail    string
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("%s exited early (%s); last lines of %s:\n%s", e.Process, e.Status, e.LogPath, e.Tail)
}

// errPortInUse marks a start that failed because a chosen port was taken
// between choosing and binding; Start retries with new ports.
var errPortInUse = errors.New("port in use")

func (e *ExitError) Is(target error) bool {
	return target == errPortInUse && strings.Contains(e.Tail, "address already in use")
}

// TailFile returns the last n lines of a file, indented, for error
// messages that quote a process's log.
func TailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + string(bytes.Join(lines, []byte("\n  ")))
}
