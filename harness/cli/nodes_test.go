package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/bootproof/bootproof/harness/cli"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
)

// TestNodesRunAndReboot runs 'bootproof nodes run' as a process against an
// embedded control plane, reboots one node through the control socket and
// checks the new boot ID in the API, then stops the fleet with SIGINT.
func TestNodesRunAndReboot(t *testing.T) {
	cp := cptest.Start(t, controlplane.Config{GracePeriod: 8 * time.Second, MonitorPeriod: time.Second})
	sock := filepath.Join(t.TempDir(), "nodes.sock")
	cmd, first, stderr := startCLI(t, "nodes", "run", "--kubeconfig", cp.Kubeconfig(), "--count", "2", "--prefix", "cli-",
		"--timing", "fast", "--control-socket", sock)
	if !strings.Contains(first, "2 simulated nodes ready") {
		t.Fatalf("first line %q", first)
	}

	ctx := context.Background()
	var out, errb bytes.Buffer
	if code := cli.Run(ctx, []string{"nodes", "reboot", "cli-0001", "--downtime", "1s", "--control-socket", sock}, &out, &errb); code != 0 {
		t.Fatalf("nodes reboot: exit %d: %s", code, errb.String())
	}
	m := regexp.MustCompile(`boot (\S+) -> (\S+),`).FindStringSubmatch(out.String())
	if m == nil || m[1] == m[2] {
		t.Fatalf("nodes reboot output %q: want a boot ID change", out.String())
	}
	node, err := kubernetes.NewForConfigOrDie(cp.RESTConfig()).CoreV1().Nodes().Get(ctx, "cli-0001", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Status.NodeInfo.BootID != m[2] {
		t.Errorf("Node cli-0001 bootID %s, want the new boot %s", node.Status.NodeInfo.BootID, m[2])
	}

	errb.Reset()
	if code := cli.Run(ctx, []string{"nodes", "reboot", "cli-9999", "--downtime", "1s", "--control-socket", sock}, &out, &errb); code != cli.ExitInfra || !strings.Contains(errb.String(), `no node "cli-9999"`) {
		t.Errorf("reboot of an unknown node: exit %d, stderr %q", code, errb.String())
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("nodes run after SIGINT: %v; stderr:\n%s", err, stderr.String())
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("control socket left behind (err %v)", err)
	}
}
