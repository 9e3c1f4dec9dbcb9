package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/internal/cli"
	"github.com/bootproof/bootproof/kmm"
	"github.com/bootproof/bootproof/reports"
	"github.com/bootproof/bootproof/scenarios"
)

// raceCases are the scenarios the example subject files must run, not
// skip: the races where operators break, a fast reboot and a restart
// without a reboot.
var raceCases = []string{"fast-reboot-0.5g", "reboot-after-load-before-sync", "double-reboot", "subject-down-during-reboot", "kubelet-restart-no-reboot"}

// subjectRun is one 'bootproof run' of runSubjects.
type subjectRun struct {
	code int
	res  scenarios.Results
	// dir is the report directory, tmp the run's TMPDIR (its temporary
	// directories, and only its, are made there).
	dir, tmp string
}

// runSubjects runs 'bootproof run --cluster kubeconfig' against a
// separately started embedded control plane with the subject files and
// scenarios given, in a process of its own (this test binary as the
// bootproof command, also standing in for ${BOOTPROOF}) with a TMPDIR of
// its own, so that tests using it can run in parallel.
func runSubjects(t *testing.T, files, scenarioNames []string, extra ...string) subjectRun {
	t.Helper()
	cp := cptest.Start(t, controlplane.Config{GracePeriod: 10 * time.Second, MonitorPeriod: time.Second})
	return runSubjectsOn(t, cp, files, scenarioNames, extra...)
}

// runSubjectsOn is runSubjects on a control plane the test started.
func runSubjectsOn(t *testing.T, cp *controlplane.ControlPlane, files, scenarioNames []string, extra ...string) subjectRun {
	t.Helper()
	r := subjectRun{dir: t.TempDir(), tmp: t.TempDir()}
	args := []string{"run", "--cluster", "kubeconfig", "--kubeconfig", cp.Kubeconfig(), "--grace-period", "10s",
		"--parallel", "4", "--report-dir", r.dir}
	for _, f := range files {
		args = append(args, "--subject-file", f)
	}
	for _, s := range scenarioNames {
		args = append(args, "--scenario", s)
	}
	args = append(args, extra...)
	cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
	cmd.Env = append(os.Environ(), envRunCLI+"=1", "BOOTPROOF="+os.Args[0], "TMPDIR="+r.tmp)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); cmd.ProcessState == nil {
		t.Fatalf("bootproof run did not start: %v", err)
	}
	r.code = cmd.ProcessState.ExitCode()
	var err error
	if r.res, err = reports.ReadResults(filepath.Join(r.dir, reports.ResultsFile)); err != nil {
		t.Fatalf("exit %d, no results: %v\nstdout:\n%s\nstderr:\n%s", r.code, err, out.String(), errb.String())
	}
	t.Logf("stdout:\n%s", out.String())
	return r
}

func failedAssertions(c scenarios.CaseResult) []string {
	var out []string
	for _, a := range c.Assertions {
		if !a.OK {
			out = append(out, a.Name)
		}
	}
	return out
}

func end(c scenarios.CaseResult) time.Time {
	return c.StartedAt.Add(time.Duration(c.DurationMS) * time.Millisecond)
}

func overlap(a, b scenarios.CaseResult) bool {
	return a.StartedAt.Before(end(b)) && b.StartedAt.Before(end(a))
}

// TestExampleSubjectFilesRunTheRaceCases runs bootproof's own reconciler
// through the exec path with the two example subject files: the race
// cases run (none skipped), bootproof-bootid passes them all,
// bootproof-legacy is seen failing the fast reboot (reload) and the
// restart control (no-extra-work), and cases that pause the shared
// process ran alone.
func TestExampleSubjectFilesRunTheRaceCases(t *testing.T) {
	t.Parallel()
	r := runSubjects(t, []string{"../../examples/subjects/bootproof-bootid.yaml", "../../examples/subjects/bootproof-legacy.yaml"}, raceCases)
	checkExampleRaceCases(t, r)
}

