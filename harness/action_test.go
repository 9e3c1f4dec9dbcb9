package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// actionMeta is what TestActionMetadata reads of action.yml.
type actionMeta struct {
	Name   string `json:"name"`
	Inputs map[string]struct {
		Description string `json:"description"`
		Required    bool   `json:"required"`
		Default     string `json:"default"`
	} `json:"inputs"`
	Outputs map[string]struct {
		Value string `json:"value"`
	} `json:"outputs"`
	Runs struct {
		Using string `json:"using"`
		Steps []struct {
			ID    string            `json:"id"`
			If    string            `json:"if"`
			Uses  string            `json:"uses"`
			Run   string            `json:"run"`
			Shell string            `json:"shell"`
			Env   map[string]string `json:"env"`
			With  map[string]string `json:"with"`
		} `json:"steps"`
	} `json:"runs"`
}

// TestActionMetadata checks the reusable action (action.yml): a composite
// action whose shell steps only call hack/action.sh, whose actions are
// pinned, whose every input is described and used (and every input it
// uses declared), that builds and runs bootproof and uploads the report
// even when the run fails.
func TestActionMetadata(t *testing.T) {
	data, err := os.ReadFile("../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var a actionMeta
	if err := yaml.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	if a.Runs.Using != "composite" || a.Name == "" {
		t.Fatalf("action %q runs %q, want a composite action", a.Name, a.Runs.Using)
	}
	if in, ok := a.Inputs["subject-file"]; !ok || !in.Required {
		t.Error("input subject-file is missing or not required")
	}
	if a.Inputs["cluster"].Default != "embedded" {
		t.Errorf("input cluster defaults to %q, want embedded", a.Inputs["cluster"].Default)
	}
	for name, in := range a.Inputs {
		if in.Description == "" {
			t.Errorf("input %s has no description", name)
		}
		if !strings.Contains(string(data), "inputs."+name+" ") && !strings.Contains(string(data), "inputs."+name+"}") {
			t.Errorf("input %s is used by no step", name)
		}
	}
	for _, m := range regexp.MustCompile(`inputs\.([a-z-]+)`).FindAllStringSubmatch(string(data), -1) {
		if _, ok := a.Inputs[m[1]]; !ok {
			t.Errorf("a step uses inputs.%s, which is not declared", m[1])
		}
	}
	var calls []string
	scriptRE := regexp.MustCompile(`^bash "\$GITHUB_ACTION_PATH/hack/action.sh" (cache-key|install|run)$`)
	uploads := 0
	for i, s := range a.Runs.Steps {
		switch {
		case s.Run != "":
			m := scriptRE.FindStringSubmatch(strings.TrimSpace(s.Run))
			if m == nil || s.Shell != "bash" {
				t.Errorf("step %d runs %q (shell %q): want bash calling hack/action.sh, where the logic is tested", i, s.Run, s.Shell)
				continue
			}
			calls = append(calls, m[1])
		case strings.HasPrefix(s.Uses, "actions/upload-artifact@"):
			uploads++
			if s.If != "always()" || s.With["path"] != "${{ inputs.report-dir }}" {
				t.Errorf("the upload step (if %q, path %q) must upload the report directory even when the run fails", s.If, s.With["path"])
			}
		}
		if s.Uses != "" && !regexp.MustCompile(`@v\d+\.\d+\.\d+$`).MatchString(s.Uses) {
			t.Errorf("step %d uses %s without a pinned version", i, s.Uses)
		}
	}
	if !slices.Equal(calls, []string{"cache-key", "install", "run"}) || uploads != 1 {
		t.Errorf("script steps %v and %d uploads, want cache-key, install, run, then one upload", calls, uploads)
	}
	for _, o := range []string{"exit-code", "report-dir", "junit"} {
		if a.Outputs[o].Value != "${{ steps.run.outputs."+o+" }}" {
			t.Errorf("output %s = %q, want the run step's", o, a.Outputs[o].Value)
		}
	}
	// The script reads its inputs from these variables.
	script, err := os.ReadFile("../hack/action.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range a.Runs.Steps {
		for v := range s.Env {
			if !strings.Contains(string(script), v) {
				t.Errorf("the action sets %s, which hack/action.sh does not read", v)
			}
		}
	}
}

// stubBootproof stands in for bootproof in TestActionScript: it records
// its arguments and, unless STUB_NO_REPORT is set, writes a report into
// --report-dir; it exits STUB_EXIT.
const stubBootproof = `#!/usr/bin/env bash
printf '%s\n' "$@" > "$STUB_ARGS"
dir=""
while [ $# -gt 0 ]; do [ "$1" = --report-dir ] && dir="$2"; shift; done
if [ -z "${STUB_NO_REPORT:-}" ]; then
  mkdir -p "$dir" && echo '<testsuites/>' > "$dir/junit.xml" && echo '## bootproof' > "$dir/summary.md"
fi
exit "${STUB_EXIT:-0}"
`

// actionEnv runs hack/action.sh in a workspace of its own.
type actionEnv struct {
	t                               *testing.T
	work, bin, stub, args, out, sum string
	env                             []string
}

func newActionEnv(t *testing.T) *actionEnv {
	t.Helper()
	root := t.TempDir()
	e := &actionEnv{t: t, work: filepath.Join(root, "work"), bin: filepath.Join(root, "bin"), stub: filepath.Join(root, "stub", "bootproof"),
		args: filepath.Join(root, "args"), out: filepath.Join(root, "github-output"), sum: filepath.Join(root, "step-summary.md")}
	for _, d := range []string{e.work, filepath.Dir(e.stub), filepath.Join(e.work, "hack")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(e.stub, []byte(stubBootproof), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.work, "hack", "subject.yaml"), []byte("apiVersion: bootproof.dev/v1alpha1\nkind: Subject\nname: my-operator\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.env = append(os.Environ(), "BIN_DIR="+e.bin, "STUB_ARGS="+e.args, "GITHUB_OUTPUT="+e.out, "GITHUB_STEP_SUMMARY="+e.sum,
		"BOOTPROOF_BINARY="+e.stub, "SUBJECT_FILE=hack/subject.yaml", "KUBECONFIG=")
	return e
}

// run runs 'hack/action.sh cmd' in the workspace; it returns the exit
// code and the combined output.
func (e *actionEnv) run(cmd string, extra ...string) (int, string) {
	script, err := filepath.Abs("../hack/action.sh")
	if err != nil {
		e.t.Fatal(err)
	}
	c := exec.Command("bash", script, cmd)
	c.Dir = e.work
	c.Env = append(append([]string{}, e.env...), extra...)
	out, err := c.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return code, string(out)
}

func (e *actionEnv) read(p string) string {
	data, _ := os.ReadFile(p)
	return string(data)
}

// TestActionScript runs hack/action.sh as the action does, over a stub
// bootproof: install puts the given binary in place (and builds the
// control plane only for the embedded cluster), run passes the inputs as
// flags, writes the step outputs, keeps bootproof's exit code, notes a
// missing report in the job summary, and refuses bad inputs with exit 2.
func TestActionScript(t *testing.T) {
	e := newActionEnv(t)
	if code, out := e.run("install", "CLUSTER=kind"); code != 0 || !strings.Contains(out, "installed "+e.stub) {
		t.Fatalf("install: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(e.bin, "bootproof")); err != nil {
		t.Fatalf("install left no bin/bootproof: %v", err)
	}
	if code, out := e.run("cache-key"); code != 0 || !regexp.MustCompile(`(?m)^key=bootproof-controlplane-\S+-[0-9a-f]{32}$`).MatchString(e.read(e.out)) {
		t.Errorf("cache-key: exit %d, outputs %q\n%s", code, e.read(e.out), out)
	}

	tests := []struct {
		name  string
		env   []string
		code  int
		args  []string // in order, among the arguments
		out   []string // in the step outputs
		noted bool     // a note in the job summary
	}{
		{"embedded, passed", []string{"CLUSTER=embedded"}, 0,
			[]string{"run", "--cluster", "embedded", "--subject-file", "hack/subject.yaml", "--report-dir", "bootproof-report", "--bin-dir", e.bin},
			[]string{"exit-code=0", "report-dir=bootproof-report", "junit=bootproof-report/junit.xml"}, false},
		{"kubeconfig, failed verdict", []string{"CLUSTER=kubeconfig", "KUBECONFIG_PATH=/k/config", "GRACE_PERIOD=40s", "REPORT_DIR=out/r",
			"RUN_ARGS=--scenario fast-reboot-0.5g  --parallel 4", "STUB_EXIT=1"}, 1,
			[]string{"--cluster", "kubeconfig", "--report-dir", "out/r", "--kubeconfig", "/k/config", "--grace-period", "40s", "--scenario", "fast-reboot-0.5g", "--parallel", "4"},
			[]string{"exit-code=1", "junit=out/r/junit.xml"}, false},
		{"kubeconfig from $KUBECONFIG", []string{"CLUSTER=kubeconfig", "KUBECONFIG=/env/kubeconfig", "REPORT_DIR=r2"}, 0,
			[]string{"--kubeconfig", "/env/kubeconfig"}, []string{"exit-code=0"}, false},
		{"no report", []string{"CLUSTER=kind", "REPORT_DIR=r3", "STUB_EXIT=2", "STUB_NO_REPORT=1"}, 2,
			[]string{"--cluster", "kind"}, []string{"exit-code=2"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(e.out)
			_ = os.Remove(e.sum)
			code, out := e.run("run", tc.env...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, out)
			}
			got := strings.Split(strings.TrimSpace(e.read(e.args)), "\n")
			if !inOrder(got, tc.args) {
				t.Errorf("bootproof %q, want %q in this order", got, tc.args)
			}
			if tc.name != "embedded, passed" && slices.Contains(got, "--bin-dir") {
				t.Errorf("--bin-dir given off the embedded cluster: %q", got)
			}
			for _, o := range tc.out {
				if !strings.Contains(e.read(e.out), o+"\n") {
					t.Errorf("step outputs %q lack %q", e.read(e.out), o)
				}
			}
			if noted := strings.Contains(e.read(e.sum), "bootproof wrote no report"); noted != tc.noted {
				t.Errorf("job summary %q", e.read(e.sum))
			}
		})
	}

	for name, tc := range map[string]struct {
		env  []string
		want string
	}{
		"unknown cluster":      {[]string{"CLUSTER=minikube"}, `cluster "minikube": accepted: embedded, kind, kubeconfig`},
		"no subject file":      {[]string{"SUBJECT_FILE="}, "subject-file is required"},
		"missing subject file": {[]string{"SUBJECT_FILE=nope.yaml"}, "subject-file nope.yaml: no such file"},
		"kubeconfig without":   {[]string{"CLUSTER=kubeconfig"}, "cluster kubeconfig needs kubeconfig"},
	} {
		t.Run(name, func(t *testing.T) {
			_ = os.Remove(e.args)
			code, out := e.run("run", tc.env...)
			if code != 2 || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, output %q, want exit 2 saying %q", code, out, tc.want)
			}
			if _, err := os.Stat(e.args); err == nil {
				t.Error("bootproof ran despite the bad input")
			}
		})
	}
}

// installGo stands in for the go command in TestActionInstallBuilds: it
// builds bootproof with the real go ($REAL_GO), and "builds" any other
// package by writing an empty script to its -o file. Each call is logged
// to $STUB_LOG.
const installGo = `#!/usr/bin/env bash
echo "$*" >> "$STUB_LOG"
if [ "${@: -1}" = ./cmd/bootproof ]; then exec "$REAL_GO" "$@"; fi
case "$1" in
list) echo example.com/p1 ;;
build)
  out=""; while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done
  printf '#!/bin/sh\n' > "$out" && chmod +x "$out" ;;
*) echo "stub go: unexpected $*" >&2; exit 2 ;;
esac
`

// TestActionInstallBuilds: without bootproof-binary, install builds
// bootproof from the checkout, and, only for the embedded cluster, the
// control-plane binaries with that bootproof ('controlplane build', over
// a stub go).
func TestActionInstallBuilds(t *testing.T) {
	e := newActionEnv(t)
	realGo, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command on PATH to build bootproof")
	}
	stubDir := filepath.Join(t.TempDir(), "go")
	if err := os.MkdirAll(stubDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stubDir, "go"), []byte(installGo), 0o755); err != nil {
		t.Fatal(err)
	}
	goLog := filepath.Join(t.TempDir(), "go.log")
	env := []string{"BOOTPROOF_BINARY=", "PATH=" + stubDir + ":" + os.Getenv("PATH"), "STUB_LOG=" + goLog, "REAL_GO=" + realGo}
	if code, out := e.run("install", append(env, "CLUSTER=kind")...); code != 0 {
		t.Fatalf("install: exit %d\n%s", code, out)
	}
	if log := e.read(goLog); !strings.Contains(log, "build -o "+filepath.Join(e.bin, "bootproof")+" ./cmd/bootproof") || strings.Contains(log, "kube-apiserver") {
		t.Errorf("install for kind ran go: %s", log)
	}
	if code, out := e.run("install", append(env, "CLUSTER=embedded")...); code != 0 || !strings.Contains(out, "controlplane: [3/3] kube-controller-manager: built in ") {
		t.Fatalf("install for embedded: exit %d\n%s", code, out)
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(e.bin, b)); err != nil {
			t.Errorf("install for embedded built no %s: %v", b, err)
		}
	}
}

