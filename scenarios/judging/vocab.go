package judging

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Verdict values of results.json and JUnit.
const (
	Pass    = "pass"
	Fail    = "fail"
	Error   = "error"
	Skipped = "skipped"
)

// Assertion names.
//
// initial-load and worker judge the waits that bring a case to the state
// its disruptions are about: the reload waits before the case's first
// node disruption (the subject's first load) and the worker-pod waits.
// reload judges the reload waits after a disruption: a reload that never
// came by a wait's timeout is missed; reload-slo judges the ones that
// came against the subject's service level: a reload after it is late. A case that fails
// initial-load or worker never reached that state, so what its later
// assertions saw says nothing about reboots: Decide accepts an expected
// failure through them only where the expectation names them
// (Prerequisites).
const (
	AssertPrecondition = "precondition"
	AssertInitialLoad  = "initial-load"
	AssertWorker       = "worker"
	AssertReload       = "reload"
	// AssertReloadSLO: every reload that came, came within the
	// service level (see JudgeReloadSLO).
	AssertReloadSLO   = "reload-slo"
	AssertNoExtraWork = "no-extra-work"
	AssertConsistency = "consistency"
	// AssertStatusAfterLoad: no status claim leads the kernel (see
	// JudgeStatusAfterLoad).
	AssertStatusAfterLoad = "status-after-load"
	// AssertWorkersFinish: every worker pod the subject made ended
	// (Succeeded, Failed or deleted) within the scenario's deadline after
	// the timeline (see JudgeWorkersFinish).
	AssertWorkersFinish = "workers-finish"
	// AssertSubjectRuns: the subject did not stop by its own doing
	// during the case (see JudgeSubjectRuns). It shows in a case's
	// results only when it failed.
	AssertSubjectRuns = "subject-runs"
)

// Prerequisites are the assertions about the state a case must reach
// before its disruptions mean anything (see the assertion names).
var Prerequisites = []string{AssertInitialLoad, AssertWorker}

// Judged lists the assertions a subject can fail through: a violated
// precondition makes the run invalid (an error), never a failure.
var Judged = []string{AssertInitialLoad, AssertWorker, AssertReload, AssertReloadSLO, AssertNoExtraWork, AssertConsistency, AssertStatusAfterLoad,
	AssertWorkersFinish, AssertSubjectRuns}

// Precondition is what a scenario claims about the nodes' Ready
// condition, which the precondition assertion checks: that the run
// tested what the scenario is about.
type Precondition string

// Preconditions.
const (
	// PreconditionFast: Ready never leaves True (a reboot inside the
	// grace period).
	PreconditionFast Precondition = "fast"
	// PreconditionSlow: Ready leaves True for every disruption.
	PreconditionSlow Precondition = "slow"
	// PreconditionRecorded: observed and reported, not required.
	PreconditionRecorded Precondition = "recorded"
)

// Preconditions lists every precondition.
func Preconditions() []Precondition {
	return []Precondition{PreconditionFast, PreconditionSlow, PreconditionRecorded}
}

// AssertionResult is one assertion's outcome.
type AssertionResult struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Message string `json:"message,omitempty"`
	// NotJudged names a part of the assertion that was left out, and why:
	// consistency's boot part where the subject's API has no boot IDs.
	// Reports show it beside the verdict, so a pass that judged less is
	// never mistaken for a whole one.
	NotJudged string `json:"not_judged,omitempty"`
	// Reloads, for a reload assertion that holds, is every reload it
	// judged: each node's latency in each new boot.
	Reloads []ReloadLatency `json:"reloads,omitempty"`
	// Details, for an assertion that failed, is all of its evidence, per
	// node; Message names only the first few (see Summarize).
	Details []Detail `json:"details,omitempty"`
}

// ReloadLatency is one reload a case saw: a node loading its modules in
// a new boot.
type ReloadLatency struct {
	Node   string `json:"node"`
	BootID string `json:"boot_id"`
	// LatencyMS is from the new boot being visible in the API to every
	// module of the node's spec loaded in it (the kernel's ground truth).
	LatencyMS int64 `json:"latency_ms"`
	// WindowMS is from the reload's window opening (the new boot
	// visible, the subject able to act: see Wait.SLO) to the same load:
	// what the service level judges.
	WindowMS int64 `json:"window_ms"`
	// SLOMS is the service level the reload was judged against; Late
	// says it came after it.
	SLOMS int64 `json:"slo_ms,omitempty"`
	Late  bool  `json:"late,omitempty"`
	// WaitMS is the timeout of the wait that saw the reload (the
	// scenario's deadline, or the wait's own): a reload not there by
	// then is missed.
	WaitMS int64 `json:"wait_ms,omitempty"`
}

