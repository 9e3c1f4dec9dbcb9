package reports

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bootproof/bootproof/scenarios"
)

// States of a case as the reports show it: a verdict, with a pass split
// by what was observed (a subject expected to fail that failed is an
// expected failure).
const (
	StatePass            = "pass"
	StateExpectedFailure = "xfail"
	StateFail            = "fail"
	StateError           = "error"
	StateSkipped         = "skipped"
)

// State is how a report shows c: StatePass, StateExpectedFailure,
// StateFail, StateError or StateSkipped.
func State(c scenarios.CaseResult) string {
	switch c.Verdict {
	case scenarios.Pass:
		if c.Observed == scenarios.Fail {
			return StateExpectedFailure
		}
		return StatePass
	case scenarios.Fail:
		return StateFail
	case scenarios.Error:
		return StateError
	}
	return StateSkipped
}

// stateLook is the glyph (HTML), emoji (Markdown) and words of a state.
type stateLook struct{ glyph, emoji, label, meaning string }

var stateLooks = map[string]stateLook{
	StatePass:            {"✔", "✅", "pass", "observed what was expected of the subject: it passed"},
	StateExpectedFailure: {"✗", "☑️", "expected failure", "the subject failed, through the assertions expected of it (a negative control doing its job)"},
	StateFail:            {"✘", "❌", "fail", "observed something other than what was expected: an unexpected failure, or a pass where a failure was expected (the harness did not catch the bug)"},
	StateError:           {"⚠", "⚠️", "error", "no verdict about the subject: an invalid run or an infrastructure fault"},
	StateSkipped:         {"⊘", "⏭️", "skipped", "not run: a capability is missing or no expectation applies"},
}

// States lists the states in the order a legend shows them.
var States = []string{StatePass, StateExpectedFailure, StateFail, StateError, StateSkipped}

// Glyph is the symbol the HTML report shows for a state.
func Glyph(state string) string { return stateLooks[state].glyph }

// StateLabel names a state in words.
func StateLabel(state string) string { return stateLooks[state].label }

// StateMeaning says what a state means, for a legend.
func StateMeaning(state string) string { return stateLooks[state].meaning }

// Figures are a case's latencies over its reboots, as the reports show
// them.
type Figures struct {
	// Reboots counts every reboot of the case, planned or not.
	Reboots int
	// Reload and Detection are over the reboots where they happened.
	Reload, Detection Distribution
	// NotReloaded and NotDetected count the reboots where they did not.
	NotReloaded, NotDetected int
}

// CaseFigures computes c's figures.
func CaseFigures(c scenarios.CaseResult) Figures {
	f := Figures{Reboots: len(c.Reboots)}
	var det, rel []float64
	for _, m := range c.Reboots {
		if m.DetectionLatencyMS >= 0 {
			det = append(det, float64(m.DetectionLatencyMS))
		} else {
			f.NotDetected++
		}
		if m.ReloadLatencyMS >= 0 {
			rel = append(rel, float64(m.ReloadLatencyMS))
		} else {
			f.NotReloaded++
		}
	}
	f.Reload, f.Detection = Summarize("ms", rel), Summarize("ms", det)
	return f
}

// KeyFigure is the case's figure in a matrix cell: its reload latency
// ("reload 529 ms", with p50 and max over several reboots), "—" with the
// count of reboots without a reload, or "no reboot".
func (f Figures) KeyFigure() string {
	if f.Reboots == 0 {
		return "no reboot"
	}
	s := "reload " + pair(f.Reload)
	if f.NotReloaded > 0 {
		s += fmt.Sprintf(" (%d of %d not reloaded)", f.NotReloaded, f.Reboots)
	}
	return s
}

// pair renders a distribution as "p50 / max" ("529 ms / 1.2 s"), one
// value when they are equal, or Absent when it is empty.
func pair(d Distribution) string {
	if d.Count == 0 {
		return Absent
	}
	p50, mx := formatMSFloat(d.P50), formatMSFloat(d.Max)
	if p50 == mx {
		return p50
	}
	return p50 + " / " + mx
}

// SubjectSummary is one subject's line at the top of a report.
type SubjectSummary struct {
	Subject string
	// Cases counts the subject's cases; AsExpected those with verdict
	// pass, of which ExpectedFailures failed as expected.
	Cases, AsExpected, ExpectedFailures int
	// The scenarios of the other cases, by how they went.
	UnexpectedFailures, UnexpectedPasses, Errors, Skipped []string
}

// Summaries computes a summary per subject, in the order subjects first
// appear in r.
func Summaries(r scenarios.Results) []SubjectSummary {
	var out []SubjectSummary
	for _, c := range r.Cases {
		i := slices.IndexFunc(out, func(s SubjectSummary) bool { return s.Subject == c.Subject })
		if i < 0 {
			out = append(out, SubjectSummary{Subject: c.Subject})
			i = len(out) - 1
		}
		s := &out[i]
		s.Cases++
		switch State(c) {
		case StatePass:
			s.AsExpected++
		case StateExpectedFailure:
			s.AsExpected++
			s.ExpectedFailures++
		case StateFail:
			if c.Observed == scenarios.Pass {
				s.UnexpectedPasses = append(s.UnexpectedPasses, c.Scenario)
			} else {
				s.UnexpectedFailures = append(s.UnexpectedFailures, c.Scenario)
			}
		case StateError:
			s.Errors = append(s.Errors, c.Scenario)
		default:
			s.Skipped = append(s.Skipped, c.Scenario)
		}
	}
	return out
}

// Line renders the summary: "kmm-upstream: 16 of 21 as expected; 5
// unexpected failures: double-reboot, ...".
func (s SubjectSummary) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of %d as expected", s.Subject, s.AsExpected, s.Cases)
	if s.ExpectedFailures > 0 {
		fmt.Fprintf(&b, " (%s)", plural(s.ExpectedFailures, "expected failure", "expected failures"))
	}
	for _, part := range []struct {
		names       []string
		one, many   string
		explanation string
	}{
		{s.UnexpectedFailures, "unexpected failure", "unexpected failures", ""},
		{s.UnexpectedPasses, "unexpected pass", "unexpected passes", " (the harness did not catch the bug)"},
		{s.Errors, "error", "errors", ""},
		{s.Skipped, "skipped", "skipped", ""},
	} {
		if len(part.names) > 0 {
			fmt.Fprintf(&b, "; %s%s: %s", plural(len(part.names), part.one, part.many), part.explanation, strings.Join(part.names, ", "))
		}
	}
	return b.String()
}

// AllAsExpected is true when every case of the subject went as expected.
func (s SubjectSummary) AllAsExpected() bool { return s.AsExpected == s.Cases }

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
