package workflowcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// root is the repository's root, from this module's directory.
const root = "../.."

// row is what one workflow does on one event: facts of Run.Facts that
// must hold.
type row struct {
	workflow string
	event    Event
	want     map[string]string
}

// facts joins fact tables.
func facts(parts ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, p := range parts {
		for k, v := range p {
			out[k] = v
		}
	}
	return out
}

var (
	// ci.yaml on every event: verify and test with the browser test
	// required and both JUnit files published, fault injection with its
	// table published, and the calibration with its report.
	ciFacts = map[string]string{
		"test":                                            "runs",
		"test.runs-on":                                    "ubuntu-24.04",
		"test.steps[setup].with.chromium":                 "true",
		"test.steps[setup].steps[chromium]":               "runs",
		"test.steps[setup].steps[deps-libvirt]":           "skipped",
		"test.steps[test].env.BOOTPROOF_REQUIRE_CHROMIUM": "1",
		"test.steps[publish-unit].after-failure":          "runs",
		"test.steps[publish-unit].with.junit":             "_output/junit-unit.xml",
		"test.steps[publish-embedded].after-failure":      "runs",
		"test.steps[publish-embedded].with.junit":         "_output/junit-embedded.xml",
		"faults":                                   "runs",
		"faults.steps[test-faults]":                "runs",
		"faults.steps[publish].after-failure":      "runs",
		"faults.steps[publish].with.report-dir":    "_output/faults",
		"faults.steps[publish].steps[JUnit]":       "skipped", // no JUnit from make test-faults
		"calibrate":                                "runs",
		"calibrate.runs-on":                        "ubuntu-24.04",
		"calibrate.steps[calibrate]":               "runs",
		"calibrate.steps[publish].after-failure":   "runs",
		"calibrate.steps[publish].with.report-dir": "_output/calibration",
		"calibrate.steps[publish].with.junit":      "_output/calibration/junit.xml",
		"calibrate.steps[publish].with.summary":    "_output/calibration/calibration.md",
	}
	// e2e.yaml on push and pull_request: kind, and the VM smoke subset on
	// a GitHub-hosted runner; not the self-hosted catalog.
	e2eHostedFacts = map[string]string{
		"e2e-kind":                                                       "runs",
		"e2e-kind.steps[publish].after-failure":                          "runs",
		"e2e-kind.steps[publish-faults].after-failure":                   "runs",
		"e2e-kind.steps[publish-faults].with.report-dir":                 "_output/kind-faults",
		"e2e-kind.steps[calibrate-in-process]":                           "runs",
		"e2e-kind.steps[e2e-kind]":                                       "runs",
		"e2e-kind.steps[publish-calibration-in-process].after-failure":   "runs",
		"e2e-kind.steps[publish-calibration-in-process].with.report-dir": "_output/calibration",
		"e2e-kind.steps[publish-calibration].with.report-dir":            "_output/calibration-kind",
		"e2e-libvirt-smoke":                                              "runs",
		"e2e-libvirt-smoke.runs-on":                                      "ubuntu-24.04",
		"e2e-libvirt-smoke.env.LIBVIRT_LABEL":                            "vm-smoke",
		"e2e-libvirt-smoke.steps[setup].with.libvirt":                    "true",
		"e2e-libvirt-smoke.steps[setup].steps[deps-libvirt]":             "runs",
		"e2e-libvirt-smoke.steps[publish].after-failure":                 "runs",
		"e2e-libvirt": "skipped",
	}
	// e2e.yaml's self-hosted job on schedule and workflow_dispatch: the
	// whole catalog on [self-hosted, linux, kvm], one job at a time,
	// cleaned up before and after (also after a failure).
	e2eSelfHostedFacts = map[string]string{
		"e2e-libvirt-smoke":                              "skipped",
		"e2e-libvirt":                                    "runs",
		"e2e-libvirt.runs-on":                            "self-hosted,linux,kvm",
		"e2e-libvirt.concurrency":                        "bootproof-libvirt-self-hosted",
		"e2e-libvirt.steps[setup].with.libvirt":          "true",
		"e2e-libvirt.steps[setup].steps[deps-libvirt]":   "runs",
		"e2e-libvirt.steps[cleanup-before]":              "runs",
		"e2e-libvirt.steps[e2e-libvirt]":                 "runs",
		"e2e-libvirt.steps[cleanup-after]":               "runs",
		"e2e-libvirt.steps[cleanup-after].after-failure": "runs",
		"e2e-libvirt.steps[give-back].after-failure":     "runs",
		"e2e-libvirt.steps[publish].after-failure":       "runs",
	}
	// mutate.yaml on push and pull_request: a sample of 12 mutants chosen
	// by the commit, the report published; not every mutant.
	mutateSampleFacts = map[string]string{
		"mutate-sample":                                "runs",
		"mutate-sample.runs-on":                        "ubuntu-24.04",
		"mutate-sample.steps[mutate]":                  "runs",
		"mutate-sample.steps[publish].after-failure":   "runs",
		"mutate-sample.steps[publish].with.report-dir": "_output/mutate",
		"mutate-sample.steps[publish].with.summary":    "_output/mutate/mutate.md",
		"mutate": "skipped",
	}
	// mutate.yaml on schedule and workflow_dispatch: every mutant (or the
	// dispatch's sample), the report published.
	mutateAllFacts = map[string]string{
		"mutate-sample":                         "skipped",
		"mutate":                                "runs",
		"mutate.steps[mutate]":                  "runs",
		"mutate.steps[publish].after-failure":   "runs",
		"mutate.steps[publish].with.summary":    "_output/mutate/mutate.md",
		"mutate.steps[publish].with.report-dir": "_output/mutate",
	}
	actionFacts = map[string]string{
		"self-test": "runs",
		"self-test.steps[bootproof].with.subject-file":                                              "examples/subjects/bootproof-bootid.yaml",
		"self-test.steps[verdicts]":                                                                 "runs",
		"self-test.steps[verdicts].after-failure":                                                   "runs",
		"self-test.steps[verdicts].env.REPORT_DIR":                                                  "<output report-dir>",
		"self-test.steps[bootproof].steps[upload the report (JUnit, HTML, results, log)].with.path": "bootproof-report",
	}
)

