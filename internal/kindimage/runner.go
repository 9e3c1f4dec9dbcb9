package kindimage

import (
	"bytes"
	"context"
	"io"
	"os/exec"
)

// Runner runs the commands a build needs (debootstrap, tar, docker, the
// built binaries): the seam tests replace.
type Runner interface {
	// Output runs the command and returns its combined output.
	Output(ctx context.Context, name string, args ...string) ([]byte, error)
	// Pipe runs the command with stdin and returns its combined output.
	Pipe(ctx context.Context, stdin io.Reader, name string, args ...string) ([]byte, error)
}

// ExecRunner runs commands on this machine.
type ExecRunner struct{}

// Output implements Runner.
func (ExecRunner) Output(ctx context.Context, name string, args ...string) ([]byte, error) {
	return exec.CommandContext(ctx, name, args...).CombinedOutput()
}

// Pipe implements Runner.
func (ExecRunner) Pipe(ctx context.Context, stdin io.Reader, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = stdin
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}
