package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/vmprovision/vmtest"
)

// vmTestEnv gates the tests that boot VMs.
const vmTestEnv = vmtest.EnvVMTest

// TestRunKilledLeavesNoVM SIGKILLs 'bootproof run --nodes libvirt' while
// its VM runs a case: libvirt stops the guest when the run's connection
// goes (nothing keeps reboot-looping), and 'bootproof cleanup' undefines
// the domain and removes the run's temporary directories.
func TestRunKilledLeavesNoVM(t *testing.T) {
	if os.Getenv(vmTestEnv) == "" {
		t.Skipf("boots a libvirt VM: set %s=1 (needs libvirtd and virtlogd running, qemu-system-x86_64, socat, the guest %s prepares, the control-plane binaries)", vmTestEnv, vmtest.PrepareCommand)
	}
	cptest.RequireBinaries(t)
	// The guest 'make guest-image' prepared: the run finds its kernel and
	// image cached and reaches its case at once.
	g := vmtest.Prepared(t)
	agent, cache := g.Agent, g.Cache
	before := map[string]bool{}
	for _, d := range bootproofDomains(t) {
		before[d.name] = true
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	report := filepath.Join(cache, "vm", "kill-test-report") // QEMU's user reads the VM files under it
	_ = os.RemoveAll(report)
	t.Cleanup(func() { _ = os.RemoveAll(report) })
	cmd, first, stderr := startCLI(t, "run", "--nodes", "libvirt", "--scenario", "fast-reboot-0.5g", "--subject", "bootid",
		"--agent", agent, "--cache-dir", cache, "--report-dir", report)
	if !strings.Contains(first, "running") {
		t.Fatalf("first line %q, want a case running; stderr:\n%s", first, stderr)
	}
	var mine []string
	deadline := time.Now().Add(5 * time.Minute)
	for len(mine) == 0 {
		for _, d := range bootproofDomains(t) {
			if !before[d.name] && d.running {
				mine = append(mine, d.name)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no VM of the run is running after 5 minutes; stderr:\n%s", stderr)
		}
		time.Sleep(time.Second)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline = time.Now().Add(time.Minute)
	for running := runningOf(t, mine); len(running) > 0; running = runningOf(t, mine) {
		if time.Now().After(deadline) {
			t.Fatalf("a minute after SIGKILL these VMs still run: %v", running)
		}
		time.Sleep(200 * time.Millisecond)
	}
	out := runCLI(t, 0, "cleanup", "--local-only", "--libvirt-uri", "qemu:///system")
	for _, d := range bootproofDomains(t) {
		for _, m := range mine {
			if d.name == m {
				t.Errorf("domain %s is still defined after cleanup:\n%s", m, out)
			}
		}
	}
	if rest, _ := filepath.Glob(filepath.Join(tmp, "*")); len(rest) > 0 {
		t.Errorf("left in the temporary directory: %v", rest)
	}
	if left := processesUnder(t, tmp); len(left) > 0 {
		t.Errorf("still running: %v", left)
	}
}

type domain struct {
	name    string
	running bool
}

// bootproofDomains lists the libvirt domains named bootproof-*.
func bootproofDomains(t *testing.T) []domain {
	t.Helper()
	all, err := exec.Command("virsh", "-c", "qemu:///system", "list", "--all", "--name").Output()
	if err != nil {
		t.Fatalf("virsh list: %v", err)
	}
	running, err := exec.Command("virsh", "-c", "qemu:///system", "list", "--name").Output()
	if err != nil {
		t.Fatalf("virsh list: %v", err)
	}
	var out []domain
	for _, n := range strings.Fields(string(all)) {
		if strings.HasPrefix(n, "bootproof-") {
			out = append(out, domain{name: n, running: strings.Contains("\n"+string(running), "\n"+n+"\n")})
		}
	}
	return out
}

// runningOf returns those of names that run.
func runningOf(t *testing.T, names []string) []string {
	var out []string
	for _, d := range bootproofDomains(t) {
		for _, n := range names {
			if d.name == n && d.running {
				out = append(out, n)
			}
		}
	}
	return out
}
