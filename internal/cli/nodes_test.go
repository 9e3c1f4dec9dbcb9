package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/internal/cli"
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
	admin := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	node, err := admin.CoreV1().Nodes().Get(ctx, "cli-0001", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Status.NodeInfo.BootID != m[2] {
		t.Errorf("Node cli-0001 bootID %s, want the new boot %s", node.Status.NodeInfo.BootID, m[2])
	}
	checkSimulatedNode(t, node)
	checkRefusesForeignNode(ctx, t, cp, admin)

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
	// The run deleted its Nodes at its end.
	for _, n := range []string{"cli-0000", "cli-0001"} {
		if _, err := admin.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{}); err == nil {
			t.Errorf("Node %s left after nodes run ended", n)
		}
	}
}

// checkSimulatedNode: a node of 'nodes run' is tainted NoSchedule and
// NoExecute and labelled simulated, with its run's label, after a reboot
// too.
func checkSimulatedNode(t *testing.T, node *corev1.Node) {
	t.Helper()
	for _, eff := range []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute} {
		if !slices.ContainsFunc(node.Spec.Taints, func(x corev1.Taint) bool { return x.Key == contract.SimulatedTaintKey && x.Effect == eff }) {
			t.Errorf("Node %s taints %v: no %s:%s", node.Name, node.Spec.Taints, contract.SimulatedTaintKey, eff)
		}
	}
	if node.Labels[contract.SimulatedLabel] != "true" || node.Labels[contract.RunLabel] == "" {
		t.Errorf("Node %s labels %v: want %s=true and a %s", node.Name, node.Labels, contract.SimulatedLabel, contract.RunLabel)
	}
}

// checkRefusesForeignNode: 'nodes run' whose names meet a Node bootproof
// did not create exits 2 naming it and leaves it as it was.
func checkRefusesForeignNode(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, admin kubernetes.Interface) {
	t.Helper()
	foreign := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-0000", Labels: map[string]string{"team": "a"}}}
	if _, err := admin.CoreV1().Nodes().Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := cli.Run(ctx, []string{"nodes", "run", "--kubeconfig", cp.Kubeconfig(), "--prefix", "worker-", "--timing", "fast",
		"--control-socket", filepath.Join(t.TempDir(), "foreign.sock")}, &out, &errb)
	if code != cli.ExitUsage || !strings.Contains(errb.String(), "worker-0000") || !strings.Contains(errb.String(), "not created by bootproof") {
		t.Errorf("nodes run over a foreign Node: exit %d, stderr %q; want %d naming worker-0000", code, errb.String(), cli.ExitUsage)
	}
	got, err := admin.CoreV1().Nodes().Get(ctx, "worker-0000", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Taints) != 0 || len(got.Status.Conditions) != 0 || got.Labels[contract.SimulatedLabel] != "" {
		t.Errorf("foreign Node changed: taints %v, conditions %v, labels %v", got.Spec.Taints, got.Status.Conditions, got.Labels)
	}
}
