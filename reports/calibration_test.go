package reports

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/scenarios"
)

// listing lists scenarios through expect; interleaving names those that
// control the interleaving.
func listing(expect string, assertions []string, interleaving []string, names ...string) []ListedScenario {
	var out []ListedScenario
	for _, n := range names {
		out = append(out, ListedScenario{Scenario: n, Expect: expect, Assertions: assertions, Why: "it can see it", ControlsInterleaving: slices.Contains(interleaving, n)})
	}
	return out
}

// calCase is a case of subj in scen, observed and judged as given,
// failing the assertions named.
func calCase(subj, scen, observed, verdict string, failed ...string) scenarios.CaseResult {
	c := scenarios.CaseResult{Subject: subj, Scenario: scen, Observed: observed, Verdict: verdict, Cluster: "embedded", Nodes: "fake",
		Message: observed + " / " + verdict}
	for _, a := range failed {
		c.Assertions = append(c.Assertions, scenarios.AssertionResult{Name: a, Message: a + " failed"})
	}
	c.Assertions = append(c.Assertions, scenarios.AssertionResult{Name: "consistency", OK: true,
		Reloads: []scenarios.ReloadLatency{{LatencyMS: 700, WindowMS: 700, SLOMS: 5000, WaitMS: 30000}, {LatencyMS: 900, WindowMS: 900, SLOMS: 9000, WaitMS: 30000}}})
	return c
}

// calibrationVariants: a, a defect listed in s1..s3 through reload (s2
// controls the interleaving); n, one that never loads, listed in s1 and
// s2 through initial-load; slow, a known-good one; gone, a defect listed
// only in s9, which does not run.
func calibrationVariants() []CalibrationVariant {
	reload, initial := []string{"reload"}, []string{"initial-load"}
	return []CalibrationVariant{
		{Subject: "cal-a", Variant: "a", Kind: KindDefect, Summary: "seeded", Listed: listing("fail:reload", reload, []string{"s2"}, "s1", "s2", "s3")},
		{Subject: "cal-n", Variant: "n", Kind: KindDefect, Summary: "never loads", Listed: listing("fail:initial-load", initial, nil, "s1", "s2")},
		{Subject: "cal-slow", Variant: "slow", Kind: KindSlow, Summary: "slow"},
		{Subject: "cal-gone", Variant: "gone", Kind: KindDefect, Summary: "never run", Listed: listing("fail:reload", reload, nil, "s9")},
	}
}

// TestCalibrateCells: each case's outcome follows from the variant's
// truth, the listing and what the case observed; an error is never a
// catch.
func TestCalibrateCells(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    scenarios.CaseResult
		want string
	}{
		{"listed, failed through the assertion named", calCase("cal-a", "s1", "fail", "pass", "reload"), CellCaught},
		{"listed, passed", calCase("cal-a", "s2", "pass", "fail"), CellMissed},
		{"listed, failed for the wrong reason", calCase("cal-a", "s1", "fail", "error", "no-extra-work"), CellMissed},
		{"listed, a verdict of pass but through another assertion", calCase("cal-a", "s1", "fail", "pass", "no-extra-work"), CellMissed},
		{"listed, an error", calCase("cal-a", "s3", "error", "error"), CellNoVerdict},
		{"listed, skipped", calCase("cal-a", "s3", "skipped", "skipped"), CellNoVerdict},
		{"never loads: failed through initial-load", calCase("cal-n", "s1", "fail", "pass", "initial-load", "consistency"), CellCaught},
		{"never loads: an error is a miss", calCase("cal-n", "s2", "error", "error"), CellNoVerdict},
		{"not listed, failed", calCase("cal-a", "s4", "fail", "fail", "reload"), CellExtraCatch},
		{"not listed, passed", calCase("cal-a", "s5", "pass", "pass"), CellNotListed},
		{"not listed, an error", calCase("cal-a", "s5", "error", "error"), CellNoVerdict},
		{"known good, passed", calCase("cal-slow", "s1", "pass", "pass"), CellPassed},
		{"known good, failed", calCase("cal-slow", "s1", "fail", "fail", "reload"), CellFailed},
		{"known good, an error", calCase("cal-slow", "s1", "error", "error"), CellNoVerdict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Calibrate(scenarios.Results{Cases: []scenarios.CaseResult{tc.c}}, calibrationVariants())
			var got []string
			for _, r := range c.Rows {
				for _, cell := range r.Cells {
					got = append(got, cell.Outcome)
				}
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("outcomes %q, want [%s]", got, tc.want)
			}
		})
	}
}

