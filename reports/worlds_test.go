package reports

import (
	"slices"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/scenarios"
)

// otherWorldRun is calibrationRun's variants judged in another world: a
// caught in each listed scenario, n caught in s1 (s2 not run), slow
// passing every case, gone not run.
func otherWorldRun() scenarios.Results {
	return scenarios.Results{Cases: []scenarios.CaseResult{
		calCase("cal-a", "s1", "fail", "pass", "reload"),
		calCase("cal-a", "s2", "fail", "pass", "reload"),
		calCase("cal-a", "s3", "fail", "pass", "reload"),
		calCase("cal-n", "s1", "fail", "pass", "initial-load"),
		calCase("cal-slow", "s1", "pass", "pass"),
		calCase("cal-slow", "s2", "pass", "pass"),
		calCase("cal-slow", "s3", "pass", "pass"),
	}}
}

// TestCompareWorlds: a variant measured in both worlds with different
// verdicts is flagged, one measured in a single world is not compared,
// and the scenarios both ran with different outcomes are named.
func TestCompareWorlds(t *testing.T) {
	this := Calibrate(calibrationRun(), calibrationVariants())
	this.World = WorldDeployment
	other := Calibrate(otherWorldRun(), calibrationVariants())
	other.World = WorldInProcess
	this.CompareWith(other, "_output/calibration")
	w := this.Worlds
	if w == nil {
		t.Fatal("no comparison")
	}
	if !slices.Equal(w.Differ, []string{"a", "n", "slow"}) || !slices.Equal(w.Unmatched, []string{"gone"}) || w.Same() {
		t.Errorf("differ %v, unmatched %v, same %v; want [a n slow], [gone], false", w.Differ, w.Unmatched, w.Same())
	}
	want := map[string][]WorldScenario{
		"a":    {{Scenario: "s2", This: CellMissed, Other: CellCaught}},
		"n":    nil, // s2 ran in this world only
		"slow": {{Scenario: "s2", This: CellNoVerdict, Other: CellPassed}, {Scenario: "s3", This: CellFailed, Other: CellPassed}},
		"gone": nil,
	}
	verdicts := map[string][2]string{"a": {VerdictNotCaught, VerdictCaught}, "n": {VerdictNotCaught, VerdictCaught},
		"slow": {VerdictFailed, VerdictPassed}, "gone": {VerdictNotMeasured, VerdictNotMeasured}}
	for _, r := range w.Rows {
		if !slices.Equal(r.Scenarios, want[r.Variant]) {
			t.Errorf("%s: scenarios %v, want %v", r.Variant, r.Scenarios, want[r.Variant])
		}
		if v := verdicts[r.Variant]; r.This != v[0] || r.Other != v[1] {
			t.Errorf("%s: verdicts %s / %s, want %s / %s", r.Variant, r.This, r.Other, v[0], v[1])
		}
	}
	if w.This.World != WorldDeployment || w.Other.World != WorldInProcess || w.Other.Source != "_output/calibration" {
		t.Errorf("worlds %s, %s (%s)", w.This.World, w.Other.World, w.Other.Source)
	}
	for _, s := range []string{CalibrationHeadline(this), CalibrationMarkdown(this)} {
		if !strings.Contains(s, "verdict not as in the in-process world for 3 of 3 variant(s): a, n, slow; not measured in both: gone") {
			t.Errorf("the comparison's line is missing from:\n%s", s)
		}
	}
	md := CalibrationMarkdown(this)
	for _, line := range []string{"| a | defect | not caught | caught | ❌ differs |", "| gone | defect | not measured | not measured | – not compared |",
		"* slow in s3: failed here, passed in the in-process world"} {
		if !strings.Contains(md, line) {
			t.Errorf("calibration.md lacks %q", line)
		}
	}

	// The same calibration in both worlds: nothing flagged.
	same := Calibrate(otherWorldRun(), calibrationVariants()[:3])
	same.CompareWith(Calibrate(otherWorldRun(), calibrationVariants()[:3]), "elsewhere")
	if !same.Worlds.Same() || len(same.Worlds.Rows) != 3 || WorldsLine(*same.Worlds) != "same verdict as in the in-process world for 3 of 3 variant(s)" {
		t.Errorf("same calibration: %+v, %q", same.Worlds, WorldsLine(*same.Worlds))
	}
}
