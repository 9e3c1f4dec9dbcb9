package scenarios

import "github.com/bootproof/bootproof/scenarios/judging"

// The judging vocabulary the engine's results and scenario files speak:
// each name is defined once, in package judging, and re-exported here
// for the engine's users (results.json, reports, subject files).

// Verdict values of results.json and JUnit.
const (
	Pass    = judging.Pass
	Fail    = judging.Fail
	Error   = judging.Error
	Skipped = judging.Skipped
)

// Assertion names (see judging).
const (
	AssertPrecondition    = judging.AssertPrecondition
	AssertInitialLoad     = judging.AssertInitialLoad
	AssertWorker          = judging.AssertWorker
	AssertReload          = judging.AssertReload
	AssertReloadSLO       = judging.AssertReloadSLO
	AssertNoExtraWork     = judging.AssertNoExtraWork
	AssertConsistency     = judging.AssertConsistency
	AssertStatusAfterLoad = judging.AssertStatusAfterLoad
	AssertWorkersFinish   = judging.AssertWorkersFinish
	AssertSubjectRuns     = judging.AssertSubjectRuns
)

// Prerequisites and Judged: see judging.
var (
	Prerequisites = judging.Prerequisites
	Judged        = judging.Judged
)

// Preconditions a scenario may claim (see judging.Precondition).
const (
	PreconditionFast     = judging.PreconditionFast
	PreconditionSlow     = judging.PreconditionSlow
	PreconditionRecorded = judging.PreconditionRecorded
)

// LabelNoReboot marks a negative control that must see no reboot at all
// (see judging.Unplanned).
const LabelNoReboot = judging.LabelNoReboot

// Types of results.json and of the observer's record, defined in
// package judging.
type (
	Precondition    = judging.Precondition
	AssertionResult = judging.AssertionResult
	ReloadLatency   = judging.ReloadLatency
	RebootMetric    = judging.RebootMetric
	StatusEntry     = judging.StatusEntry
	ActionCount     = judging.ActionCount
	Detail          = judging.Detail
)

// DetailsShown is how many details an assertion's message names (see
// judging.Summarize); the rest are only in its Details.
const DetailsShown = judging.DetailsShown

// Preconditions lists every precondition.
func Preconditions() []Precondition { return judging.Preconditions() }