// calibrationRun: a calibration with a catch, a miss, an error in a
// listed scenario, an extra catch, a known-good failure, a variant that
// ran in none of its listed scenarios, and a case of another subject.
func calibrationRun() scenarios.Results {
	return scenarios.Results{Cases: []scenarios.CaseResult{
		calCase("cal-a", "s1", "fail", "pass", "reload"),
		calCase("cal-a", "s2", "pass", "fail"),
		calCase("cal-a", "s3", "fail", "pass", "reload"),
		calCase("cal-a", "s4", "fail", "fail", "reload"),
		calCase("cal-a", "s5", "pass", "pass"),
		calCase("cal-n", "s1", "fail", "pass", "initial-load"),
		calCase("cal-n", "s2", "error", "error"),
		calCase("cal-slow", "s1", "pass", "pass"),
		calCase("cal-slow", "s2", "error", "error"),
		calCase("cal-slow", "s3", "fail", "fail", "reload"),
		calCase("cal-gone", "s1", "pass", "pass"),
		calCase("cal-other", "s1", "fail", "fail", "reload"), // not a variant: ignored
	}}
}

func TestCalibrateFigures(t *testing.T) {
	c := Calibrate(calibrationRun(), calibrationVariants())
	if c.Sensitivity != (Ratio{Count: 3, Total: 5}) || c.Specificity != (Ratio{Count: 1, Total: 3}) || c.ExtraCatches != 1 {
		t.Errorf("sensitivity %v, specificity %v, extra %d; want 3 of 5, 1 of 3, 1", c.Sensitivity, c.Specificity, c.ExtraCatches)
	}
	if c.VariantsCaught != (Ratio{Count: 0, Total: 3}) || c.VariantsPassed != (Ratio{Count: 0, Total: 1}) {
		t.Errorf("variants caught %v, passed %v; want 0 of 3 (a missed s2, n's error, gone ran none), 0 of 1", c.VariantsCaught, c.VariantsPassed)
	}
	if !slices.Equal(c.NoCells, []string{"gone"}) || c.NotRun != 1 || c.OK() {
		t.Errorf("no cells %v, not run %d, ok %v; want [gone], 1 (s9), false", c.NoCells, c.NotRun, c.OK())
	}
	a := c.Rows[0]
	if a.Scenarios != (Ratio{Count: 2, Total: 3}) || a.Runs != (Ratio{Count: 2, Total: 3}) || !slices.Equal(a.Interleaving, []string{"s2"}) || a.InterleavingCaught != 0 {
		t.Errorf("row a: scenarios %v, runs %v, interleaving %v (%d caught); want 2 of 3, 2 of 3, [s2] (0)", a.Scenarios, a.Runs, a.Interleaving, a.InterleavingCaught)
	}
	var cases []int
	for _, cell := range a.Cells {
		cases = append(cases, cell.Case)
	}
	if !slices.Equal(cases, []int{0, 1, 2, 3, 4}) {
		t.Errorf("row a's cells link to cases %v, want their indexes in the results", cases)
	}
	for _, tc := range []struct {
		row  int
		want []string
	}{
		{0, []string{"a (known bad): caught in 2 of 3 listed scenarios, through reload", "1 control the interleaving, 0 of them caught every time: s2", "1 shortfall: s2 (missed, observed pass)"}},
		{1, []string{"n (known bad): caught in 1 of 2 listed scenarios, through initial-load", "none of them controls the interleaving", "s2 (no verdict, observed error)"}},
		{2, []string{"slow (known good): passed 1 of 3 scenarios", "2 shortfalls: s2 (no verdict, observed error), s3 (failed, observed fail)"}},
		{3, []string{"gone (known bad): caught in 0 of 0 listed scenarios", "1 listed scenario(s) not run: s9", "nothing measured"}},
	} {
		line := VariantLine(c.Rows[tc.row])
		for _, w := range tc.want {
			if !strings.Contains(line, w) {
				t.Errorf("line %q lacks %q", line, w)
			}
		}
	}
	h := CalibrationHeadline(c)
	for _, w := range []string{"not calibrated: no cell that counts ran for gone", "0 of 3 known-bad variants caught in every listed scenario", "0 of 1 known-good variants passed every case",
		"sensitivity 60 % (3 of 5 listed cells)", "specificity 33 % (1 of 3 cases)", "1 listed scenario(s) not run", "1 extra catch(es)"} {
		if !strings.Contains(h, w) {
			t.Errorf("headline %q lacks %q", h, w)
		}
	}
	md := CalibrationMarkdown(c)
	for _, s := range []string{"# bootproof calibration\n\n❌ ", "| s4 | ➕ | – | – | – |", "| s2 ⇄ | ❌ | ⚠️ | ⚠️ | – |", "| s1 | ✅ | ✅ | ✅ | · |",
		"- ❌ a (known bad): caught in 2 of 3", "* s1, s2, s3 — through `fail:reload`: it can see it", "slow (known good): passed 1 of 3 scenarios; closest reload 700 ms against its service level of 5.0 s (s1)"} {
		if !strings.Contains(md, s) {
			t.Errorf("calibration.md lacks %q:\n%s", s, md)
		}
	}
}