// RebootMetric describes one reboot of one node.
type RebootMetric struct {
	Node      string `json:"node"`
	OldBootID string `json:"old_boot_id"`
	NewBootID string `json:"new_boot_id"`
	// Planned is false for a boot ID change no action asked for (a VM
	// reset from outside, a node that crashed): StartMS is then when the
	// new boot was first seen, and DowntimeMS is -1 (unknown).
	Planned      bool  `json:"planned"`
	DowntimeMS   int64 `json:"downtime_ms"`
	NotReadySeen bool  `json:"not_ready_seen"`
	// Latencies from the new bootID being visible in the API; -1 when it
	// did not happen.
	DetectionLatencyMS int64 `json:"detection_latency_ms"`
	ReloadLatencyMS    int64 `json:"reload_latency_ms"`
	StartMS            int64 `json:"start_ms"`
	BootVisibleMS      int64 `json:"boot_visible_ms"`
}

// UnmarshalJSON reads a RebootMetric; one written before unplanned reboots
// were reported has no "planned" and was planned.
func (m *RebootMetric) UnmarshalJSON(data []byte) error {
	type plain RebootMetric
	p := plain{Planned: true}
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*m = RebootMetric(p)
	return nil
}

// Expectation is the outcome a subject should get in a scenario: pass,
// or fail through one of the named assertions (through any assertion
// when none are named).
type Expectation struct {
	// Outcome is Pass or Fail.
	Outcome string
	// Assertions, with Fail, are the assertions the subject may fail
	// through; failing through another one is an error (the case failed
	// for the wrong reason). Empty: any assertion.
	Assertions []string
	// Source says where the expectation was stated, for messages.
	Source string
}

// ExpectationSyntax is the form ParseExpectation accepts, for error
// messages.
var ExpectationSyntax = "pass, fail, or fail:<assertion>[,<assertion>...] with assertions " + strings.Join(Judged, ", ")

// ParseExpectation reads "pass", "fail" or "fail:reload,no-extra-work".
func ParseExpectation(s string) (Expectation, error) {
	s = strings.TrimSpace(s)
	outcome, list, hasList := strings.Cut(s, ":")
	switch {
	case outcome == Pass && !hasList:
		return Expectation{Outcome: Pass}, nil
	case outcome == Fail && !hasList:
		return Expectation{Outcome: Fail}, nil
	case outcome == Fail:
		e := Expectation{Outcome: Fail}
		for _, a := range strings.Split(list, ",") {
			a = strings.TrimSpace(a)
			if !slices.Contains(Judged, a) {
				return Expectation{}, fmt.Errorf("%q: unknown assertion %q: accepted: %s", s, a, ExpectationSyntax)
			}
			if slices.Contains(e.Assertions, a) {
				return Expectation{}, fmt.Errorf("%q: assertion %s listed twice", s, a)
			}
			e.Assertions = append(e.Assertions, a)
		}
		return e, nil
	}
	return Expectation{}, fmt.Errorf("%q: accepted: %s", s, ExpectationSyntax)
}

// String is the form ParseExpectation reads.
func (e Expectation) String() string {
	if e.Outcome == Fail && len(e.Assertions) > 0 {
		return Fail + ":" + strings.Join(e.Assertions, ",")
	}
	return e.Outcome
}

// HumanMS renders a duration in milliseconds for a person, the one
// rounding every message and report uses: "529 ms" under a second,
// "5.3 s" under ten seconds, "42 s" under a minute, then "2 min 5 s" and
// "1 h 3 min".
func HumanMS(ms int64) string {
	if ms < 1000 {
		return fmt.Sprintf("%d ms", ms)
	}
	if tenths := math.Round(float64(ms) / 100); tenths < 100 {
		return fmt.Sprintf("%.1f s", tenths/10)
	}
	s := int64(math.Round(float64(ms) / 1000))
	switch {
	case s < 60:
		return fmt.Sprintf("%d s", s)
	case s < 3600:
		if s%60 == 0 {
			return fmt.Sprintf("%d min", s/60)
		}
		return fmt.Sprintf("%d min %d s", s/60, s%60)
	}
	m := (s + 30) / 60
	if m%60 == 0 {
		return fmt.Sprintf("%d h", m/60)
	}
	return fmt.Sprintf("%d h %d min", m/60, m%60)
}

// HumanDuration is HumanMS for a time.Duration.
func HumanDuration(d time.Duration) string { return HumanMS(d.Milliseconds()) }

// Short is a boot ID's first 8 characters, for messages.
func Short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
