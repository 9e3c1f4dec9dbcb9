package mutate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Builder builds bootproof with one mutant applied, through the go
// command's -overlay: the checkout is only read.
type Builder struct {
	// Set is the generation the mutants come from.
	Set *Set
	// Package is the main package built; default ./cmd/bootproof.
	Package string
	// WorkDir holds the overlays and the executables.
	WorkDir string
	// Nice, when above 0, runs the build at that niceness, so that the
	// cases judged meanwhile keep the CPU they need.
	Nice int
}

// BuildError is a build the go command refused: a fault of the build,
// not of the mutant (a mutant that does not compile is found by
// Set.Check first).
type BuildError struct {
	Mutant int
	Err    error
	Output string
}

func (e *BuildError) Error() string {
	what := "the unmutated reconciler"
	if e.Mutant > 0 {
		what = fmt.Sprintf("mutant %d", e.Mutant)
	}
	return fmt.Sprintf("build of bootproof with %s: %v\n%s", what, e.Err, strings.TrimSpace(e.Output))
}

// Build builds bootproof with m applied (nil: unmutated) and returns the
// executable's path, in a directory of its own under WorkDir that Remove
// deletes.
func (b *Builder) Build(ctx context.Context, m *Mutant) (string, error) { return b.build(ctx, m, nil) }

// BuildCovered builds the unmutated bootproof with coverage of the
// packages (import paths) counted: each process writes it to $GOCOVERDIR
// when it exits. (The main package is counted too: without it, the
// program writes nothing.)
func (b *Builder) BuildCovered(ctx context.Context, packages []string) (string, error) {
	main := b.Set.Module + "/" + strings.TrimPrefix(b.pkg(), "./")
	return b.build(ctx, nil, []string{"-cover", "-covermode=set", "-coverpkg=" + strings.Join(append(slices.Clone(packages), main), ",")})
}

func (b *Builder) pkg() string {
	if b.Package == "" {
		return "./cmd/bootproof"
	}
	return b.Package
}

func (b *Builder) build(ctx context.Context, m *Mutant, flags []string) (string, error) {
	id := 0
	if m != nil {
		id = m.ID
	}
	dir := filepath.Join(b.WorkDir, fmt.Sprintf("m%04d", id))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	args := append([]string{"build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", filepath.Join(dir, "bootproof")}, flags...)
	if m != nil {
		src, err := b.Set.Mutated(*m)
		if err != nil {
			return "", err
		}
		file := filepath.Join(dir, filepath.Base(m.File))
		if err := os.WriteFile(file, src, 0o644); err != nil {
			return "", err
		}
		overlay, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(b.Set.Dir, filepath.FromSlash(m.File)): file}})
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, "overlay.json"), overlay, 0o644); err != nil {
			return "", err
		}
		args = append(args, "-overlay", filepath.Join(dir, "overlay.json"))
	}
	args = append(args, b.pkg())
	name := goCommand()
	if b.Nice > 0 {
		if nice, err := exec.LookPath("nice"); err == nil {
			args = append([]string{"-n", fmt.Sprint(b.Nice), name}, args...)
			name = nice
		}
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = b.Set.Dir
	// GOFLAGS is the build's: the flags above say everything, and a
	// -trimpath set twice is refused.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		_ = os.RemoveAll(dir)
		return "", &BuildError{Mutant: id, Err: err, Output: out.String()}
	}
	return filepath.Join(dir, "bootproof"), nil
}

// Remove deletes what Build made for the executable exe.
func (b *Builder) Remove(exe string) error { return os.RemoveAll(filepath.Dir(exe)) }
