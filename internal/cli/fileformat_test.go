package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/internal/cli"
)

const (
	header          = "apiVersion: bootproof.dev/v1alpha1\n"
	oldScenario     = "name: my-scenario\nnodes: 1\nmodules: [{name: dummy}]\nexpect: {bootid: pass}\nactions:\n  - wait-reloaded: {}\n"
	oldSubject      = "name: my-operator\ndeployment: {namespace: ops, name: my-operator}\n"
	scenarioWarning = `: no apiVersion/kind: add "apiVersion: bootproof.dev/v1alpha1" and "kind: Scenario" at the top; files without them are deprecated`
	subjectWarning  = `: no apiVersion/kind: add "apiVersion: bootproof.dev/v1alpha1" and "kind: Subject" at the top; files without them are deprecated`
)

// withoutHeader is a file of the repository with its apiVersion and kind
// lines removed: the deprecated form.
func withoutHeader(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`(?m)^(apiVersion|kind): .*\n`).ReplaceAllString(string(data), "")
}

// TestInputFileWarnings: a scenario or subject file without apiVersion and
// kind is read with one deprecation warning on stderr, naming the file
// and the lines to add, once per file, by list, run and calibrate; never
// on stdout. A file with them gives no warning.
func TestInputFileWarnings(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	oldSc, oldSubj := write("old-scenario.yaml", oldScenario), write("old-subject.yaml", oldSubject)
	newSc := write("new-scenario.yaml", header+"kind: Scenario\n"+oldScenario)
	newSubj := write("new-subject.yaml", header+"kind: Subject\n"+oldSubject)
	oldCal := write("calibration/no-reload.yaml", withoutHeader(t, "../../examples/calibration/no-reload.yaml"))
	tests := []struct {
		name string
		args []string
		code int
		// warnings are the lines expected on stderr, in order.
		warnings []string
	}{
		{"list: new form", []string{"list", "--scenario-file", newSc, "--subject-file", newSubj}, cli.ExitOK, nil},
		{"list: old form", []string{"list", "--scenario-file", oldSc, "--subject-file", oldSubj}, cli.ExitOK,
			[]string{oldSc + scenarioWarning, oldSubj + subjectWarning}},
		// Validation stops at --parallel 0, after the files were read.
		{"run: old form", []string{"run", "--scenario-file", oldSc, "--subject-file", oldSubj, "--parallel", "0"}, cli.ExitUsage,
			[]string{oldSc + scenarioWarning, oldSubj + subjectWarning}},
		{"run: new form", []string{"run", "--scenario-file", newSc, "--subject-file", newSubj, "--parallel", "0"}, cli.ExitUsage, nil},
		// The second reading of the file is refused (its name is taken);
		// its warning was printed once.
		{"run: a file twice", []string{"run", "--scenario-file", oldSc, "--scenario-file", oldSc}, cli.ExitUsage,
			[]string{oldSc + scenarioWarning}},
		{"calibrate: old form", []string{"calibrate", "--dir", filepath.Dir(oldCal), "--repeat", "0"}, cli.ExitUsage,
			[]string{oldCal + subjectWarning}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := cli.Run(context.Background(), tc.args, &out, &errb); code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, errb.String())
			}
			var got []string
			for _, l := range strings.Split(errb.String(), "\n") {
				if w, ok := strings.CutPrefix(l, "bootproof: warning: "); ok {
					got = append(got, w)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.warnings, "\n") {
				t.Errorf("warnings on stderr:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.warnings, "\n"))
			}
			if strings.Contains(errb.String(), "deprecated") && len(tc.warnings) == 0 {
				t.Errorf("stderr has a deprecation: %s", errb.String())
			}
			if strings.Contains(out.String(), "deprecated") || strings.Contains(out.String(), "warning") {
				t.Errorf("stdout has a warning:\n%s", out.String())
			}
		})
	}
}

// TestInputFileFormatRefused: a file of the other format, or of a version
// this bootproof does not read, is refused before anything runs (exit 2),
// naming the flag, the file, the line, the field and what is accepted.
func TestInputFileFormatRefused(t *testing.T) {
	dir := t.TempDir()
	future := filepath.Join(dir, "future.yaml")
	if err := os.WriteFile(future, []byte("apiVersion: bootproof.dev/v1\nkind: Scenario\n"+oldScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	halfSubject := filepath.Join(dir, "half.yaml")
	if err := os.WriteFile(halfSubject, []byte("kind: Subject\n"+oldSubject), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"a subject file as a scenario file", []string{"run", "--scenario-file", "../../examples/subjects/bootproof-bootid.yaml"},
			[]string{"--scenario-file", "bootproof-bootid.yaml:", "field kind", `"Subject": want kind Scenario in a scenario file (kind Subject is a subject file`}},
		{"a scenario file as a subject file", []string{"list", "--subject-file", "../../scenarios/catalog/fast-reboot-0.5g.yaml"},
			[]string{"--subject-file", "fast-reboot-0.5g.yaml:2: field kind", `"Scenario": want kind Subject in a subject file`}},
		{"an unknown version", []string{"list", "--scenario-file", future},
			[]string{"--scenario-file", "future.yaml:1: field apiVersion", `"bootproof.dev/v1": unknown version: accepted: bootproof.dev/v1alpha1`}},
		{"kind without apiVersion", []string{"run", "--subject-file", halfSubject},
			[]string{"--subject-file", "half.yaml:1: field apiVersion: missing", `add "apiVersion: bootproof.dev/v1alpha1"`}},
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
