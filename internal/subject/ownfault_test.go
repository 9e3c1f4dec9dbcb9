package subject

import (
	"errors"
	"os/exec"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/bootproof/bootproof/scenarios"
)

// A process that exits by itself, whatever its status, stopped by its
// own doing; one a signal ended did not (as far as anyone can tell).
func TestExitedByItself(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		script string
		want   bool
	}{
		{"exit 0", true},
		{"exit 3", true},
		{"kill -KILL $$", false},
		{"kill -TERM $$", false},
	} {
		err := exec.Command("sh", "-c", tc.script).Run()
		if got := exitedByItself(err); got != tc.want {
			t.Errorf("sh -c %q (%v): exitedByItself = %v, want %v", tc.script, err, got, tc.want)
		}
	}
	if exitedByItself(errors.New("wait: no child processes")) {
		t.Errorf("an error that is no exit status counted as an exit of its own")
	}
}

// A container's termination is its own below status 128 and not by the
// OOM killer; 128+N is signal N's.
func TestContainerExitedByItself(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		term corev1.ContainerStateTerminated
		want bool
	}{
		{"exit 1", corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}, true},
		{"exit 0", corev1.ContainerStateTerminated{Reason: "Completed", ExitCode: 0}, true},
		{"SIGKILL", corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 137}, false},
		{"OOM", corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}, false},
		{"OOM, odd status", corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 1}, false},
		{"signal reported", corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 0, Signal: 9}, false},
		{"unknown, status 255", corev1.ContainerStateTerminated{Reason: "Unknown", ExitCode: 255}, false},
	} {
		if got := containerExitedByItself(&tc.term); got != tc.want {
			t.Errorf("%s: containerExitedByItself = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The stops the instances report say whose doing they were through
// scenarios.OwnFault.
func TestStopsSayWhoseDoing(t *testing.T) {
	t.Parallel()
	var of scenarios.OwnFault
	own := &stopped{own: true, err: errors.New("its manager stopped on its own")}
	if !errors.As(error(own), &of) || !of.OwnFault() {
		t.Errorf("an own stop is not an OwnFault saying so")
	}
	from := &stopped{err: errors.New("its process signal: killed")}
	if !errors.As(error(from), &of) || of.OwnFault() {
		t.Errorf("a stop from outside reads as the subject's own")
	}
	if pe := (&ProcessExit{Status: "exit status 2"}); !pe.OwnFault() {
		t.Errorf("a process exit by itself is not its own")
	}
	if pe := (&ProcessExit{Status: "signal: killed", Signaled: true}); pe.OwnFault() {
		t.Errorf("a signalled process reads as stopping by itself")
	}
}
