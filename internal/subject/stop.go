package subject

import (
	"errors"
	"os/exec"
	"syscall"

	corev1 "k8s.io/api/core/v1"
)

// A subject's stop the harness did not ask for says whose doing it was
// (scenarios.OwnFault): its own fails the case through subject-runs, one
// from outside makes it an error.

// stopped is the error of a stop of the subject the harness did not ask
// for; it implements scenarios.OwnFault.
type stopped struct {
	err error
	own bool
}

func (s *stopped) Error() string  { return s.err.Error() }
func (s *stopped) Unwrap() error  { return s.err }
func (s *stopped) OwnFault() bool { return s.own }

// exitedByItself reports whether a process's wait error (nil: exit
// status 0) is an exit of its own, not a signal's.
func exitedByItself(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return err == nil
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Exited()
}

// containerExitedByItself reports whether a container's termination was
// an exit of its own: a status below 128 (128+N is signal N's: a kill
// from outside, the kubelet's after a failed liveness probe included)
// and not the OOM killer's.
func containerExitedByItself(t *corev1.ContainerStateTerminated) bool {
	return t.ExitCode < 128 && t.Reason != "OOMKilled" && t.Signal == 0
}
