package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/internal/cli"
	"github.com/bootproof/bootproof/reports"
	"github.com/bootproof/bootproof/scenarios"
)

func TestRunBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown subject", []string{"run", "--subject", "kmm"}, []string{"--subject", `"kmm"`, "bootid, legacy, external"}},
		{"unknown scenario", []string{"run", "--scenario", "no-such"}, []string{"--scenario", "no-such", "fast-reboot-0.5g"}},
		{"unknown timing", []string{"run", "--timing", "slow"}, []string{"--timing", "fast, kubelet-defaults"}},
		{"unknown cluster", []string{"run", "--cluster", "minikube"}, []string{"--cluster", "embedded, kind, kubeconfig"}},
		{"bad parallel", []string{"run", "--parallel", "0"}, []string{"--parallel", "1 or more"}},
		{"bad repeat", []string{"run", "--repeat", "0"}, []string{"invalid --repeat 0", "accepted: 1 to 100"}},
		{"too many repeats", []string{"run", "--repeat", "101"}, []string{"invalid --repeat 101", "accepted: 1 to 100"}},
		{"negative node cap", []string{"run", "--max-parallel-nodes", "-1"}, []string{"invalid --max-parallel-nodes -1", "accepted: 0 (no cap) or more"}},
		{"calibrate: negative node cap", []string{"calibrate", "--dir", "../../examples/calibration", "--max-parallel-nodes", "-5"}, []string{"invalid --max-parallel-nodes -5"}},
		{"bad scenario file", []string{"run", "--scenario-file", "../../scenarios/testdata/invalid-downtime.yaml"}, []string{"invalid-downtime.yaml:8", "actions[0].reboot.downtime"}},
		{"negative grace", []string{"run", "--grace-period=-1s"}, []string{"--grace-period", "at least 1s"}},
		{"zero grace period", []string{"run", "--grace-period", "0s"}, []string{"invalid --grace-period 0s", "at least 1s", "leave --grace-period out"}},
		{"zero grace period on an existing cluster", []string{"run", "--cluster", "kubeconfig", "--grace-period=0"}, []string{"invalid --grace-period 0s"}},
		{"short certificate validity", []string{"run", "--cert-validity", "10m"}, []string{`invalid --cert-validity "10m0s"`, "from 1h0m0s"}},
		{"missing subject file", []string{"run", "--subject-file", "testdata/no-such-subject.yaml"}, []string{"--subject-file", "no-such-subject.yaml", "no such file"}},
		{"bad subject file", []string{"run", "--subject-file", "../subject/testdata/invalid-expect.yaml"}, []string{"--subject-file", "invalid-expect.yaml:8", "expect.slow-reboot-*", `"maybe"`}},
		{"two subjects of one name", []string{"run", "--subject-file", "../subject/testdata/valid-deployment.yaml", "--subject-file", "../subject/testdata/valid-deployment.yaml"},
			[]string{"--subject-file", `subject name "my-operator" is taken by`}},
		{"scenario file named like a catalog scenario", []string{"run", "--scenario-file", "testdata/fast-reboot-0.5g-copy.yaml"},
			[]string{"--scenario-file", `"fast-reboot-0.5g" is taken by catalog/fast-reboot-0.5g.yaml`, "rename it"}},
		{"calibrate: unknown variant", []string{"calibrate", "--dir", "../../examples/calibration", "--variant", "slow"}, []string{`invalid --variant "slow"`, "boot-from-node", "refused-status-patches"}},
		{"calibrate: no such directory", []string{"calibrate", "--dir", "testdata/no-such-dir"}, []string{"--dir testdata/no-such-dir", "not a directory of calibration subject files"}},
		{"calibrate: a file without a calibration section", []string{"calibrate", "--dir", "testdata/not-calibration"}, []string{"--dir testdata/not-calibration", "plain.yaml has no calibration section"}},
		{"calibrate: bad repeat", []string{"calibrate", "--dir", "../../examples/calibration", "--repeat", "0"}, []string{"invalid --repeat 0", "accepted: 1 to 100"}},
		{"calibrate: unknown cluster", []string{"calibrate", "--dir", "../../examples/calibration", "--cluster", "kubeconfig"}, []string{`invalid --cluster "kubeconfig"`, "embedded (variants in-process) or kind (variants as Deployments)"}},
		{"calibrate: a kind flag on the embedded cluster", []string{"calibrate", "--dir", "../../examples/calibration", "--kind-image", "x:y"}, []string{"--kind-image applies only with --cluster kind"}},
		{"calibrate: nothing to compare with", []string{"calibrate", "--dir", "../../examples/calibration", "--compare-with", "testdata"}, []string{"--compare-with testdata", "calibration.json", "the report directory of an earlier 'bootproof calibrate'"}},
		{"kmm: unknown variant", []string{"kmm", "--variant", "slow"}, []string{"--variant", `"slow"`, "none, boot-from-node"}},
		{"vm cleanup of other domains", []string{"vm", "cleanup", "--prefix", "prod-"}, []string{"--prefix", `"prod-"`, "starting with bootproof-"}},
		{"image without agent", []string{"image", "build", "--agent", "/nonexistent/bootproof-agent"}, []string{"/nonexistent/bootproof-agent: not a file", "make build-libvirt"}},
		{"negative max-nodes", []string{"run", "--max-nodes", "-1"}, []string{"invalid --max-nodes -1", "accepted: 0 (no cap) or more"}},
		{"kind flag without kind", []string{"run", "--kind-image", "x"}, []string{"--kind-image applies only with --cluster kind", "cluster is embedded"}},
		{"kubeconfig with the embedded cluster", []string{"run", "--cluster", "embedded", "--kubeconfig", "x"}, []string{"--kubeconfig applies only with --cluster kubeconfig"}},
		{"node credentials on kind", []string{"run", "--cluster", "kind", "--node-credentials", "csr"}, []string{"--node-credentials applies only with --cluster kubeconfig", "cluster is kind"}},
		{"kubeconfig alone selects it", []string{"run", "--kubeconfig", "testdata/no-such-kubeconfig"}, []string{"--kubeconfig testdata/no-such-kubeconfig", "no such file"}},
		{"two documents in a subject file", []string{"list", "--subject-file", "testdata/two-subjects.yaml"}, []string{"--subject-file", "two-subjects.yaml:5", "a second YAML document"}},
		{"scenario file a directory", []string{"run", "--scenario-file", "testdata"}, []string{"--scenario-file", "testdata is a directory, not a regular file"}},
		{"cleanup: not a libvirt URI", []string{"cleanup", "--local-only", "--libvirt-uri", "::bad"}, []string{"--libvirt-uri", `"::bad"`, "qemu:///system"}},
		{"vm cleanup: not a libvirt URI", []string{"vm", "cleanup", "--libvirt-uri", "system"}, []string{"--libvirt-uri", `"system"`, "driver[+transport]://[host]/path"}},
		{"run: not a libvirt URI", []string{"run", "--nodes", "libvirt", "--libvirt-uri", "qemu:system", "--agent", "/dev/null"}, []string{"--nodes libvirt", `"qemu:system"`}},
		{"bad accelerator", []string{"run", "--nodes", "libvirt", "--accel", "hvf", "--agent", "/dev/null"}, []string{"--nodes libvirt", `"hvf"`, "auto, kvm, tcg"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := cli.Run(context.Background(), tc.args, &out, &errb); code != cli.ExitUsage {
				t.Errorf("exit %d, want %d; stderr %s", code, cli.ExitUsage, errb.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr %q lacks %q", errb.String(), w)
				}
			}
		})
	}
}

