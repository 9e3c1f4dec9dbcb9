package cpbuild

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// BuildError is a failed go build: which binary, go's exit status and what
// the compiler said.
type BuildError struct {
	Binary string
	Err    error
	Output string
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("build %s: %v\n%s", e.Binary, e.Err, strings.TrimRight(e.Output, "\n"))
}

func (e *BuildError) Unwrap() error { return e.Err }

// goBuild is one 'go build' of a main package, reported as it goes.
type goBuild struct {
	o        Options
	tag      string
	binary   string
	dir, pkg string
	out      string
	flags    []string
	mu       sync.Mutex
	compiled int
	total    int
	start    time.Time
}

func (g *goBuild) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, g.o.Go, args...)
	cmd.Dir = g.dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	return cmd
}

func (g *goBuild) run(ctx context.Context) error {
	g.start = g.o.Clock.Now()
	fmt.Fprintf(g.o.Out, "%s: resolving the packages of %s (downloads the pinned modules the first time)\n", g.tag, g.pkg)
	list := g.command(ctx, append(append([]string{"list", "-deps"}, g.flags...), g.pkg)...)
	var listErr bytes.Buffer
	list.Stderr = &listErr
	deps, err := list.Output()
	if err != nil {
		return &BuildError{Binary: g.binary, Err: fmt.Errorf("go list: %w", err), Output: listErr.String()}
	}
	g.total = bytes.Count(deps, []byte("\n"))
	fmt.Fprintf(g.o.Out, "%s: building %s (%d packages)\n", g.tag, g.pkg, g.total)

	build := g.command(ctx, append(append([]string{"build", "-v"}, g.flags...), "-o", g.out, g.pkg)...)
	pr, pw := io.Pipe()
	build.Stdout, build.Stderr = pw, pw
	var other []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || strings.HasPrefix(line, "#") || strings.ContainsAny(line, " \t") {
				other = append(other, line)
				continue
			}
			g.mu.Lock()
			g.compiled++
			g.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	stop := g.report()
	err = build.Run()
	pw.Close()
	<-done
	stop()
	took := duration(g.o.Clock.Since(g.start))
	if err != nil {
		fmt.Fprintf(g.o.Out, "%s: go build failed (%v) after %s\n", g.tag, err, took)
		return &BuildError{Binary: g.binary, Err: err, Output: strings.Join(other, "\n")}
	}
	fmt.Fprintf(g.o.Out, "%s: built in %s (%d packages compiled, the rest from Go's build cache)\n", g.tag, took, g.compiled)
	return nil
}

// report says how the build goes until the returned function is called:
// a bar redrawn every second on a terminal, else a line every
// ProgressEvery.
func (g *goBuild) report() func() {
	tty := isTerminal(g.o.Out)
	every := g.o.ProgressEvery
	if tty {
		every = time.Second
	}
	t := time.NewTicker(every)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			g.mu.Lock()
			n := g.compiled
			g.mu.Unlock()
			if tty {
				fmt.Fprint(g.o.Out, bar(g.tag, n, g.total, g.o.Clock.Since(g.start)))
			} else {
				fmt.Fprintf(g.o.Out, "%s: still building, %s so far; %d of its %d packages compiled (cached ones are not counted)\n",
					g.tag, duration(g.o.Clock.Since(g.start)), n, g.total)
			}
		}
	}()
	return func() {
		close(quit)
		wg.Wait()
		if tty {
			fmt.Fprint(g.o.Out, "\r\033[2K")
		}
	}
}

// bar draws the progress bar: packages compiled of those the binary needs.
func bar(tag string, n, total int, took time.Duration) string {
	const width = 30
	total = max(total, 1)
	n = min(n, total)
	filled := n * width / total
	return fmt.Sprintf("\r\033[2K  %-24s [%s%s] %3d%% %d/%d packages, %s", tag,
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), n*100/total, n, total, duration(took))
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
