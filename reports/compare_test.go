package reports

import (
	"testing"

	"github.com/bootproof/bootproof/scenarios"
)

func TestCompareSubjects(t *testing.T) {
	c := func(scenario, subject, observed string, failed ...string) scenarios.CaseResult {
		r := scenarios.CaseResult{Scenario: scenario, Subject: subject, Observed: observed,
			Assertions: []scenarios.AssertionResult{{Name: "precondition", OK: true}}}
		for _, f := range failed {
			r.Assertions = append(r.Assertions, scenarios.AssertionResult{Name: f})
		}
		return r
	}
	r := scenarios.Results{Cases: []scenarios.CaseResult{
		c("fast", "dep", "fail", "reload"), c("fast", "exec", "fail", "reload"),
		c("blip", "dep", "fail", "no-extra-work"), c("blip", "exec", "fail", "reload"),
		c("slow", "dep", "pass"), c("slow", "exec", "pass"),
		c("storm", "dep", "error"), c("storm", "exec", "pass"),
		c("only-exec", "exec", "pass"),
		c("slow", "other", "fail", "reload"),
	}}
	n, diffs, err := CompareSubjects(r, "dep", "exec")
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("compared %d scenarios, want 4", n)
	}
	got := map[string]string{}
	for _, d := range diffs {
		got[d.Scenario] = d.A.String() + " / " + d.B.String()
	}
	want := map[string]string{"blip": "fail:no-extra-work / fail:reload", "storm": "error / pass", "only-exec": "not run / pass"}
	if len(got) != len(want) {
		t.Fatalf("differences %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if _, _, err := CompareSubjects(r, "dep", "nobody"); err == nil {
		t.Error("a subject with no cases was accepted")
	}
}
