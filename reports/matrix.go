package reports

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bootproof/bootproof/scenarios"
)

// Matrix is the conformance view of a run: a row per scenario, a column
// per subject, each cell one case's verdict.
type Matrix struct {
	Subjects []string
	Rows     []MatrixRow
}

// MatrixRow is one scenario across the subjects.
type MatrixRow struct {
	Scenario string
	// Cells are in Subjects order; a cell without a case has Case -1.
	Cells []MatrixCell
}

// MatrixCell is one scenario x subject.
type MatrixCell struct {
	// Case is the index of the case in Results.Cases, -1 when the pair
	// did not run.
	Case     int
	Verdict  string
	Observed string
	Expected string
	// State is how the reports show the verdict (State).
	State string
	// Figures are the case's latencies; KeyFigure is what the cell shows.
	Figures Figures
	// Unjudged are the parts of the case's assertions left out
	// (CaseResult.Unjudged): the cell says it was partly judged.
	Unjudged []string
	// Runs is how many cases the pair had ('run --repeat'), and Counts
	// how many of them were observed pass, fail, error or skipped. State
	// is then the worst of their states (a failure in any run shows), the
	// other fields the first case's.
	Runs   int
	Counts map[string]int
}

// worse orders states for a cell of several runs: the one to show.
var worse = []string{StateFail, StateError, StateSkipped, StateExpectedFailure, StatePass}

// Repeats says what a cell's runs observed, "fail 3 of 5, pass 2 of 5";
// empty for a pair that ran once.
func (c MatrixCell) Repeats() string {
	if c.Runs < 2 {
		return ""
	}
	var parts []string
	for _, o := range []string{scenarios.Fail, scenarios.Pass, scenarios.Error, scenarios.Skipped} {
		if n := c.Counts[o]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d of %d", o, n, c.Runs))
		}
	}
	return strings.Join(parts, ", ")
}

// BuildMatrix lays out r's cases as scenarios x subjects, both in the
// order they first appear.
func BuildMatrix(r scenarios.Results) Matrix {
	var m Matrix
	row := map[string]int{}
	for _, c := range r.Cases {
		if !slices.Contains(m.Subjects, c.Subject) {
			m.Subjects = append(m.Subjects, c.Subject)
		}
		if _, ok := row[c.Scenario]; !ok {
			row[c.Scenario] = len(m.Rows)
			m.Rows = append(m.Rows, MatrixRow{Scenario: c.Scenario})
		}
	}
	for i := range m.Rows {
		m.Rows[i].Cells = make([]MatrixCell, len(m.Subjects))
		for j := range m.Rows[i].Cells {
			m.Rows[i].Cells[j].Case = -1
		}
	}
	for i, c := range r.Cases {
		cell := &m.Rows[row[c.Scenario]].Cells[slices.Index(m.Subjects, c.Subject)]
		if cell.Case >= 0 {
			// Another run of the pair: counted; the first case stands for
			// it, with the worst state of all.
			cell.Runs++
			cell.Counts[c.Observed]++
			if s := State(c); slices.Index(worse, s) < slices.Index(worse, cell.State) {
				cell.State = s
			}
			continue
		}
		*cell = MatrixCell{Case: i, Verdict: c.Verdict, Observed: c.Observed, Expected: Expected(c), State: State(c), Figures: CaseFigures(c),
			Unjudged: c.Unjudged(), Runs: 1, Counts: map[string]int{c.Observed: 1}}
	}
	return m
}

// Expected renders what a case expected: pass, fail or
// fail:<assertion>,...
func Expected(c scenarios.CaseResult) string {
	return scenarios.Expectation{Outcome: c.Expected, Assertions: c.ExpectedAssertions}.String()
}
