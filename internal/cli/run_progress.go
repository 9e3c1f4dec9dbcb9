package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/bootproof/bootproof/ownership"
	"github.com/bootproof/bootproof/reports"
	"github.com/bootproof/bootproof/scenarios"
	"golang.org/x/term"
)

// printSummary prints the verdict matrix: one row per case.
func printSummary(w io.Writer, r scenarios.Results, cal *reports.CalibrationResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERDICT\tSUBJECT\tSCENARIO\tEXPECTED\tOBSERVED\tDURATION")
	for _, c := range r.Cases {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Verdict, c.Subject, c.Scenario, reports.Expected(c), c.Observed, reports.FormatMS(c.DurationMS))
	}
	tw.Flush()
	if cal != nil {
		// A calibration's line per variant, not per subject: a known-bad
		// variant failing is what it is for.
		for _, row := range cal.Rows {
			fmt.Fprintln(w, reports.VariantLine(row))
		}
	} else {
		for _, sum := range reports.Summaries(r) {
			fmt.Fprintln(w, sum.Line())
		}
	}
	for _, c := range r.Cases {
		if c.Verdict == scenarios.Fail || c.Verdict == scenarios.Error {
			fmt.Fprintf(w, "%s %s: %s\n", c.Verdict, reports.CaseName(c), c.Message)
		}
	}
}

// progress shows one line per case: running (with elapsed time) and then
// its verdict. On a terminal (unless redraw is off: logs share it) the
// running lines are redrawn every second; otherwise plain lines are
// printed as cases start and finish.
type progress struct {
	w       io.Writer
	tty     bool
	mu      sync.Mutex
	running map[string]time.Time
	drawn   int
	quit    chan struct{}
	done    chan struct{}
}

func newProgress(w io.Writer, redraw bool) *progress {
	p := &progress{w: w, running: map[string]time.Time{}, quit: make(chan struct{}), done: make(chan struct{})}
	if f, ok := w.(*os.File); ok && redraw && term.IsTerminal(int(f.Fd())) {
		p.tty = true
	}
	return p
}

func (p *progress) start() {
	go func() {
		defer close(p.done)
		if !p.tty {
			<-p.quit
			return
		}
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-p.quit:
				return
			case <-t.C:
				p.mu.Lock()
				p.redraw()
				p.mu.Unlock()
			}
		}
	}()
}

func (p *progress) stop() {
	close(p.quit)
	<-p.done
	p.mu.Lock()
	p.clear()
	p.mu.Unlock()
}

func key(scenario, subj string) string { return "[" + subj + "] " + scenario }

func (p *progress) Started(scenario, subj string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running[key(scenario, subj)] = time.Now()
	if !p.tty {
		fmt.Fprintf(p.w, "running %s\n", key(scenario, subj))
		return
	}
	p.redraw()
}

func (p *progress) Finished(r scenarios.CaseResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, key(r.Scenario, r.Subject))
	p.clear()
	fmt.Fprintf(p.w, "%-7s %s (%s)\n", r.Verdict, key(r.Scenario, r.Subject), reports.FormatMS(r.DurationMS))
	if p.tty {
		p.redraw()
	}
}

func (p *progress) clear() {
	for ; p.drawn > 0; p.drawn-- {
		fmt.Fprint(p.w, "\033[1A\033[2K")
	}
}

func (p *progress) redraw() {
	p.clear()
	var names []string
	for k := range p.running {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		fmt.Fprintf(p.w, "running %s (%s)\n", k, reports.FormatDuration(time.Since(p.running[k]).Round(time.Second)))
		p.drawn++
	}
}

// sweepTempDirs removes the temporary directories (with keys and
// kubeconfigs) of bootproof runs that were killed; a failure is reported
// and does not stop the run.
func sweepTempDirs(s Streams) {
	removed, err := ownership.SweepTempDirs("", false)
	for _, d := range removed {
		fmt.Fprintf(s.Err, "removed %s, left by a bootproof process that is gone\n", d)
	}
	if err != nil {
		fmt.Fprintf(s.Err, "sweeping the directories of dead runs: %v\n", err)
	}
}
