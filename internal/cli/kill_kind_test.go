package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// envKindImage names the kind node image of the kind tests ('make
// e2e-kind' sets it to the image it runs on).
const envKindImage = "BOOTPROOF_KIND_IMAGE"

// TestRunKilledLeavesNoKindCluster SIGKILLs a run on kind in the middle of
// a case: its kind cluster (named for the killed process) is left running,
// since nothing ties containers to a process, and 'bootproof cleanup
// --local-only' must delete it, with the run's temporary directories and
// kind's network.
func TestRunKilledLeavesNoKindCluster(t *testing.T) {
	image := os.Getenv(envKindImage)
	if image == "" {
		t.Skipf("needs a kind node image in %s and docker: 'make e2e-kind' runs this test on the image it built or chose", envKindImage)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	cmd, first, stderr := startCLI(t, "run", "--cluster", "kind", "--kind-image", image, "--scenario", "fast-reboot-0.5g", "--subject", "bootid",
		"--report-dir", filepath.Join(t.TempDir(), "report"))
	if !strings.Contains(first, "running") {
		t.Fatalf("first line %q, want a case running; stderr:\n%s", first, stderr)
	}
	name := "bootproof-" + strconv.Itoa(cmd.Process.Pid) + "-"
	if got := kindContainers(t, name); len(got) == 0 {
		t.Fatalf("no kind node named %s* runs; stderr:\n%s", name, stderr)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if got := kindContainers(t, name); len(got) == 0 {
		t.Fatal("the killed run's kind node is gone before any cleanup: the test no longer shows the sweep")
	}
	out := runCLI(t, 0, "cleanup", "--local-only")
	if got := kindContainers(t, name); len(got) > 0 {
		t.Errorf("kind nodes remain after bootproof cleanup: %v\n%s", got, out)
	}
	if !strings.Contains(out, name) {
		t.Errorf("cleanup did not report the kind cluster %s*:\n%s", name, out)
	}
	if rest, _ := filepath.Glob(filepath.Join(tmp, "bootproof-*")); len(rest) > 0 {
		t.Errorf("temporary directories left: %v", rest)
	}
	if exec.Command("docker", "network", "inspect", "kind").Run() == nil && len(kindContainers(t, "")) == 0 {
		t.Errorf("kind's network is left with no cluster on it")
	}
}

// kindContainers lists the kind node containers whose name starts with
// prefix.
func kindContainers(t *testing.T, prefix string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-a", "--filter", "label=io.x-k8s.kind.cluster", "--format", "{{.Names}}").Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	var names []string
	for _, n := range strings.Fields(string(out)) {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	return names
}