// rows: each workflow on each of its events. The e2e.yaml rows are the
// ones the old LIBVIRT_LABEL expression got wrong: on workflow_dispatch
// it was 'vm-smoke', never the whole catalog.
var rows = []row{
	{"ci.yaml", Event{Name: "push"}, ciFacts},
	{"ci.yaml", Event{Name: "pull_request"}, ciFacts},
	{"e2e.yaml", Event{Name: "push"}, e2eHostedFacts},
	{"e2e.yaml", Event{Name: "pull_request"}, e2eHostedFacts},
	{"e2e.yaml", Event{Name: "schedule"}, facts(e2eSelfHostedFacts, map[string]string{
		"e2e-kind":                      "skipped",
		"e2e-libvirt.env.LIBVIRT_LABEL": "", // the whole catalog
	})},
	{"e2e.yaml", Event{Name: "workflow_dispatch"}, facts(e2eSelfHostedFacts, map[string]string{
		"e2e-kind":                      "runs",
		"e2e-libvirt.env.LIBVIRT_LABEL": "", // the input's default: the whole catalog
	})},
	{"e2e.yaml", Event{Name: "workflow_dispatch", Inputs: map[string]string{"libvirt-label": "vm-smoke"}}, facts(e2eSelfHostedFacts, map[string]string{
		"e2e-libvirt.env.LIBVIRT_LABEL": "vm-smoke",
	})},
	{"mutate.yaml", Event{Name: "push"}, mutateSampleFacts},
	{"mutate.yaml", Event{Name: "pull_request"}, mutateSampleFacts},
	{"mutate.yaml", Event{Name: "schedule"}, facts(mutateAllFacts, map[string]string{"mutate.env.MUTATE_SAMPLE": "0"})},
	{"mutate.yaml", Event{Name: "workflow_dispatch"}, facts(mutateAllFacts, map[string]string{"mutate.env.MUTATE_SAMPLE": "0"})},
	{"mutate.yaml", Event{Name: "workflow_dispatch", Inputs: map[string]string{"sample": "40"}}, facts(mutateAllFacts, map[string]string{"mutate.env.MUTATE_SAMPLE": "40"})},
	{"action.yaml", Event{Name: "pull_request"}, actionFacts},
	{"action.yaml", Event{Name: "workflow_dispatch"}, actionFacts},
	// release.yaml on a tag: build with the tag as the version, publish.
	{"release.yaml", Event{Name: "push", Tag: "v0.4.0"}, map[string]string{
		"release":                          "runs",
		"release.steps[build].env.VERSION": "v0.4.0",
		"release.steps[publish]":           "runs",
		"release.steps[publish].env.TAG":   "v0.4.0",
	}},
}