// TestCalibrateOK: every variant as its truth says is calibrated; a
// variant with nothing measured, or a selection without known-good
// variants, is not a failure of the others.
func TestCalibrateOK(t *testing.T) {
	vs := calibrationVariants()[:3]
	all := scenarios.Results{Cases: []scenarios.CaseResult{
		calCase("cal-a", "s1", "fail", "pass", "reload"), calCase("cal-a", "s2", "fail", "pass", "reload"), calCase("cal-a", "s3", "fail", "pass", "reload"),
		calCase("cal-n", "s1", "fail", "pass", "initial-load"), calCase("cal-n", "s2", "fail", "pass", "initial-load"),
		calCase("cal-slow", "s1", "pass", "pass"),
	}}
	c := Calibrate(all, vs)
	if !c.OK() || c.VariantsCaught != (Ratio{2, 2}) || c.VariantsPassed != (Ratio{1, 1}) {
		t.Errorf("every listed case caught and every slow one passed: %s", CalibrationHeadline(c))
	}
	if row := c.Rows[0]; VariantLine(row) != "a (known bad): caught in 3 of 3 listed scenarios, through reload; 1 control the interleaving, 1 of them caught every time: s2" {
		t.Errorf("line %q", VariantLine(row))
	}
	defectsOnly := Calibrate(all, vs[:2])
	if !defectsOnly.OK() || !strings.Contains(CalibrationHeadline(defectsOnly), "2 of 2 known-bad variants caught in every listed scenario, no known-good variant ran; sensitivity 100 % (5 of 5 listed cells), specificity not measured (no cases)") {
		t.Errorf("known-bad variants only: ok %v, %s", defectsOnly.OK(), CalibrationHeadline(defectsOnly))
	}
	if empty := Calibrate(scenarios.Results{}, vs); empty.OK() || len(empty.NoCells) != 3 {
		t.Errorf("nothing run must not count as calibrated: %s", CalibrationHeadline(empty))
	}
	if none := Calibrate(scenarios.Results{}, nil); none.OK() {
		t.Errorf("no variant at all must not count as calibrated: %s", CalibrationHeadline(none))
	}
	// A repeated run counts each run; a scenario counts when every run caught.
	rep := all
	rep.Cases = append(slices.Clone(all.Cases), calCase("cal-a", "s1", "pass", "fail"))
	rep.Cases[len(rep.Cases)-1].Attempt = 2
	rc := Calibrate(rep, vs)
	if row := rc.Rows[0]; row.Scenarios != (Ratio{2, 3}) || row.Runs != (Ratio{3, 4}) || rc.OK() ||
		!strings.Contains(VariantLine(row), "caught in 2 of 3 listed scenarios (3 of 4 runs)") {
		t.Errorf("repeated: scenarios %v, runs %v, line %q", row.Scenarios, row.Runs, VariantLine(row))
	}
}

// TestWriteCalibration: the calibration's reports, its index.html with
// the calibration in place of the run's summary and matrix, and a
// rewrite that judges the results again from calibration.json alone.
func TestWriteCalibration(t *testing.T) {
	dir := t.TempDir()
	r := calibrationRun()
	c := Calibrate(r, calibrationVariants())
	c.CompareWith(Calibrate(otherWorldRun(), calibrationVariants()), "other")
	if err := WriteCalibration(dir, r, c, time.Date(2026, 12, 6, 1, 2, 3, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	for _, w := range []string{"<title>bootproof calibration</title>", `id="calibration-headline"`, `id="calibration-matrix"`, `id="variants"`, `<a class="caught" href="#case-0">✔</a>`,
		`<a class="extra" href="#case-3">&#43;</a>`, `<div class="case" id="case-3">`, `id="worlds"`, `<tr class="bad"><td>a</td>`} {
		if !strings.Contains(page, w) {
			t.Errorf("index.html lacks %q", w)
		}
	}
	for _, w := range []string{`id="summary"`, `id="matrix"`, "passed, "} {
		if strings.Contains(page, w) {
			t.Errorf("index.html of a calibration has the run's %q", w)
		}
	}
	for _, f := range []string{CalibrationJSONFile, CalibrationMDFile, ResultsFile, JUnitFile, SummaryFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	// Rewrite judges again from calibration.json: the same result.
	if err := os.Remove(filepath.Join(dir, CalibrationMDFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := Rewrite(dir); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, CalibrationJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var back CalibrationResult
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if CalibrationMarkdown(back) != CalibrationMarkdown(c) {
		t.Errorf("rewritten calibration differs:\n%s\nwant\n%s", CalibrationMarkdown(back), CalibrationMarkdown(c))
	}
	if _, err := os.Stat(filepath.Join(dir, CalibrationMDFile)); err != nil {
		t.Errorf("Rewrite did not write calibration.md again: %v", err)
	}
}

// TestCalibrationHTMLGolden renders a calibration's index.html for fixed
// results and a fixed time and compares it with
// testdata/calibration.html.golden.
func TestCalibrationHTMLGolden(t *testing.T) {
	r := calibrationRun()
	c := Calibrate(r, calibrationVariants())
	c.World = WorldDeployment
	c.CompareWith(Calibrate(otherWorldRun(), calibrationVariants()), "_output/calibration")
	html, err := RenderCalibrationHTML(r, c, time.Date(2026, 12, 6, 1, 2, 3, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "calibration.html.golden", html)
}
