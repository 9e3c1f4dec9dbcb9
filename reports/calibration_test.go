package reports

import (
	"strings"
	"testing"

	"github.com/bootproof/bootproof/scenarios"
)

func TestCalibrate(t *testing.T) {
	listed := func(names ...string) func(string) (string, string, bool) {
		return func(s string) (string, string, bool) {
			for _, n := range names {
				if n == s {
					return "fail:reload", "it reboots", true
				}
			}
			return "", "", false
		}
	}
	caseOf := func(subj, scen, observed, verdict string, failed ...string) scenarios.CaseResult {
		c := scenarios.CaseResult{Subject: subj, Scenario: scen, Observed: observed, Verdict: verdict}
		for _, a := range failed {
			c.Assertions = append(c.Assertions, scenarios.AssertionResult{Name: a})
		}
		c.Assertions = append(c.Assertions, scenarios.AssertionResult{Name: "consistency", OK: true,
			Reloads: []scenarios.ReloadLatency{{LatencyMS: 700, WaitMS: 5000}, {LatencyMS: 900, WaitMS: 9000}}})
		return c
	}
	variants := []CalibrationVariant{
		{Subject: "cal-a", Variant: "a", Kind: KindDefect, CaughtWhen: CaughtExpectedFailure, Listed: listed("s1", "s2", "s3")},
		{Subject: "cal-n", Variant: "n", Kind: KindDefect, CaughtWhen: CaughtNotPass, Listed: listed("s1", "s2")},
		{Subject: "cal-slow", Variant: "slow", Kind: KindSlow},
	}
	res := scenarios.Results{Cases: []scenarios.CaseResult{
		caseOf("cal-a", "s1", "fail", "pass", "reload"), // caught
		caseOf("cal-a", "s2", "pass", "fail"),           // missed
		caseOf("cal-a", "s3", "error", "error"),         // no verdict in a listed scenario: missed
		caseOf("cal-a", "s4", "fail", "fail", "reload"), // caught, not listed
		caseOf("cal-a", "s5", "pass", "pass"),           // not listed, not caught
		caseOf("cal-n", "s1", "fail", "error", "initial-load"),
		caseOf("cal-n", "s2", "fail", "pass", "reload"), // met the expectation: not caught
		caseOf("cal-slow", "s1", "pass", "pass"),
		caseOf("cal-slow", "s2", "error", "error"), // no verdict: a failure
		caseOf("cal-slow", "s3", "fail", "fail", "reload"),
		caseOf("cal-other", "s1", "fail", "fail", "reload"), // not a variant: ignored
	}}
	c := Calibrate(res, variants)
	if c.Sensitivity != (Ratio{Count: 2, Total: 5}) || c.Specificity != (Ratio{Count: 1, Total: 3}) || c.ExtraCatches != 1 || c.OK() {
		t.Errorf("sensitivity %v, specificity %v, extra %d, ok %v; want 2 of 5, 1 of 3, 1, false", c.Sensitivity, c.Specificity, c.ExtraCatches, c.OK())
	}
	var got []string
	for _, r := range c.Rows {
		for _, cell := range r.Cells {
			got = append(got, r.Variant+"/"+cell.Scenario+":"+cell.Outcome)
		}
	}
	want := []string{"a/s1:caught", "a/s2:missed", "a/s3:missed", "a/s4:caught, not listed", "a/s5:not listed",
		"n/s1:caught", "n/s2:missed", "slow/s1:passed", "slow/s2:failed", "slow/s3:failed"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("cells\n got %v\nwant %v", got, want)
	}
	md := CalibrationMarkdown(c)
	for _, s := range []string{"❌ sensitivity 40 % (2 of 5), specificity 33 % (1 of 3), 1 extra catch(es)", "| s4 | ➕ |",
		"* s1, s2, s3 — through `fail:reload`: it reboots", "Closest passing reload: 700 ms against its wait's bound of 5.0 s (s1)"} {
		if !strings.Contains(md, s) {
			t.Errorf("calibration.md lacks %q:\n%s", s, md)
		}
	}
	all := Calibrate(scenarios.Results{Cases: []scenarios.CaseResult{caseOf("cal-a", "s1", "fail", "pass", "reload"), caseOf("cal-slow", "s1", "pass", "pass")}}, variants)
	if !all.OK() {
		t.Errorf("every listed case caught and every slow one passed: %s", CalibrationHeadline(all))
	}
	if empty := Calibrate(scenarios.Results{}, variants); empty.OK() {
		t.Errorf("nothing run must not count as calibrated: %s", CalibrationHeadline(empty))
	}
}
