package scenarios

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/bootproof/bootproof/scenarios/trace"
)

// Results is the content of results.json.
type Results struct {
	// Environment describes the run as a whole (accelerator, guest
	// kernel, grace period), shown in every report.
	Environment map[string]string `json:"environment,omitempty"`
	Cases       []CaseResult      `json:"cases"`
}

// EnvironmentLine renders Environment as "key=value, ..." sorted by key
// ("" when empty).
func (r Results) EnvironmentLine() string {
	keys := make([]string, 0, len(r.Environment))
	for k := range r.Environment {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + r.Environment[k]
	}
	return strings.Join(parts, ", ")
}

// CaseResult is one scenario x subject x node backend x cluster.
type CaseResult struct {
	Scenario    string   `json:"scenario"`
	Description string   `json:"description,omitempty"`
	Labels      []string `json:"labels,omitempty"`
	Subject     string   `json:"subject"`
	Cluster     string   `json:"cluster"`
	Nodes       string   `json:"nodes"`
	NodeCount   int      `json:"node_count"`
	// Attempt is which repetition of its scenario x subject the case is,
	// 1 to N with 'run --repeat N'; 0 when each ran once.
	Attempt int `json:"attempt,omitempty"`
	// Expected and Observed are pass or fail (observed may be error).
	Expected string `json:"expected"`
	// ExpectedAssertions, with Expected fail, are the assertions the
	// subject must fail through (any when empty).
	ExpectedAssertions []string `json:"expected_assertions,omitempty"`
	Observed           string   `json:"observed"`
	// Verdict compares them: pass when they agree; error for an invalid
	// run or an infrastructure fault; skipped when a capability is missing.
	Verdict string `json:"verdict"`
	// Message explains the verdict.
	Message string `json:"message,omitempty"`
	// Notes say how the case was run where that matters to read it (it
	// ran alone because it pauses a subject other cases share).
	Notes []string `json:"notes,omitempty"`
	// StartedAt is when the case started.
	StartedAt     time.Time `json:"started_at,omitzero"`
	DurationMS    int64     `json:"duration_ms"`
	GracePeriodMS int64     `json:"grace_period_ms"`
	// ReloadBound is the reload service level the case judged with: the
	// scenario's rule, the same for every subject, or the level the
	// subject or the run set (nil for a case that did not run).
	ReloadBound *ReloadBoundResult `json:"reload_bound,omitempty"`
	Assertions  []AssertionResult  `json:"assertions"`
	Reboots     []RebootMetric     `json:"reboots"`
	Trace       []trace.Event      `json:"-"`
}

// Unjudged lists the parts of the case's assertions that were left out:
// "consistency: boot part not judged: ...".
func (c CaseResult) Unjudged() []string {
	var out []string
	for _, a := range c.Assertions {
		if a.NotJudged != "" {
			out = append(out, a.Name+": "+a.NotJudged)
		}
	}
	return out
}

// ReloadBoundResult is the reload service level a case ran with
// (ReloadBound, or a fixed one) and the deadline that makes a reload
// missed.
type ReloadBoundResult struct {
	// Rule is the scenario's rule, "10 x the slowest load measured, at
	// least 15s", or the fixed service level ("20 s") with FixedBy.
	Rule string `json:"rule"`
	// FixedBy, for a fixed service level, says who set it:
	// "--reload-slo", "the subject's reloadSLO".
	FixedBy string `json:"fixed_by,omitempty"`
	// FirstLoadMS is the case's measured first load; -1 when it was not
	// measured (no wait held before a reboot), and then every reload had
	// the rule's floor.
	FirstLoadMS int64 `json:"first_load_ms"`
	// BoundMS is the service level a reload got after the case's last
	// reload (sized by the slowest load measured); FirstBoundMS is the
	// one the first reload got (sized by the first load alone).
	BoundMS      int64 `json:"bound_ms"`
	FirstBoundMS int64 `json:"first_bound_ms,omitempty"`
	// SlowestReloadMS is the slowest reload a held wait measured (0: none).
	SlowestReloadMS int64 `json:"slowest_reload_ms,omitempty"`
	// DeadlineMS is the scenario's deadline: a reload wait's timeout
	// unless the action sets its own; a reload not there by then is
	// missed.
	DeadlineMS int64 `json:"deadline_ms"`
}

// String says what the service level was: "15s (10 x the slowest load
// measured, at least 15s: first load 520ms); missed after the deadline
// 30s".
func (b ReloadBoundResult) String() string {
	return b.Format(func(d time.Duration) string { return d.String() })
}

// Format writes the service level with format for its durations (a
// report's rounding, say).
func (b ReloadBoundResult) Format(format func(time.Duration) string) string {
	ms := func(v int64) string { return format(time.Duration(v) * time.Millisecond) }
	missed := "; missed after the deadline " + ms(b.DeadlineMS)
	switch {
	case b.FixedBy != "":
		return fmt.Sprintf("%s (set by %s)%s", ms(b.BoundMS), b.FixedBy, missed)
	case b.FirstLoadMS < 0:
		return fmt.Sprintf("%s (%s; no first load was measured before a reboot)%s", ms(b.BoundMS), b.Rule, missed)
	case b.SlowestReloadMS > b.FirstLoadMS:
		return fmt.Sprintf("%s (%s: first load %s, slowest reload %s)%s", ms(b.BoundMS), b.Rule, ms(b.FirstLoadMS), ms(b.SlowestReloadMS), missed)
	}
	return fmt.Sprintf("%s (%s: first load %s)%s", ms(b.BoundMS), b.Rule, ms(b.FirstLoadMS), missed)
}

// CaseTrace is one case's trace in trace.json.
type CaseTrace struct {
	Case   string        `json:"case"`
	Events []trace.Event `json:"events"`
}
