package mutate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIsKill(t *testing.T) {
	for _, tc := range []struct {
		c    Case
		want bool
	}{
		{Case{Verdict: "fail", Observed: "fail", Failed: []string{"reload"}}, true},
		{Case{Verdict: "error", Observed: "error", Message: "invalid run: worker pods still active"}, false},
		{Case{Verdict: "fail", Observed: "fail"}, false}, // no judged assertion named
		{Case{Verdict: "pass", Observed: "pass"}, false},
	} {
		if got := isKill(tc.c); got != tc.want {
			t.Errorf("isKill(%+v) = %v, want %v", tc.c, got, tc.want)
		}
	}
}

func TestReportScoreAndOK(t *testing.T) {
	kill := &Case{Scenario: "fast-reboot-0.1g", Verdict: "fail", Observed: "fail", Failed: []string{"reload"}}
	res := func(id int, st Status) Result {
		r := Result{Mutant: Mutant{ID: id, File: "kmm/x.go", Line: id, Operator: OpNegate, Original: "a == b", Replacement: "a != b"}, Status: st}
		if st == Killed {
			r.KilledBy = kill
		}
		return r
	}
	base := []Result{res(1, Killed), res(2, Killed), res(3, Killed), res(4, Equivalent), res(5, Unobservable), res(6, NotCompiling)}
	for _, tc := range []struct {
		name   string
		extra  []Result
		score  string
		ok90   bool
		sound  bool
		inText string
	}{
		{"all killable killed", nil, "100.0 % (3 of 3)", true, true, "Kill matrix"},
		{"a known gap", []Result{res(7, Gap)}, "75.0 % (3 of 4)", false, true, "Known gaps (1)"},
		{"an unexplained survivor", []Result{res(7, Survived), res(8, Killed), res(9, Killed), res(10, Killed), res(11, Killed), res(12, Killed), res(13, Killed), res(14, Killed)}, "90.9 % (10 of 11)", false, true, "Survivors (not explained) (1)"},
		{"mislabelled", []Result{res(7, Mislabelled)}, "75.0 % (3 of 4)", false, false, "Mislabelled (1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Generated: 20, Scenarios: []string{"fast-reboot-0.1g"}, Results: append(append([]Result(nil), base...), tc.extra...)}
			r.Summarize()
			if r.Score.String() != tc.score {
				t.Errorf("score %s, want %s", r.Score, tc.score)
			}
			if r.OK(90) != tc.ok90 {
				t.Errorf("OK(90) = %v, want %v", r.OK(90), tc.ok90)
			}
			if r.Sound() != tc.sound {
				t.Errorf("Sound() = %v, want %v", r.Sound(), tc.sound)
			}
			if r.ScenarioKills["fast-reboot-0.1g"] != r.Counts[Killed] {
				t.Errorf("scenario kills %v, killed %d", r.ScenarioKills, r.Counts[Killed])
			}
			dir := t.TempDir()
			if err := r.Write(dir); err != nil {
				t.Fatal(err)
			}
			md, err := os.ReadFile(filepath.Join(dir, ReportMDFile))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(md), tc.inText) || !strings.Contains(string(md), tc.score) {
				t.Errorf("mutate.md lacks %q or the score %s:\n%s", tc.inText, tc.score, md)
			}
			if _, err := os.Stat(filepath.Join(dir, ReportJSONFile)); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestTriagedButKilledFailsTheRun(t *testing.T) {
	r := &Report{Results: []Result{{Mutant: Mutant{ID: 1}, Status: Killed, TriagedButKilled: true, KilledBy: &Case{Scenario: "s", Failed: []string{"reload"}}}}}
	r.Summarize()
	if r.OK(0) {
		t.Errorf("a run whose triage calls a killed mutant equivalent is OK")
	}
	if r.Sound() {
		t.Errorf("a run whose triage calls a killed mutant equivalent is sound (--allow-survivors would pass it)")
	}
	if !strings.Contains(r.Markdown(), "Triage contradicted (1)") {
		t.Errorf("mutate.md does not name the contradicted entry")
	}
}

func TestReportCountsCasesRunAgain(t *testing.T) {
	r := &Report{
		Baseline: []Case{{Scenario: "a", Verdict: "pass", ErrorBefore: "invalid run: no renewal of its Lease was seen"}},
		Results: []Result{{Mutant: Mutant{ID: 1}, Status: Mislabelled, Cases: []Case{
			{Scenario: "a", Verdict: "error", ErrorBefore: "invalid run"},
			{Scenario: "b", Verdict: "pass"},
		}}},
	}
	r.Summarize()
	if again, erred := r.rerun(); again != 2 || erred != 1 {
		t.Errorf("rerun() = %d, %d; want 2 cases run again, 1 erring again", again, erred)
	}
	if md := r.Markdown(); !strings.Contains(md, "2 case(s) ended in an error") || !strings.Contains(md, "1 ended in an error again") {
		t.Errorf("mutate.md does not count the cases run again:\n%s", md)
	}
}
