package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/internal/cli"
	"github.com/bootproof/bootproof/internal/subject"
	"github.com/bootproof/bootproof/kmm/variant"
	"github.com/bootproof/bootproof/reports"
	"github.com/bootproof/bootproof/scenarios"
)

// calibrationDir returns a directory of two calibration files: the
// slow-reconcile example (known good) and no-reload (known bad), listed
// as caught in fast-reboot-0.5g and in the scenarios of moreSees (YAML
// list items), for tests on the embedded cluster.
func calibrationDir(t *testing.T, moreSees string) string {
	t.Helper()
	cptest.RequireBinaries(t)
	t.Setenv("TMPDIR", t.TempDir())
	return writeCalibrationDir(t, moreSees)
}

// writeCalibrationDir writes calibrationDir's files.
func writeCalibrationDir(t *testing.T, moreSees string) string {
	t.Helper()
	dir := t.TempDir()
	slow, err := os.ReadFile("../../examples/calibration/slow-reconcile.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "slow-reconcile.yaml"), slow, 0o644); err != nil {
		t.Fatal(err)
	}
	noReload := `apiVersion: bootproof.dev/v1alpha1
kind: Subject
name: cal-no-reload
exec: {command: ["${BOOTPROOF}", kmm, --variant=no-reload]}
calibration:
  variant: no-reload
  sees:
    - scenarios: [fast-reboot-0.5g]
      expect: fail:reload
      why: the node reboots` + moreSees
	if err := os.WriteFile(filepath.Join(dir, "no-reload.yaml"), []byte(noReload+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCalibrateGates runs 'bootproof calibrate' on the embedded cluster
// with a known-good variant and a known-bad one whose file lists a
// scenario it is caught in (a fast reboot: it never loads again) and one
// that cannot see its defect (no reboot at all): the report counts the
// catch and the miss, and the miss fails the run (exit 1), as a
// calibration below 100 % must.
func TestCalibrateGates(t *testing.T) {
	dir := calibrationDir(t, `
    - scenarios: [kubelet-restart-no-reboot]
      expect: fail:reload
      why: listed wrongly on purpose, no reboot happens
`)
	report := filepath.Join(t.TempDir(), "report")
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), []string{"calibrate", "--dir", dir, "--scenario", "fast-reboot-0.5g", "--scenario", "kubelet-restart-no-reboot",
		"--parallel", "4", "--report-dir", report}, &out, &errb)
	if code != cli.ExitFailed {
		t.Fatalf("exit %d, want %d (a listed scenario missed); stdout:\n%s\nstderr:\n%s", code, cli.ExitFailed, out.String(), errb.String())
	}
	data, err := os.ReadFile(filepath.Join(report, reports.CalibrationJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var c reports.CalibrationResult
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	if c.Sensitivity != (reports.Ratio{Count: 1, Total: 2}) || c.Specificity != (reports.Ratio{Count: 2, Total: 2}) ||
		c.VariantsCaught != (reports.Ratio{Count: 0, Total: 1}) || c.VariantsPassed != (reports.Ratio{Count: 1, Total: 1}) {
		t.Errorf("sensitivity %v, specificity %v, variants caught %v, passed %v; want 1 of 2 (the wrong listing missed), 2 of 2, 0 of 1, 1 of 1",
			c.Sensitivity, c.Specificity, c.VariantsCaught, c.VariantsPassed)
	}
	md, err := os.ReadFile(filepath.Join(report, reports.CalibrationMDFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"0 of 1 known-bad variants caught in every listed scenario, 1 of 1 known-good variants passed every case; sensitivity 50 % (1 of 2 listed cells), specificity 100 % (2 of 2 cases)",
		"kubelet-restart-no-reboot: missed", "no-reload (known bad): caught in 1 of 2 listed scenarios, through reload"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("calibration.md lacks %q:\n%s", w, md)
		}
	}
	if !strings.Contains(errb.String(), "calibration: 0 of 1 known-bad variants caught") {
		t.Errorf("stderr %q: want the headline", errb.String())
	}
}

// TestCalibrateListedOnly: with --listed-only a known-bad variant runs
// only in the scenarios its file lists, a slow one in every scenario; the
// figures are measured as without it, and the report says which cells
// were not run. Compared (--compare-with) with a calibration of another
// world in which no-reload was missed, the run is 100 % and still exits 1,
// the variant flagged.
func TestCalibrateListedOnly(t *testing.T) {
	dir := calibrationDir(t, "")
	report := filepath.Join(t.TempDir(), "report")
	otherDir := otherWorldCalibration(t)
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), []string{"calibrate", "--dir", dir, "--scenario", "fast-reboot-0.5g", "--scenario", "kubelet-restart-no-reboot",
		"--listed-only", "--parallel", "4", "--report-dir", report, "--compare-with", otherDir}, &out, &errb)
	if code != cli.ExitFailed {
		t.Fatalf("exit %d, want %d (a verdict differs from the other world's); stdout:\n%s\nstderr:\n%s", code, cli.ExitFailed, out.String(), errb.String())
	}
	if w := "verdict not as in the deployment world for 1 of 2 variant(s): no-reload"; !strings.Contains(errb.String(), w) {
		t.Errorf("stderr %q lacks %q", errb.String(), w)
	}
	data, err := os.ReadFile(filepath.Join(report, reports.CalibrationJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var c reports.CalibrationResult
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	if !c.ListedOnly || c.Sensitivity != (reports.Ratio{Count: 1, Total: 1}) || c.Specificity != (reports.Ratio{Count: 2, Total: 2}) {
		t.Errorf("listed only %t, sensitivity %v, specificity %v; want true, 1 of 1, 2 of 2", c.ListedOnly, c.Sensitivity, c.Specificity)
	}
	if !c.OK() || c.Worlds == nil || fmt.Sprint(c.Worlds.Differ) != "[no-reload]" || c.Worlds.Other.Source != otherDir {
		t.Errorf("ok %t, worlds %+v; want true, no-reload differing from %s", c.OK(), c.Worlds, otherDir)
	}
	ran := map[string][]string{}
	for _, r := range c.Rows {
		for _, cell := range r.Cells {
			ran[r.Variant] = append(ran[r.Variant], cell.Scenario)
		}
	}
	if got := strings.Join(ran["no-reload"], ","); got != "fast-reboot-0.5g" {
		t.Errorf("no-reload ran in %q, want its listed scenario only", got)
	}
	if got := len(ran["slow-reconcile"]); got != 2 {
		t.Errorf("slow-reconcile ran in %d scenarios, want both", got)
	}
	md, err := os.ReadFile(filepath.Join(report, reports.CalibrationMDFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"(--listed-only)", "| kubelet-restart-no-reboot | – |", "| no-reload | defect | caught | not caught | ❌ differs |",
		"* no-reload in fast-reboot-0.5g: caught here, missed in the deployment world"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("calibration.md lacks %q:\n%s", w, md)
		}
	}
	// index.html shows the calibration, not the run.
	html, err := os.ReadFile(filepath.Join(report, reports.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"<title>bootproof calibration</title>", `id="calibration-matrix"`, "no-reload (known bad): caught in 1 of 1 listed scenarios, through reload"} {
		if !strings.Contains(string(html), w) {
			t.Errorf("index.html lacks %q", w)
		}
	}
}

// otherWorldCalibration writes the report directory of a calibration of
// calibrationDir's variants as Deployments in which no-reload was missed
// in fast-reboot-0.5g (it passed) and slow-reconcile passed.
func otherWorldCalibration(t *testing.T) string {
	t.Helper()
	res := scenarios.Results{Cases: []scenarios.CaseResult{
		{Subject: "cal-no-reload", Scenario: "fast-reboot-0.5g", Observed: scenarios.Pass, Verdict: scenarios.Fail},
		{Subject: "cal-slow-reconcile", Scenario: "fast-reboot-0.5g", Observed: scenarios.Pass, Verdict: scenarios.Pass},
	}}
	c := reports.Calibrate(res, []reports.CalibrationVariant{
		{Subject: "cal-no-reload", Variant: "no-reload", Kind: reports.KindDefect,
			Listed: []reports.ListedScenario{{Scenario: "fast-reboot-0.5g", Expect: "fail:reload", Assertions: []string{"reload"}}}},
		{Subject: "cal-slow-reconcile", Variant: "slow-reconcile", Kind: reports.KindSlow},
	})
	c.World = reports.WorldDeployment
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, reports.CalibrationJSONFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCalibrateSelectionMeasuresEveryVariant: a selection in which a
// known-bad variant would run in none of the scenarios its file lists is
// a usage error before anything starts (no control plane needed), naming
// each such variant, its file's scenarios and what would make it run;
// with the repository's files, exactly the variants that do not list the
// scenario selected.
func TestCalibrateSelectionMeasuresEveryVariant(t *testing.T) {
	files, err := filepath.Glob("../../examples/calibration/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no calibration files: %v", err)
	}
	const scen = "fast-reboot-0.5g"
	var unseen, seen []string
	for _, p := range files {
		f, err := subject.ReadFile(p, func(string) (string, bool) { return "/bin/sh", true })
		if err != nil {
			t.Fatal(err)
		}
		c := f.Calibration
		switch {
		case c.Kind() != variant.Defect:
		case c.Listed(scen) == nil:
			unseen = append(unseen, c.Variant)
		default:
			seen = append(seen, c.Variant)
		}
	}
	if len(unseen) == 0 || len(seen) == 0 {
		t.Fatalf("the examples list %s for every known-bad variant or none (%v, %v): pick another scenario", scen, seen, unseen)
	}
	small := writeCalibrationDir(t, "")
	for _, tc := range []struct {
		name  string
		args  []string
		named []string
		not   []string
		say   []string
	}{
		{"the repository's variants, one scenario", []string{"--dir", "../../examples/calibration", "--scenario", scen}, unseen, seen,
			[]string{fmt.Sprintf("--scenario %s selects scenarios in which %d calibration variant(s) cannot be measured", scen, len(unseen))}},
		{"a variant and a scenario it does not list", []string{"--dir", small, "--variant", "no-reload", "--scenario", "kubelet-restart-no-reboot"},
			[]string{"no-reload"}, nil, []string{"would run in none of the scenarios its file lists (fast-reboot-0.5g)", "add --scenario fast-reboot-0.5g", "leave the variant out"}},
		{"listed only, a scenario it does not list", []string{"--dir", small, "--listed-only", "--scenario", "kubelet-restart-no-reboot"},
			[]string{"no-reload"}, []string{"slow-reconcile"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			report := filepath.Join(t.TempDir(), "report")
			var out, errb bytes.Buffer
			code := cli.Run(context.Background(), append([]string{"calibrate", "--report-dir", report}, tc.args...), &out, &errb)
			if code != cli.ExitUsage {
				t.Fatalf("exit %d, want %d (usage); stderr:\n%s", code, cli.ExitUsage, errb.String())
			}
			for _, v := range tc.named {
				if !strings.Contains(errb.String(), "variant "+v+" (") {
					t.Errorf("stderr does not name variant %s:\n%s", v, errb.String())
				}
			}
			for _, v := range tc.not {
				if strings.Contains(errb.String(), "variant "+v+" (") {
					t.Errorf("stderr names variant %s, which the selection measures:\n%s", v, errb.String())
				}
			}
			for _, w := range tc.say {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errb.String())
				}
			}
			if _, err := os.Stat(report); err == nil {
				t.Errorf("the report directory %s was made: something ran", report)
			}
		})
	}
}

// TestCalibrateCatchesOrphansOnAFreshCluster: keep-orphan-pods, alone in
// nmc-deleted-while-loading on a new embedded cluster, is caught through
// workers-finish. Its first case starts seconds after the
// NodeModulesConfig CRD is created, when the garbage collector (which
// re-reads discovery every 30 s) does not yet act on NodeModulesConfig
// owners: before the case waited for it, the worker pod was never
// collected, finished its load, and the defect passed.
func TestCalibrateCatchesOrphansOnAFreshCluster(t *testing.T) {
	cptest.RequireBinaries(t)
	t.Setenv("TMPDIR", t.TempDir())
	report := filepath.Join(t.TempDir(), "report")
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), []string{"calibrate", "--dir", "../../examples/calibration", "--variant", "keep-orphan-pods",
		"--scenario", "nmc-deleted-while-loading", "--report-dir", report}, &out, &errb)
	if code != cli.ExitOK {
		t.Fatalf("exit %d, want %d (keep-orphan-pods caught); stdout:\n%s\nstderr:\n%s", code, cli.ExitOK, out.String(), errb.String())
	}
	c, err := reports.ReadCalibration(report)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != 1 || len(c.Rows[0].Cells) != 1 || c.Rows[0].Cells[0].Outcome != reports.CellCaught || fmt.Sprint(c.Rows[0].Cells[0].Failed) != "[workers-finish]" {
		t.Errorf("calibration rows %+v; want keep-orphan-pods caught through workers-finish", c.Rows)
	}
}
