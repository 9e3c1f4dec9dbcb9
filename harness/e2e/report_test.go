package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/scenarios"
)

// recorder is a reporter that keeps what report did.
type recorder struct{ logs, errors, skips []string }

func (r *recorder) Helper()                   {}
func (r *recorder) Logf(f string, a ...any)   { r.logs = append(r.logs, fmt.Sprintf(f, a...)) }
func (r *recorder) Errorf(f string, a ...any) { r.errors = append(r.errors, fmt.Sprintf(f, a...)) }
func (r *recorder) Skipf(f string, a ...any)  { r.skips = append(r.skips, fmt.Sprintf(f, a...)) }

// TestReport: only a pass verdict leaves the assessment passing; a
// failed expectation and an unjudged case fail it, naming the case and
// why; a case that could not run skips it with the reason; every case's
// assertions are logged.
func TestReport(t *testing.T) {
	assertions := []scenarios.AssertionResult{{Name: scenarios.AssertReload, Message: "module dummy not loaded in boot b"}}
	for _, tc := range []struct {
		verdict      string
		errors, skip bool
		saying       string
	}{
		{scenarios.Pass, false, false, ""},
		{scenarios.Fail, true, false, "verdict fail: the harness did not catch the bug"},
		{scenarios.Error, true, false, "could not be judged (error): the harness did not catch the bug"},
		{scenarios.Skipped, false, true, "not run: the harness did not catch the bug"},
	} {
		t.Run(tc.verdict, func(t *testing.T) {
			var rec recorder
			report(&rec, scenarios.CaseResult{Scenario: "fast-reboot-0.5g", Subject: "legacy", Observed: scenarios.Pass, Expected: scenarios.Fail,
				Verdict: tc.verdict, Message: "the harness did not catch the bug", Assertions: assertions})
			if len(rec.logs) != 1 || !strings.Contains(rec.logs[0], "reload FAILED: module dummy not loaded in boot b") {
				t.Errorf("logs %q, want the assertions", rec.logs)
			}
			if got := len(rec.errors) > 0; got != tc.errors || (got && !strings.Contains(rec.errors[0], "fast-reboot-0.5g with legacy") ||
				got && !strings.Contains(rec.errors[0], tc.saying)) {
				t.Errorf("errors %q, want errors %v saying %q", rec.errors, tc.errors, tc.saying)
			}
			if got := len(rec.skips) > 0; got != tc.skip || (got && !strings.Contains(rec.skips[0], tc.saying)) {
				t.Errorf("skips %q, want a skip %v saying %q", rec.skips, tc.skip, tc.saying)
			}
		})
	}
}