// inOrder is true when want appears in got in this order (not
// necessarily next to each other).
func inOrder(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// TestCheckResultsScript runs hack/check-results.sh, which the action's
// self-test (.github/workflows/action.yaml) runs on the report's
// results.json: it passes only when the run judged exactly the cases
// expected, with the verdicts expected, and says what differs.
func TestCheckResultsScript(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("hack/check-results.sh needs jq (preinstalled on GitHub's runners)")
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caseJSON := func(scenario, observed, verdict string) string {
		return `{"scenario": "` + scenario + `", "subject": "bootproof-bootid", "cluster": "embedded", "nodes": "fake", "expected": "pass", "observed": "` +
			observed + `", "verdict": "` + verdict + `", "message": "` + verdict + ` here", "assertions": [], "reboots": []}`
	}
	three := write("three.json", `{"environment": {"grace_period": "10s"}, "cases": [`+caseJSON("fast-reboot-0.5g", "pass", "pass")+", "+
		caseJSON("double-reboot", "pass", "pass")+", "+caseJSON("reboot-after-load-before-sync", "pass", "pass")+"]}")
	failed := write("failed.json", `{"cases": [`+caseJSON("fast-reboot-0.5g", "pass", "pass")+", "+caseJSON("double-reboot", "fail", "fail")+", "+
		caseJSON("reboot-after-load-before-sync", "error", "error")+"]}")
	empty := write("empty.json", `{"cases": []}`)
	notResults := write("junit.json", `{"testsuites": []}`)
	selfTest := []string{"cases=3", "pass=3", "fail=0", "error=0", "skipped=0",
		"scenarios=fast-reboot-0.5g,double-reboot,reboot-after-load-before-sync", "subjects=bootproof-bootid"}
	script, err := filepath.Abs("../hack/check-results.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  []string
	}{
		{"as the self-test expects", append([]string{three}, selfTest...), 0, []string{"3 cases, as expected"}},
		{"scenarios in another order", []string{three, "scenarios=reboot-after-load-before-sync,double-reboot,fast-reboot-0.5g"}, 0, nil},
		{"a failed and an error verdict", append([]string{failed}, selfTest...), 1,
			[]string{"pass: 1, want 3", "fail: 1, want 0", "error: 1, want 0", "double-reboot, bootproof-bootid: pass -> fail, fail; fail here"}},
		{"no case ran", append([]string{empty}, selfTest...), 1, []string{"cases: 0, want 3", "pass: 0, want 3", "scenarios: , want"}},
		{"other scenarios", []string{three, "scenarios=fast-reboot-0.5g"}, 1, []string{"scenarios: double-reboot,fast-reboot-0.5g,reboot-after-load-before-sync, want fast-reboot-0.5g"}},
		{"other subjects", []string{three, "subjects=bootproof-legacy"}, 1, []string{"subjects: bootproof-bootid, want bootproof-legacy"}},
		{"no results.json", []string{filepath.Join(dir, "missing.json"), "cases=3"}, 2, []string{"no such file"}},
		{"not a results.json", []string{notResults, "cases=3"}, 2, []string{"not a results.json"}},
		{"unknown expectation", []string{three, "passed=3"}, 2, []string{"usage:"}},
		{"not a count", []string{three, "cases=three"}, 2, []string{"usage:"}},
		{"no arguments", nil, 2, []string{"usage:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command("bash", append([]string{script}, tc.args...)...).CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, out)
			}
			for _, w := range tc.out {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
