package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/reports"
	"github.com/bootproof/bootproof/scenarios"
)

// TestCalibrationExit: the exit code of a judged calibration. A variant
// that measured nothing (none of its listed scenarios ran) is an error
// of the calibration (ExitInfra), named with its scenarios, even when
// everything else was caught; a miss is a failure (ExitFailed); an
// interrupted run is ExitInfra whatever it judged.
func TestCalibrationExit(t *testing.T) {
	bad := reports.CalibrationVariant{Subject: "cal-bad", Variant: "bad", Kind: reports.KindDefect,
		Listed: []reports.ListedScenario{{Scenario: "s1", Expect: "fail:reload", Assertions: []string{"reload"}}}}
	gone := reports.CalibrationVariant{Subject: "cal-gone", Variant: "gone", Kind: reports.KindDefect,
		Listed: []reports.ListedScenario{{Scenario: "s9", Expect: "fail:reload", Assertions: []string{"reload"}}}}
	caught := scenarios.CaseResult{Subject: "cal-bad", Scenario: "s1", Observed: scenarios.Fail, Verdict: scenarios.Pass,
		Assertions: []scenarios.AssertionResult{{Name: "reload"}}}
	missed := caught
	missed.Observed, missed.Verdict, missed.Assertions = scenarios.Pass, scenarios.Fail, nil
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		cases    []scenarios.CaseResult
		variants []reports.CalibrationVariant
		code     int
		say      string
	}{
		{"caught", context.Background(), []scenarios.CaseResult{caught}, []reports.CalibrationVariant{bad}, ExitOK, ""},
		{"missed", context.Background(), []scenarios.CaseResult{missed}, []reports.CalibrationVariant{bad}, ExitFailed, "0 of 1 known-bad variants caught"},
		{"a variant measured nothing", context.Background(), []scenarios.CaseResult{caught}, []reports.CalibrationVariant{bad, gone}, ExitInfra,
			"calibration measured nothing of 1 variant(s), an error of the calibration, not a zero: variant gone: none of its listed scenarios ran (s9)"},
		{"interrupted", cancelled, []scenarios.CaseResult{caught}, []reports.CalibrationVariant{bad}, ExitInfra, "interrupted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			rc := &runContext{s: Streams{Out: &out, Err: &out}}
			err := rc.calibrationExit(tc.ctx, t.TempDir(), reports.Calibrate(scenarios.Results{Cases: tc.cases}, tc.variants))
			code := ExitOK
			var ee *exitError
			if errors.As(err, &ee) {
				code = ee.code
			} else if err != nil {
				t.Fatalf("error without an exit code: %v", err)
			}
			if code != tc.code || (tc.say != "" && !strings.Contains(err.Error(), tc.say)) {
				t.Errorf("exit %d (%v), want %d saying %q", code, err, tc.code, tc.say)
			}
			if !strings.Contains(out.String(), "calibration: ") {
				t.Errorf("the headline was not printed:\n%s", out.String())
			}
		})
	}
}