// TestRunKindWithoutContainerEngine: on a host where no container engine
// is found (PATH holds none here), kind cannot run; the command must exit
// 2 (a host not set up: nothing ran) and say why and what runs instead.
func TestRunKindWithoutContainerEngine(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), []string{"run", "--cluster", "kind", "--scenario", "fast-reboot-0.5g"}, &out, &errb)
	if code != cli.ExitUsage || !strings.Contains(errb.String(), "kind needs a container engine") || !strings.Contains(errb.String(), "make test") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}

func TestList(t *testing.T) {
	var out, errb bytes.Buffer
	if code := cli.Run(context.Background(), []string{"list"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, w := range []string{"NAME", "fast-reboot-0.5g", "bootid=pass legacy=fail", "reboot-storm"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("list lacks %q", w)
		}
	}
	// Scenario files are listed too, and subject files' expectations shown.
	out.Reset()
	if code := cli.Run(context.Background(), []string{"list", "--scenario-file", "../../scenarios/testdata/valid-full.yaml",
		"--subject-file", "../../examples/subjects/bootproof-legacy.yaml"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, w := range []string{"example-full", "bootproof-legacy=fail:reload", "bootproof-legacy=fail:no-extra-work"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("list lacks %q:\n%s", w, out.String())
		}
	}
}

// TestRunCatalogAgainstKubeconfigCluster runs the whole catalog with both
// subjects through 'bootproof run --cluster kubeconfig' against an
// embedded control plane started separately: the harness starts nothing
// there, nodes get system:node identities through CSRs, and every verdict
// must pass.
func TestRunCatalogAgainstKubeconfigCluster(t *testing.T) {
	t.Parallel()
	cp := cptest.Start(t, controlplane.Config{GracePeriod: 10 * time.Second, MonitorPeriod: time.Second})
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), []string{"run", "--cluster", "kubeconfig", "--kubeconfig", cp.Kubeconfig(),
		"--grace-period", "10s", "--node-credentials", "csr", "--parallel", "8", "--max-nodes", "10", "--report-dir", dir}, &out, &errb)
	res, err := reports.ReadResults(filepath.Join(dir, reports.ResultsFile))
	if err != nil {
		t.Fatalf("exit %d, no results: %v\nstdout:\n%s", code, err, out.String())
	}
	all, _ := scenarios.Catalog()
	if len(res.Cases) != 2*len(all) {
		t.Errorf("%d cases, want %d (catalog x bootid, legacy)", len(res.Cases), 2*len(all))
	}
	for _, c := range res.Cases {
		if c.Cluster != "kubeconfig" {
			t.Errorf("%s ran on cluster %q", reports.CaseName(c), c.Cluster)
		}
		if c.Verdict != scenarios.Pass {
			t.Errorf("%s: %s (expected %s, observed %s): %s", reports.CaseName(c), c.Verdict, c.Expected, c.Observed, c.Message)
		}
	}
	if code != 0 {
		t.Errorf("exit %d\nstdout:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "report: "+filepath.Join(dir, reports.HTMLFile)) {
		t.Errorf("stdout does not name the report: %s", out.String())
	}
	// Library logs go to the run log, whose path is printed, never to the
	// terminal between the progress lines.
	logPath := filepath.Join(dir, cli.RunLogFile)
	if !strings.Contains(out.String(), "logs: "+logPath) || !strings.Contains(errb.String(), logPath) {
		t.Errorf("the run log's path is not printed: stdout %s\nstderr %s", out.String(), errb.String())
	}
	if log, err := os.ReadFile(logPath); err != nil || !strings.Contains(string(log), `"msg"=`) {
		t.Errorf("run log %s: %v, %d bytes", logPath, err, len(log))
	}
	if strings.Contains(out.String()+errb.String(), `"msg"=`) {
		t.Errorf("a log line reached the terminal:\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
}
