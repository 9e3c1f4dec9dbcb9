package mutate

import (
	"context"
	"testing"

	"golang.org/x/sync/semaphore"

	"github.com/bootproof/bootproof/scenarios"
)

// scriptedRunner answers each Run with the next verdict of its script.
type scriptedRunner struct {
	verdicts []string
	runs     int
}

func (r *scriptedRunner) Run(context.Context, *scenarios.Scenario, scenarios.Subject) scenarios.CaseResult {
	v := r.verdicts[min(r.runs, len(r.verdicts)-1)]
	r.runs++
	return scenarios.CaseResult{Verdict: v, Observed: v, Message: v + " of attempt " + string(rune('0'+r.runs))}
}

// TestAnErrorRunsTheCaseOnceMore: a case that ends in an error (no
// verdict) runs once more, whatever its scenario, and the second
// attempt's verdict is the case's; the first error is kept.
func TestAnErrorRunsTheCaseOnceMore(t *testing.T) {
	for _, tc := range []struct {
		name     string
		verdicts []string
		runs     int
		verdict  string
		before   bool
	}{
		{"a pass runs once", []string{scenarios.Pass}, 1, scenarios.Pass, false},
		{"a fail runs once", []string{scenarios.Fail}, 1, scenarios.Fail, false},
		{"an error, then a fail", []string{scenarios.Error, scenarios.Fail}, 2, scenarios.Fail, true},
		{"an error, then a pass", []string{scenarios.Error, scenarios.Pass}, 2, scenarios.Pass, true},
		{"two errors", []string{scenarios.Error, scenarios.Error, scenarios.Pass}, 2, scenarios.Error, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &scriptedRunner{verdicts: tc.verdicts}
			j := &judge{eng: r, slots: semaphore.NewWeighted(1), nodes: semaphore.NewWeighted(1)}
			c, ok := j.runCase(context.Background(), &scenarios.Scenario{Name: "s", Nodes: 1}, nil)
			if !ok {
				t.Fatal("runCase: not ok")
			}
			if r.runs != tc.runs || c.Verdict != tc.verdict || (c.ErrorBefore != "") != tc.before {
				t.Errorf("%d runs, verdict %s, error before %q; want %d runs, verdict %s, an error before: %v", r.runs, c.Verdict, c.ErrorBefore, tc.runs, tc.verdict, tc.before)
			}
		})
	}
}

func TestOnlyAnEquivalentEntryIsContradictedByAKill(t *testing.T) {
	for _, tc := range []struct {
		entry *TriageEntry
		want  bool
	}{
		{nil, false},
		{&TriageEntry{kind: KindEquivalent}, true},
		{&TriageEntry{kind: KindGap}, false},
	} {
		if got := contradicts(tc.entry); got != tc.want {
			t.Errorf("contradicts(%+v) = %v, want %v", tc.entry, got, tc.want)
		}
	}
}