func loadWorkflows(t *testing.T) map[string]*Workflow {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, ".github", "workflows", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no workflows under %s/.github/workflows: %v", root, err)
	}
	yml, _ := filepath.Glob(filepath.Join(root, ".github", "workflows", "*.yml"))
	if len(yml) > 0 {
		t.Errorf("workflows named *.yml: %v (this repository names them *.yaml, as make verify's actionlint reads them)", yml)
	}
	wfs := map[string]*Workflow{}
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		w, err := LoadWorkflow(root, rel)
		if err != nil {
			t.Fatal(err)
		}
		wfs[filepath.Base(f)] = w
	}
	return wfs
}

// evaluateRows evaluates every row, failing the test on an error.
func evaluateRows(t *testing.T, wfs map[string]*Workflow) map[*row]*Run {
	t.Helper()
	runs := map[*row]*Run{}
	for i := range rows {
		r := &rows[i]
		w := wfs[r.workflow]
		if w == nil {
			t.Fatalf("row for %s: no such workflow", r.workflow)
		}
		run, err := w.Evaluate(r.event)
		if err != nil {
			t.Fatalf("%s on %s: %v", r.workflow, r.event, err)
		}
		runs[r] = run
	}
	return runs
}

// TestWorkflowEvents evaluates each workflow's expressions (job if,
// runs-on, env, timeout, concurrency, step if, env and with, and those of
// the local actions the steps use) on each event it starts on, and checks
// what the jobs then do against the table above.
func TestWorkflowEvents(t *testing.T) {
	wfs := loadWorkflows(t)
	runs := evaluateRows(t, wfs)
	covered := map[string]map[string]bool{}
	for i := range rows {
		r := &rows[i]
		f := runs[r].Facts()
		for k, want := range r.want {
			got, ok := f[k]
			switch {
			case !ok:
				t.Errorf("%s on %s: no %s; the facts are:\n%s", r.workflow, r.event, k, dump(f, k))
			case got != want:
				t.Errorf("%s on %s: %s = %q, want %q", r.workflow, r.event, k, got, want)
			}
		}
		if covered[r.workflow] == nil {
			covered[r.workflow] = map[string]bool{}
		}
		covered[r.workflow][r.event.Name] = true
	}
	for name, w := range wfs {
		for _, ev := range w.Events() {
			if !covered[name][ev] {
				t.Errorf("%s starts on %s, which no row of the table checks", name, ev)
			}
		}
		for id := range w.AST.Jobs {
			ran := false
			for r, run := range runs {
				if r.workflow == name && run.Job(id).Runs {
					ran = true
				}
			}
			if !ran {
				t.Errorf("%s: job %s runs on no event of the table", name, id)
			}
		}
	}
}