// checkExampleRaceCases checks a run of the two example subject files on
// raceCases (TestExampleSubjectFilesRunTheRaceCases).
func checkExampleRaceCases(t *testing.T, r subjectRun) {
	t.Helper()
	code, res, dir := r.code, r.res, r.dir
	if len(res.Cases) != 2*len(raceCases) {
		t.Fatalf("%d cases, want %d", len(res.Cases), 2*len(raceCases))
	}
	bySubject := map[string][]scenarios.CaseResult{}
	for _, c := range res.Cases {
		bySubject[c.Subject] = append(bySubject[c.Subject], c)
		if c.Verdict != scenarios.Pass {
			t.Errorf("%s: %s (expected %s, observed %s): %s", reports.CaseName(c), c.Verdict, reports.Expected(c), c.Observed, c.Message)
		}
		if c.Cluster != "kubeconfig" {
			t.Errorf("%s ran on %s", reports.CaseName(c), c.Cluster)
		}
	}
	for _, c := range bySubject["bootproof-bootid"] {
		if c.Observed != scenarios.Pass {
			t.Errorf("bootproof-bootid %s observed %s: %s", c.Scenario, c.Observed, c.Message)
		}
	}
	for _, c := range bySubject["bootproof-legacy"] {
		want := []string{scenarios.AssertReload}
		if c.Scenario == "kubelet-restart-no-reboot" {
			want = []string{scenarios.AssertNoExtraWork}
		}
		if got := failedAssertions(c); c.Observed != scenarios.Fail || !slices.Contains(got, want[0]) {
			t.Errorf("bootproof-legacy %s: observed %s through %v, want fail through %v", c.Scenario, c.Observed, got, want)
		}
	}
	// Cases that pause the shared process ran alone, and the two subjects'
	// cases never overlapped (each would reconcile the other's objects).
	for _, c := range res.Cases {
		pauses := c.Scenario != "fast-reboot-0.5g" && c.Scenario != "kubelet-restart-no-reboot"
		noted := slices.ContainsFunc(c.Notes, func(n string) bool { return strings.Contains(n, "ran alone") })
		if pauses != noted {
			t.Errorf("%s: pauses the subject %v, notes %q", reports.CaseName(c), pauses, c.Notes)
		}
		for _, o := range res.Cases {
			if o.Scenario == c.Scenario && o.Subject == c.Subject || !overlap(c, o) {
				continue
			}
			if o.Subject != c.Subject || pauses {
				t.Errorf("%s overlapped %s", reports.CaseName(c), reports.CaseName(o))
			}
		}
	}
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	md, _ := os.ReadFile(filepath.Join(dir, reports.SummaryFile))
	if !strings.Contains(string(md), "| scenario | bootproof-bootid | bootproof-legacy |") {
		t.Errorf("summary.md lacks the conformance matrix:\n%s", md)
	}
	for _, name := range []string{"bootproof-bootid", "bootproof-legacy"} {
		log, err := os.ReadFile(filepath.Join(dir, "subjects", name+".log"))
		if err != nil {
			t.Errorf("subject log: %v", err)
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(log)), "\n")
		if n := strings.Count(string(log), "stopped by the harness"); n != 4 || !strings.Contains(lines[len(lines)-1], "stopped by the harness") {
			t.Errorf("%s: %d stops (want 3 pauses and the final stop), last line %q", name, n, lines[len(lines)-1])
		}
		if strings.Contains(string(log), "on its own") {
			t.Errorf("%s exited on its own:\n%s", name, log)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(r.tmp, "bootproof-*")); len(left) > 0 {
		t.Errorf("temporary directories left behind: %v", left)
	}
}

