package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// RunLogFile is the file in a run's report directory that receives the
// logs of the libraries (klog, controller-runtime, client-go) and of
// bootproof's own parts, so they never mix with the progress lines.
const RunLogFile = "bootproof.log"

// logFanout is where the process's loggers write: to every open run log
// (and the terminal of a --verbose run), or to its fallback when no run
// is open (a finished run's stragglers: dropped).
type logFanout struct {
	mu       sync.Mutex
	ws       []io.Writer
	fallback io.Writer
}

func (f *logFanout) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.ws) == 0 {
		return f.fallback.Write(p)
	}
	for _, w := range f.ws {
		_, _ = w.Write(p) // a log line that cannot be written is lost, the run goes on
	}
	return len(p), nil
}

// add makes f write to w too, until the returned function is called.
func (f *logFanout) add(w io.Writer) (remove func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ws = append(f.ws, w)
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if i := slices.Index(f.ws, w); i >= 0 {
			f.ws = slices.Delete(f.ws, i, i+1)
		}
	}
}

// processLogs receives the logs of every run in this process, and the
// process-wide loggers of klog and controller-runtime once a run has
// routed them here (routeProcessLoggers).
var processLogs = &logFanout{fallback: io.Discard}

var routeOnce sync.Once

// routeProcessLoggers points klog's and controller-runtime's global
// loggers at processLogs, once per process: client-go and
// controller-runtime log through them where no context carries a logger.
func routeProcessLoggers(log logr.Logger) {
	routeOnce.Do(func() {
		klog.SetLogger(log)
		ctrllog.SetLogger(log)
	})
}

// newFanoutLogger is a logger with timestamps at the given verbosity that
// writes to processLogs.
func newFanoutLogger(verbosity int) logr.Logger {
	return funcr.New(func(prefix, args string) {
		if prefix != "" {
			fmt.Fprintf(processLogs, "%s: %s\n", prefix, args)
		} else {
			fmt.Fprintln(processLogs, args)
		}
	}, funcr.Options{Verbosity: verbosity, LogTimestamp: true})
}

// pendingLimit bounds what a run log holds before its file exists.
const pendingLimit = 1 << 20

// runLog is a run's log: held in memory until the report directory exists
// (attach), then written to RunLogFile there.
type runLog struct {
	mu      sync.Mutex
	pending bytes.Buffer
	f       *os.File
	path    string
	remove  []func()
}

func (l *runLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		return l.f.Write(p)
	}
	if l.pending.Len()+len(p) <= pendingLimit {
		l.pending.Write(p)
	}
	return len(p), nil
}

// attach creates dir/RunLogFile with what was logged so far; every later
// line goes there.
func (l *runLog) attach(dir string) error {
	path := filepath.Join(dir, RunLogFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return withCode(ExitInfra, fmt.Errorf("run log: %w", err))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.pending.WriteTo(f)
	l.f, l.path = f, path
	if err != nil {
		return withCode(ExitInfra, fmt.Errorf("run log %s: %w", path, err))
	}
	return nil
}

// close stops the logging into l and closes its file. What was logged
// before attach, if it never was, is dropped (stderr had it under
// --verbose).
func (l *runLog) close() {
	for _, r := range l.remove {
		r()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_ = l.f.Close()
	}
}

// openRunLog sends every log of the run to a runLog (and to stderr when
// verbose): the context's logger, and the global loggers of klog and
// controller-runtime, which client-go's and controller-runtime's own
// messages go through. It returns the context carrying the run's logger;
// attach gives the log its file.
func openRunLog(ctx context.Context, verbose bool, verbosity int, stderr io.Writer) (context.Context, *runLog) {
	l := &runLog{}
	l.remove = append(l.remove, processLogs.add(l))
	if verbose {
		l.remove = append(l.remove, processLogs.add(stderr))
	}
	log := newFanoutLogger(verbosity)
	routeProcessLoggers(log)
	return logr.NewContext(ctx, log), l
}
