package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bootproof/bootproof/harness/controlplane/cptest"
)

// TestRunKilledLeavesNothing SIGKILLs 'bootproof run' in the middle of a
// case (simulated nodes, an out-of-process subject) and checks that its
// child processes die with it and that 'bootproof cleanup' removes the
// temporary directories (CA key, admin kubeconfig) it could not.
func TestRunKilledLeavesNothing(t *testing.T) {
	cptest.RequireBinaries(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the child's temporary directories, and only its, are here
	cmd, first, stderr := startCLI(t, "run", "--scenario", "fast-reboot-0.5g", "--subject-file", "../../examples/subjects/bootproof-bootid.yaml",
		"--report-dir", filepath.Join(t.TempDir(), "report"))
	if !strings.Contains(first, "running") {
		t.Fatalf("first line %q, want a case running; stderr:\n%s", first, stderr)
	}
	children := processesUnder(t, tmp)
	if len(children) < 3 {
		t.Fatalf("processes using %s: %v, want the control plane's and the subject's", tmp, children)
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "bootproof-*"))
	if len(left) < 2 {
		t.Fatalf("temporary directories %v, want the control plane's and the subject's", left)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	deadline := time.Now().Add(time.Minute)
	for still := processesUnder(t, tmp); len(still) > 0; still = processesUnder(t, tmp) {
		if time.Now().After(deadline) {
			t.Fatalf("a minute after SIGKILL these children still run: %v", still)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, d := range left {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("%s is gone before any cleanup: the test no longer shows the sweep (%v)", d, err)
		}
	}

	out := runCLI(t, 0, "cleanup", "--local-only")
	for _, d := range left {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s remains after bootproof cleanup", d)
		}
		if !strings.Contains(out, d) {
			t.Errorf("cleanup did not report %s:\n%s", d, out)
		}
	}
	if want := fmt.Sprintf("deleted %d temporary directories", len(left)); !strings.Contains(out, want) {
		t.Errorf("cleanup output lacks %q:\n%s", want, out)
	}
	if rest, _ := filepath.Glob(filepath.Join(tmp, "*")); len(rest) > 0 {
		t.Errorf("left in the temporary directory: %v", rest)
	}
}

// runCLI runs this test binary as the bootproof command with args,
// checks its exit code and returns its output.
func runCLI(t *testing.T, code int, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), envRunCLI+"=1")
	out, err := cmd.CombinedOutput()
	if got := cmd.ProcessState.ExitCode(); got != code {
		t.Fatalf("bootproof %v: exit %d (%v), want %d:\n%s", args, got, err, code, out)
	}
	return string(out)
}

// processesUnder lists "pid cmdline" of the processes other than this
// one whose command line or environment mentions dir.
func processesUnder(t *testing.T, dir string) []string {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range procs {
		pid := filepath.Base(p)
		if pid == strconv.Itoa(os.Getpid()) {
			continue
		}
		b, err := os.ReadFile(p + "/cmdline")
		env, _ := os.ReadFile(p + "/environ")
		if err != nil || !strings.Contains(string(b)+string(env), dir) {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && strings.Contains(string(stat), ") Z ") {
			continue // a zombie is dead, waiting for its parent
		}
		out = append(out, pid+" "+strings.ReplaceAll(string(b), "\x00", " "))
	}
	return out
}