// writeFile writes a file in a temporary directory and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// An exec subject whose process exits by itself in the middle of a case
// fails it through subject-runs, naming the subject and quoting its log:
// an operator never stops on its own. One killed from outside (a signal
// the harness did not send) makes the case an error instead: that is not
// the operator's defect, as far as anyone can tell.
func TestSubjectStoppingMidCase(t *testing.T) {
	t.Parallel()
	crd, err := filepath.Abs("../../kmm/config/crd")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, stop    string
		wantObserved  string
		wantVerdict   string
		wantCode      int
		wantInMessage []string
	}{
		{"exits by itself", `echo "panic: simulated crash in reconcile" >&2; exit 3`, scenarios.Fail, scenarios.Pass, cli.ExitOK,
			[]string{"failed as expected (subject-runs: at ", "subject crasher stopped during the case", "exit status 3", "panic: simulated crash in reconcile"}},
		{"killed from outside", `echo "about to be killed" >&2; kill -KILL $$`, scenarios.Error, scenarios.Error, cli.ExitInfra,
			[]string{"subject fault: subject crasher stopped during the case", "signal: killed", "about to be killed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := writeFile(t, "crasher.yaml", `apiVersion: bootproof.dev/v1alpha1
kind: Subject
name: crasher
exec:
  command: [sh, -c, 'echo "operator starting"; sleep 4; `+tc.stop+`']
crds: [`+crd+`]
expect:
  "*": fail:subject-runs
`)
			r := runSubjects(t, []string{f}, []string{"fast-reboot-0.5g"})
			code, res := r.code, r.res
			if len(res.Cases) != 1 {
				t.Fatalf("%d cases", len(res.Cases))
			}
			c := res.Cases[0]
			for _, want := range tc.wantInMessage {
				if !strings.Contains(c.Message, want) {
					t.Errorf("message lacks %q: %s", want, c.Message)
				}
			}
			if c.Verdict != tc.wantVerdict || c.Observed != tc.wantObserved {
				t.Errorf("verdict %s, observed %s; want %s, %s", c.Verdict, c.Observed, tc.wantVerdict, tc.wantObserved)
			}
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d", code, tc.wantCode)
			}
		})
	}
}

// An operator whose API predates boot IDs (its CRD has no
// status.modules[].bootId; here bootproof's reconciler with the legacy
// detector on such a CRD) passes a slow reboot it reloads after, judged on
// which modules its status lists, and still fails the fast reboot it
// misses.
func TestSubjectWithoutBootIDs(t *testing.T) {
	t.Parallel()
	crd, err := filepath.Abs("../testdata/crds/upstream-pre-bootid")
	if err != nil {
		t.Fatal(err)
	}
	f := writeFile(t, "old-kmm.yaml", `apiVersion: bootproof.dev/v1alpha1
kind: Subject
name: kmm-before-boot-ids
exec:
  command: ["${BOOTPROOF}", kmm, --detector=legacy, --leader-elect=false]
crds: [`+crd+`]
expect:
  slow-reboot-1.5g: pass
  fast-reboot-0.5g: fail:reload
`)
	r := runSubjects(t, []string{f}, []string{"slow-reboot-1.5g", "fast-reboot-0.5g"})
	code, res := r.code, r.res
	for _, c := range res.Cases {
		if c.Verdict != scenarios.Pass {
			t.Errorf("%s: %s (expected %s, observed %s): %s", reports.CaseName(c), c.Verdict, reports.Expected(c), c.Observed, c.Message)
		}
		switch c.Scenario {
		case "slow-reboot-1.5g":
			ok := slices.ContainsFunc(c.Assertions, func(a scenarios.AssertionResult) bool {
				return a.Name == scenarios.AssertConsistency && a.OK &&
					strings.Contains(a.Message, "boot part not judged: the NodeModulesConfig CRD has no status.modules[].bootId") &&
					strings.HasPrefix(a.NotJudged, "boot part not judged: the NodeModulesConfig CRD")
			})
			if c.Observed != scenarios.Pass || !ok {
				t.Errorf("slow-reboot-1.5g observed %s; assertions %+v", c.Observed, c.Assertions)
			}
		case "fast-reboot-0.5g":
			if got := failedAssertions(c); c.Observed != scenarios.Fail || !slices.Contains(got, scenarios.AssertReload) {
				t.Errorf("fast-reboot-0.5g observed %s through %v, want fail through reload", c.Observed, got)
			}
		}
	}
	if len(res.Cases) != 2 || code != 0 {
		t.Errorf("%d cases, exit %d", len(res.Cases), code)
	}
}

// 'bootproof kmm' without --install stops with a clear error when the
// cluster does not serve the NodeModulesConfig API.
func TestKMMRequiresItsCRD(t *testing.T) {
	cp := cptest.Start(t, controlplane.Config{GracePeriod: 10 * time.Second, MonitorPeriod: time.Second})
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), []string{"kmm", "--kubeconfig", cp.Kubeconfig(), "--leader-elect=false"}, &out, &errb)
	if code != cli.ExitUsage || !strings.Contains(errb.String(), "does not serve kmm.sigs.x-k8s.io/v1beta1 nodemodulesconfigs") || !strings.Contains(errb.String(), "--install") {
		t.Errorf("exit %d, stderr %s", code, errb.String())
	}
}

// An operator that records the node's boot ID at sync time rather than
// the boot its worker ran in passes a plain fast reboot (taken after it
// synced, testdata/reboot-after-sync.yaml) and fails only
// reboot-after-load-before-sync: running the race case for exec subjects
// is what keeps bootproof from certifying it.
func TestRaceCaseCatchesSyncTimeBootRecording(t *testing.T) {
	t.Parallel()
	r := runSubjects(t, []string{"testdata/sync-time-boot.yaml"}, []string{"reboot-after-sync", "reboot-after-load-before-sync"},
		"--scenario-file", "testdata/reboot-after-sync.yaml")
	code, res := r.code, r.res
	for _, c := range res.Cases {
		if c.Verdict != scenarios.Pass {
			t.Errorf("%s: %s (expected %s, observed %s): %s", reports.CaseName(c), c.Verdict, reports.Expected(c), c.Observed, c.Message)
		}
		want := scenarios.Pass
		if c.Scenario == "reboot-after-load-before-sync" {
			want = scenarios.Fail
		}
		if c.Observed != want {
			t.Errorf("%s observed %s, want %s", c.Scenario, c.Observed, want)
		}
	}
	if len(res.Cases) != 2 || code != 0 {
		t.Errorf("%d cases, exit %d", len(res.Cases), code)
	}
}

// installForeignCRD creates the CRD of path on cp as another installer
// would (no bootproof label, another field manager) and waits until it
// is established; it returns the object as created.
func installForeignCRD(t *testing.T, cp *controlplane.ControlPlane, path string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kmm.DecodeObjects(data, path)
	if err != nil || len(objs) != 1 {
		t.Fatalf("%s: %d objects, %v", path, len(objs), err)
	}
	c, err := client.New(cp.RESTConfig(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	crd := objs[0]
	if err := c.Create(t.Context(), crd, client.FieldOwner("kmm-operator")); err != nil {
		t.Fatal(err)
	}
	if err := kmm.WaitEstablished(t.Context(), c, crd.GetName(), time.Minute); err != nil {
		t.Fatal(err)
	}
	return crd
}

// TestExampleSubjectFilesOnUpstreamCRD runs the README's "Judge your
// operator" flow on a cluster that already holds upstream KMM's
// NodeModulesConfig CRD (de3f8c9's shape: status.modules[] has bootId and
// no lastTransitionTime): the CRD is used as it is and left unchanged,
// bootproof-bootid passes every race case and bootproof-legacy, whose
// load times the schema prunes and which keeps them in an annotation
// instead, still fails each through the right assertion.
func TestExampleSubjectFilesOnUpstreamCRD(t *testing.T) {
	t.Parallel()
	cp := cptest.Start(t, controlplane.Config{GracePeriod: 10 * time.Second, MonitorPeriod: time.Second})
	crd := installForeignCRD(t, cp, "../testdata/crds/upstream/nodemodulesconfigs.yaml")
	r := runSubjectsOn(t, cp, []string{"../../examples/subjects/bootproof-bootid.yaml", "../../examples/subjects/bootproof-legacy.yaml"}, raceCases)
	checkExampleRaceCases(t, r)

	c, err := client.New(cp.RESTConfig(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	after := &unstructured.Unstructured{}
	after.SetGroupVersionKind(crd.GroupVersionKind())
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(crd), after); err != nil {
		t.Fatalf("upstream's CRD after the run: %v", err)
	}
	if after.GetUID() != crd.GetUID() || after.GetGeneration() != crd.GetGeneration() || len(after.GetLabels()) != 0 {
		t.Errorf("upstream's CRD changed: uid %s→%s, generation %d→%d, labels %v", crd.GetUID(), after.GetUID(), crd.GetGeneration(), after.GetGeneration(), after.GetLabels())
	}
	logs := map[string]string{}
	for _, name := range []string{"bootproof-bootid", "bootproof-legacy"} {
		data, _ := os.ReadFile(filepath.Join(r.dir, "subjects", name+".log"))
		logs[name] = string(data)
	}
	if !strings.Contains(logs["bootproof-legacy"], "keeps each load's time in an annotation") {
		t.Errorf("bootproof-legacy's log does not say where it keeps its load times:\n%s", logs["bootproof-legacy"])
	}
	if !strings.Contains(logs["bootproof-bootid"], `"keepsBootID"=true`) {
		t.Errorf("bootproof-bootid's log does not show its schema probe:\n%s", logs["bootproof-bootid"])
	}
	runLog, _ := os.ReadFile(filepath.Join(r.dir, "bootproof.log"))
	for _, want := range []string{"used as it is", "status.modules[].lastTransitionTime"} {
		if !strings.Contains(string(runLog), want) {
			t.Errorf("bootproof.log lacks %q", want)
		}
	}
}

// A subject file whose CRD the cluster's lacks fields of is refused,
// naming the fields; nothing is changed.
func TestSubjectCRDLackingFields(t *testing.T) {
	t.Parallel()
	cp := cptest.Start(t, controlplane.Config{GracePeriod: 10 * time.Second, MonitorPeriod: time.Second})
	installForeignCRD(t, cp, "../testdata/crds/upstream-pre-bootid/nodemodulesconfigs.yaml")
	r := runSubjectsOn(t, cp, []string{"../../examples/subjects/bootproof-bootid.yaml"}, []string{"fast-reboot-0.5g"})
	if len(r.res.Cases) != 1 {
		t.Fatalf("%d cases", len(r.res.Cases))
	}
	c := r.res.Cases[0]
	for _, want := range []string{"crds", "exists, bootproof did not create it", "lacks v1beta1: status.modules[].bootId", "crdOptionalFields"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("message lacks %q: %s", want, c.Message)
		}
	}
	if c.Observed != scenarios.Error || r.code == 0 {
		t.Errorf("observed %s, exit %d; want an error", c.Observed, r.code)
	}
}

// 'bootproof kmm' with the boot-ID detector on a cluster whose schema
// prunes status.modules[].bootId reconciles nothing (it could not tell a
// reboot there) and says why in its log.
func TestKMMRefusesWhereBootIDsArePruned(t *testing.T) {
	t.Parallel()
	cp := cptest.Start(t, controlplane.Config{GracePeriod: 10 * time.Second, MonitorPeriod: time.Second})
	installForeignCRD(t, cp, "../testdata/crds/upstream-pre-bootid/nodemodulesconfigs.yaml")
	b := scenarios.NMCBuilder{Namespace: "default", KernelVersion: "6.1.0-28-amd64"}
	u, err := b.Build("node-a", []scenarios.Module{{Name: "dummy", ModuleName: "dummy"}}).Unstructured()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cp.RESTConfig(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "kmm", "--kubeconfig", cp.Kubeconfig(), "--leader-elect=false", "--detector=bootid")
	cmd.Env = append(os.Environ(), envRunCLI+"=1")
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	const want = "the cluster's NodeModulesConfig schema prunes status.modules[].bootId"
	found := make(chan bool, 1)
	var logged []string
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logged = append(logged, sc.Text())
			if strings.Contains(sc.Text(), want) {
				found <- true
				return
			}
		}
		found <- false
	}()
	select {
	case ok := <-found:
		if !ok {
			t.Fatalf("kmm exited without logging %q:\n%s", want, strings.Join(logged, "\n"))
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("kmm did not log %q within 2 min", want)
	}
	pods := &corev1.PodList{}
	if err := c.List(t.Context(), pods, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("%d worker pods created on a schema the detector cannot work on", len(pods.Items))
	}
}
