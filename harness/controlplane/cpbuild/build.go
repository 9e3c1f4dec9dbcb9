package cpbuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/utils/clock"
)

// DefaultProgressEvery is how often a build that is not on a terminal
// says it is still going.
const DefaultProgressEvery = time.Minute

// Options say where and how Build builds.
type Options struct {
	// Dir receives the binaries and their stamps (.<binary>.stamp); it is
	// created if missing. Required.
	Dir string
	// Go is the go command (default "go", looked up on $PATH).
	Go string
	// Out receives the progress lines (default io.Discard). Where it is a
	// terminal, a progress bar is drawn instead of periodic lines.
	Out io.Writer
	// ProgressEvery is how often a line says a build is still going
	// (default DefaultProgressEvery).
	ProgressEvery time.Duration
	// Only limits the build to these binaries (default: every Component).
	Only []string
	// Clock measures the durations printed (default: the real clock).
	Clock clock.PassiveClock
}

func (o *Options) defaults() error {
	if o.Dir == "" {
		return errors.New("Options.Dir: required: the directory that receives the binaries")
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if _, err := exec.LookPath(o.Go); err != nil {
		return fmt.Errorf("the go command builds the control plane, and %w: install Go %s or later, or put binaries built elsewhere in a directory and name it", err, goVersion())
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = DefaultProgressEvery
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	for _, b := range o.Only {
		if _, ok := component(b); !ok {
			return fmt.Errorf("Options.Only: %q: accepted: %s", b, strings.Join(Binaries(), ", "))
		}
	}
	return nil
}

// Binaries names the components' binaries, in build order.
func Binaries() []string {
	out := make([]string, 0, len(Components))
	for _, c := range Components {
		out = append(out, c.Binary)
	}
	return out
}

func component(binary string) (Component, bool) {
	for _, c := range Components {
		if c.Binary == binary {
			return c, true
		}
	}
	return Component{}, false
}

// recipe is how a component is built; part of its stamp. It is the text
// tools/controlplane/build.sh once stamped with, so binaries that script
// built stay current.
func recipe(c Component) string {
	return fmt.Sprintf("CGO_ENABLED=0 go build -trimpath -ldflags '%s' %s (module %s)", Ldflags(), c.Package, c.Module)
}

// Stamp is what a component's binary is built from: its module's pins and
// its recipe, hashed.
func Stamp(c Component) (string, error) {
	mod, sum, err := ModuleFiles(c.Module)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(mod)
	h.Write(sum)
	fmt.Fprintln(h, recipe(c))
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Current reports whether dir holds c's binary built from the pins.
func Current(dir string, c Component) bool {
	st, err := os.Stat(filepath.Join(dir, c.Binary))
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return false
	}
	have, err := os.ReadFile(filepath.Join(dir, "."+c.Binary+".stamp"))
	want, serr := Stamp(c)
	return err == nil && serr == nil && strings.TrimSpace(string(have)) == want
}

// Build builds every component (or Options.Only) whose binary in
// Options.Dir is missing or stale, one after the other, and stamps each.
// A failed build returns a *BuildError with the compiler's output and
// leaves no stamp for that binary.
func Build(ctx context.Context, o Options) error {
	if err := o.defaults(); err != nil {
		return err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return fmt.Errorf("create the binaries' directory: %w", err)
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return err
	}
	wanted := Components
	if len(o.Only) > 0 {
		wanted = nil
		for _, b := range o.Only {
			c, _ := component(b)
			wanted = append(wanted, c)
		}
	}
	var todo []string
	for _, c := range wanted {
		if !Current(dir, c) {
			todo = append(todo, c.Binary)
		}
	}
	names := make([]string, len(wanted))
	for i, c := range wanted {
		names[i] = c.Binary
	}
	if len(todo) == 0 {
		fmt.Fprintf(o.Out, "controlplane: %s are cached in %s (rebuilt only when the pinned modules change)\n", joinAnd(names), dir)
		return nil
	}
	fmt.Fprintf(o.Out, "controlplane: building %s into %s (%s %s; a first build takes about 11 minutes on 2 cores, later runs reuse it)\n",
		strings.Join(todo, " "), dir, kubernetesModule, KubernetesVersion())
	begin := o.Clock.Now()
	for i, c := range wanted {
		tag := fmt.Sprintf("controlplane: [%d/%d] %s", i+1, len(wanted), c.Binary)
		if Current(dir, c) {
			fmt.Fprintf(o.Out, "%s is cached\n", tag)
			continue
		}
		if err := buildOne(ctx, o, dir, c, tag); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Out, "controlplane: done in %s\n", duration(o.Clock.Since(begin)))
	return nil
}

// buildOne builds c in a temporary module holding its pins, then stamps it.
func buildOne(ctx context.Context, o Options, dir string, c Component, tag string) error {
	mod, sum, err := ModuleFiles(c.Module)
	if err != nil {
		return err
	}
	stamp, err := Stamp(c)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp(dir, ".build-"+c.Module+"-")
	if err != nil {
		return fmt.Errorf("%s: module directory: %w", c.Binary, err)
	}
	defer os.RemoveAll(work)
	if err := os.WriteFile(filepath.Join(work, "go.mod"), mod, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, "go.sum"), sum, 0o644); err != nil {
		return err
	}
	stampFile := filepath.Join(dir, "."+c.Binary+".stamp")
	_ = os.Remove(stampFile)
	g := goBuild{o: o, tag: tag, binary: c.Binary, dir: work, pkg: c.Package, out: filepath.Join(dir, c.Binary),
		flags: []string{"-trimpath", "-ldflags", Ldflags()}}
	if err := g.run(ctx); err != nil {
		return err
	}
	return os.WriteFile(stampFile, []byte(stamp+"\n"), 0o644)
}

// joinAnd joins names as "a, b and c".
func joinAnd(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// duration prints d as "45 s" or "3 min 12 s".
func duration(d time.Duration) string {
	s := int(d.Seconds())
	if s < 60 {
		return fmt.Sprintf("%d s", s)
	}
	return fmt.Sprintf("%d min %d s", s/60, s%60)
}