// dump lists the facts that share a job with key, for a failure message.
func dump(f map[string]string, key string) string {
	job, _, _ := strings.Cut(key, ".")
	var lines []string
	for k, v := range f {
		if k == job || strings.HasPrefix(k, job+".") {
			lines = append(lines, fmt.Sprintf("  %s = %q", k, v))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestPublishAfterFailure: in every job, the steps after the last 'make'
// that publish reports, upload artifacts, clean up or give files back
// also run when that make (or a step before) failed.
func TestPublishAfterFailure(t *testing.T) {
	runs := evaluateRows(t, loadWorkflows(t))
	mustRun := regexp.MustCompile(`bootproof cleanup|--give-back`)
	for r, run := range runs {
		for _, j := range run.Jobs {
			last := -1
			for i, s := range j.Steps {
				if makeCall.MatchString(s.Run) {
					last = i
				}
			}
			for _, s := range j.Steps[last+1:] {
				if (strings.Contains(s.Uses, "publish-reports") || strings.HasPrefix(s.Uses, "actions/upload-artifact@") || mustRun.MatchString(s.Run)) && !s.OnFailure {
					t.Errorf("%s on %s: %s: step %s does not run after a failure (if: always())", r.workflow, r.event, j.ID, s.Key)
				}
			}
		}
	}
}

var makeCall = regexp.MustCompile(`\bmake\s+([a-zA-Z0-9_.-]+)`)

// requiredOutputs are outputs the issue that added this test found
// unpublished; MakeOutputs must still find them in the Makefile and hack
// scripts (else its reading of them is out of date).
var requiredOutputs = []string{"junit-unit.xml", "junit-embedded.xml", "junit-kind.xml", "junit-libvirt.xml", "junit-libvirt-modes.xml", "faults", "kind-faults"}

// TestMakeOutputsPublished: every output under _output that a make
// target a job runs writes (JUnit files, report directories, fault
// tables; read from the Makefile and hack scripts) is uploaded by a later
// step of that job which also runs after a failure, and every JUnit file
// is also published as a check.
func TestMakeOutputsPublished(t *testing.T) {
	outs, err := MakeOutputs(root)
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]bool{}
	for _, ps := range outs {
		for _, p := range ps {
			all[p] = true
		}
	}
	for _, p := range requiredOutputs {
		if !all[p] {
			t.Errorf("the Makefile and hack scripts no longer write _output/%s as MakeOutputs reads them (outputs: %v): update outputs.go or requiredOutputs", p, outs)
		}
	}
	checked := map[string]bool{}
	for r, run := range evaluateRows(t, loadWorkflows(t)) {
		for _, j := range run.Jobs {
			for i, s := range j.Steps {
				for _, m := range makeCall.FindAllStringSubmatch(s.Run, -1) {
					for _, p := range outs[m[1]] {
						checked[p] = true
						checkPublished(t, fmt.Sprintf("%s on %s: %s: make %s", r.workflow, r.event, j.ID, m[1]), "_output/"+p, j.Steps[i+1:])
					}
				}
			}
		}
	}
	for _, p := range requiredOutputs {
		if !checked[p] {
			t.Errorf("_output/%s: no job runs the make target that writes it", p)
		}
	}
}

// checkPublished: a step of after that runs after a failure uploads p
// (and, for a JUnit file, reports it as a check).
func checkPublished(t *testing.T, what, p string, after []*StepRun) {
	t.Helper()
	uploaded, reported := false, false
	for _, s := range after {
		if !s.OnFailure {
			continue
		}
		for _, l := range leaves(s) {
			switch {
			case strings.HasPrefix(l.Uses, "actions/upload-artifact@"):
				uploaded = uploaded || Covers(l.With["path"], p)
			case strings.HasPrefix(l.Uses, "mikepenz/action-junit-report@"):
				reported = reported || Covers(l.With["report_paths"], p)
			}
		}
	}
	if !uploaded {
		t.Errorf("%s writes %s, which no later step uploads even after a failure", what, p)
	}
	if strings.HasPrefix(filepath.Base(p), "junit") && !reported {
		t.Errorf("%s writes %s, which no later step publishes as a check even after a failure", what, p)
	}
}

// leaves returns s, or the steps of the local actions it uses that run.
func leaves(s *StepRun) []*StepRun {
	if len(s.Steps) == 0 {
		return []*StepRun{s}
	}
	var out []*StepRun
	for _, c := range s.Steps {
		if c.OnSuccess {
			out = append(out, leaves(c)...)
		}
	}
	return out
}

// TestWorkflowScripts: every hack/ script a step runs exists and is
// executable.
func TestWorkflowScripts(t *testing.T) {
	script := regexp.MustCompile(`(?:^|[\s"'])(hack/[A-Za-z0-9_.-]+\.sh)`)
	seen := map[string]bool{}
	var walk func([]*StepRun)
	walk = func(steps []*StepRun) {
		for _, s := range steps {
			for _, m := range script.FindAllStringSubmatch(s.Run, -1) {
				seen[m[1]] = true
			}
			walk(s.Steps)
		}
	}
	for _, run := range evaluateRows(t, loadWorkflows(t)) {
		for _, j := range run.Jobs {
			walk(j.Steps)
		}
	}
	if len(seen) == 0 {
		t.Fatal("no step runs a hack/ script")
	}
	for s := range seen {
		info, err := os.Stat(filepath.Join(root, s))
		if err != nil {
			t.Errorf("a step runs %s: %v", s, err)
		} else if info.Mode()&0o111 == 0 {
			t.Errorf("a step runs %s, which is not executable", s)
		}
	}
}

// TestActionlintPins: this module's actionlint (the expression parser)
// is the one make verify runs over the workflows.
func TestActionlintPins(t *testing.T) {
	version := func(gomod string) string {
		data, err := os.ReadFile(gomod)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/rhysd/actionlint\s+(\S+)`).FindStringSubmatch(string(data))
		if m == nil {
			t.Fatalf("%s does not require github.com/rhysd/actionlint", gomod)
		}
		return m[1]
	}
	if a, b := version("go.mod"), version(filepath.Join(root, "tools", "actionlint", "go.mod")); a != b {
		t.Errorf("tools/workflowcheck has actionlint %s, tools/actionlint %s: pin the same version", a, b)
	}
}

// TestMakeOutputs pins how the Makefile is read, on a small one.
func TestMakeOutputs(t *testing.T) {
	dir := t.TempDir()
	mk := "REPORTS_DIR := $(CURDIR)/_output\n\n.PHONY: a\na: b ## A.\n\t@mkdir -p $(REPORTS_DIR)/t\n\tgo test --junitfile $(REPORTS_DIR)/junit-a.xml\n\t@echo \"table: $(REPORTS_DIR)/t/t.md\" > $(REPORTS_DIR)/t/x\n" +
		"X ?= 1\n\tnot a recipe $(REPORTS_DIR)/no\nk:\n\t@hack/k.sh \"$(REPORTS_DIR)/k\"\n"
	script := "#!/bin/sh\ncp x \"$(dirname \"$report_dir\")/junit-k.xml\"\nf=\"$(dirname \"$report_dir\")/k-faults\"\n"
	if err := os.MkdirAll(filepath.Join(dir, "hack"), 0o755); err != nil {
		t.Fatal(err)
	}
	for f, s := range map[string]string{"Makefile": mk, "hack/k.sh": script} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outs, err := MakeOutputs(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"a": {"junit-a.xml", "t"}, "k": {"junit-k.xml", "k", "k-faults"}}
	for target, w := range want {
		if !slices.Equal(outs[target], w) {
			t.Errorf("%s: %v, want %v (all: %v)", target, outs[target], w, outs)
		}
	}
	if len(outs) != len(want) {
		t.Errorf("outputs %v, want %v", outs, want)
	}
	for _, tc := range []struct {
		paths, p string
		want     bool
	}{
		{"_output/junit-libvirt*.xml", "_output/junit-libvirt-modes.xml", true},
		{"a\n_output/faults\n", "_output/faults", true},
		{"_output/faults/", "_output/faults", true},
		{"_output/kind", "_output/kind-faults", false},
		{"_output/kind\n", "_output/kind/junit.xml", true},
		{"\n", "_output/x", false},
	} {
		if got := Covers(tc.paths, tc.p); got != tc.want {
			t.Errorf("Covers(%q, %q) = %v", tc.paths, tc.p, got)
		}
	}
}
