package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/internal/cli"
)

// The test binary doubles as the bootproof command when this is set, so
// tests can signal a real process.
const envRunCLI = "BOOTPROOF_TEST_RUN_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(envRunCLI) == "1" {
		os.Exit(cli.Main())
	}
	os.Exit(m.Run())
}

func TestBadInput(t *testing.T) {
	empty := t.TempDir()
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown controller", []string{"controlplane", "up", "--controllers", "node-lifecycle-controller,bogus"},
			[]string{"--controllers", `"bogus"`, "node-lifecycle-controller", "accepted"}},
		{"negative grace period", []string{"controlplane", "up", "--grace-period=-5s"},
			[]string{"--grace-period", "-5s", "at least 1s"}},
		{"short certificate validity", []string{"controlplane", "up", "--cert-validity", "1m"},
			[]string{`invalid --cert-validity "1m0s"`, "from 1h0m0s to 8784h0m0s"}},
		{"zero grace period", []string{"controlplane", "up", "--grace-period", "0"},
			[]string{"invalid --grace-period 0s", "at least 1s", "leave --grace-period out for its default"}},
		{"zero monitor period", []string{"controlplane", "up", "--monitor-period", "0s"},
			[]string{"invalid --monitor-period 0s", "positive duration"}},
		{"not a duration", []string{"controlplane", "up", "--grace-period=soon"},
			[]string{"--grace-period", "soon"}},
		{"missing binary directory", []string{"controlplane", "up", "--bin-dir", filepath.Join(empty, "nope")},
			[]string{"--bin-dir", "nope", "make controlplane"}},
		{"binary directory without binaries", []string{"controlplane", "up", "--bin-dir", empty},
			[]string{"etcd, kube-apiserver, kube-controller-manager", "make controlplane", "--bin-dir"}},
		{"unknown command", []string{"controlplane", "down"}, []string{"unknown command", "down"}},
		// kmm.Options errors name the field; the command line names the flag.
		{"unknown detector", []string{"kmm", "--detector", "ready"}, []string{"invalid --detector \"ready\"", "bootid, legacy"}},
		{"bad worker namespace", []string{"kmm", "--worker-namespace", "Kmm_System"}, []string{"invalid --worker-namespace \"Kmm_System\""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := cli.Run(context.Background(), tc.args, &out, &errb)
			if code != cli.ExitUsage {
				t.Errorf("exit code = %d, want %d", code, cli.ExitUsage)
			}
			msg := strings.TrimSpace(errb.String())
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr %q does not contain %q", msg, w)
				}
			}
			if strings.Count(msg, "\n") > 0 {
				t.Errorf("error is not one line: %q", msg)
			}
		})
	}
}

// startCLI runs this test binary as the bootproof command with args and
// returns the process, its first line of output and its stderr. It kills
// the process when the test ends.
func startCLI(t *testing.T, args ...string) (*exec.Cmd, string, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), envRunCLI+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		for sc.Scan() {
		}
	}()
	select {
	case l, ok := <-first:
		if !ok {
			t.Fatalf("bootproof %v printed nothing; stderr:\n%s", args, stderr.String())
		}
		return cmd, l, stderr
	case <-time.After(3 * time.Minute):
		t.Fatalf("bootproof %v: no first line within 3 minutes; stderr:\n%s", args, stderr.String())
	}
	return nil, "", nil
}

// TestControlPlaneUpStopsOnSIGINT runs 'bootproof controlplane up' as a
// real process, waits for its ready line, sends SIGINT and checks that it
// exits 0 and that none of its children remains.
func TestControlPlaneUpStopsOnSIGINT(t *testing.T) {
	cptest.RequireBinaries(t)
	dir := t.TempDir()
	kubeconfigOut := filepath.Join(t.TempDir(), "kubeconfig")
	cmd, ready, stderr := startCLI(t, "controlplane", "up", "--grace-period", "6s", "--monitor-period", "1s",
		"--dir", dir, "--kubeconfig-out", kubeconfigOut)
	if !strings.Contains(ready, "ready") || !strings.Contains(ready, kubeconfigOut) {
		t.Fatalf("first line %q lacks 'ready' and the kubeconfig path %s", ready, kubeconfigOut)
	}
	if st, err := os.Stat(kubeconfigOut); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("--kubeconfig-out: stat = %v, %v; want a 0600 file", st, err)
	}

	pids := map[string]int{}
	for _, name := range []string{controlplane.BinEtcd, controlplane.BinKubeAPIServer, controlplane.BinKubeControllerManager} {
		data, err := os.ReadFile(filepath.Join(dir, name+".pid"))
		if err != nil {
			t.Fatalf("pid file of %s: %v", name, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("%s (pid %d) not running: %v", name, pid, err)
		}
		pids[name] = pid
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("bootproof controlplane up after SIGINT: %v; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("bootproof controlplane up did not exit within a minute of SIGINT")
	}
	cptest.AssertGone(t, pids, nil)
	// One ready line, on stdout, naming the kubeconfig the user asked for;
	// no log line on stderr repeats it with the run directory's.
	if strings.Contains(stderr.String(), "ready") {
		t.Errorf("stderr repeats the ready line:\n%s", stderr.String())
	}
	if _, err := os.Stat(kubeconfigOut); !os.IsNotExist(err) {
		t.Errorf("--kubeconfig-out file left behind (err %v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "logs", "kube-apiserver.log")); err != nil {
		t.Errorf("--dir should keep the logs: %v", err)
	}
}
