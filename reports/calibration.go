package reports

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bootproof/bootproof/scenarios"
)

// Files of a calibration run ('bootproof calibrate').
const (
	CalibrationJSONFile = "calibration.json"
	CalibrationMDFile   = "calibration.md"
)

// Calibration kinds and how a listed scenario catches a defect.
const (
	KindDefect            = "defect"
	KindSlow              = "slow"
	CaughtExpectedFailure = "expected-failure"
	CaughtNotPass         = "not-pass"
)

// Cell outcomes of a calibration run.
const (
	// A known-bad variant in a scenario listed as able to see its defect.
	CellCaught = "caught"
	CellMissed = "missed"
	// A known-bad variant in a scenario not listed: the defect showed
	// (reported, counted in neither figure) or not.
	CellExtraCatch = "caught, not listed"
	CellNotListed  = "not listed"
	// A known-good variant.
	CellPassed = "passed"
	CellFailed = "failed"
	// A case that gave no verdict (error or skipped): a miss for a listed
	// scenario, a failure for a good variant.
	CellNoVerdict = "no verdict"
)

// CalibrationVariant is one calibration subject, as the report needs it.
type CalibrationVariant struct {
	// Subject is its name in the results.
	Subject string `json:"subject"`
	Variant string `json:"variant"`
	// Kind is KindDefect or KindSlow.
	Kind    string `json:"kind"`
	Summary string `json:"summary"`
	File    string `json:"file"`
	// CaughtWhen is CaughtExpectedFailure or CaughtNotPass.
	CaughtWhen string `json:"caught_when,omitempty"`
	// Listed says whether a scenario is listed as able to see the defect,
	// and then the expectation and the reason.
	Listed func(scenario string) (expect, why string, ok bool) `json:"-"`
}

// CalibrationCell is one case of a calibration run.
type CalibrationCell struct {
	Scenario string `json:"scenario"`
	Attempt  int    `json:"attempt,omitempty"`
	// Listed, Expect and Why: the scenario is listed as able to see the
	// defect, through Expect, for the reason Why.
	Listed   bool   `json:"listed"`
	Expect   string `json:"expect,omitempty"`
	Why      string `json:"why,omitempty"`
	Observed string `json:"observed"`
	// Failed lists the assertions the case failed.
	Failed  []string `json:"failed,omitempty"`
	Verdict string   `json:"verdict"`
	Outcome string   `json:"outcome"`
	Message string   `json:"message,omitempty"`
	// SlowestReloadMS is the reload (the new boot visible to every module
	// loaded in it) that came closest to its wait's timeout, -1 when none
	// was judged; BoundMS that wait's timeout (-1: none).
	SlowestReloadMS int64 `json:"slowest_reload_ms"`
	BoundMS         int64 `json:"bound_ms"`
}

// CalibrationRow is one variant's cells.
type CalibrationRow struct {
	CalibrationVariant
	Cells []CalibrationCell `json:"cells"`
}

// Ratio is a count over a total.
type Ratio struct {
	Count int `json:"count"`
	Total int `json:"total"`
}

// Percent is the ratio in percent (100 for an empty total).
func (r Ratio) Percent() float64 {
	if r.Total == 0 {
		return 100
	}
	return 100 * float64(r.Count) / float64(r.Total)
}

// Full reports a ratio of 100 % over a total of at least one.
func (r Ratio) Full() bool { return r.Total > 0 && r.Count == r.Total }

func (r Ratio) String() string {
	return fmt.Sprintf("%.0f %% (%d of %d)", r.Percent(), r.Count, r.Total)
}

// CalibrationResult is a calibration run judged.
type CalibrationResult struct {
	// Sensitivity: listed scenarios in which a known-bad variant was
	// caught, over all listed scenarios of all known-bad variants.
	Sensitivity Ratio `json:"sensitivity"`
	// Specificity: known-good variants' cases that passed, over all.
	Specificity Ratio `json:"specificity"`
	// ExtraCatches counts known-bad cases caught in a scenario not listed.
	ExtraCatches int `json:"extra_catches"`
	// ListedOnly: the known-bad variants ran only in their listed
	// scenarios (calibrate --listed-only), so catches elsewhere were not
	// looked for; both ratios are measured as without it.
	ListedOnly bool             `json:"listed_only"`
	Rows       []CalibrationRow `json:"variants"`
}

// OK reports sensitivity and specificity both 100 %.
func (c CalibrationResult) OK() bool { return c.Sensitivity.Full() && c.Specificity.Full() }

// Calibrate judges res, a run of the calibration variants, against what
// each variant's truth is.
func Calibrate(res scenarios.Results, variants []CalibrationVariant) CalibrationResult {
	var out CalibrationResult
	for _, v := range variants {
		row := CalibrationRow{CalibrationVariant: v}
		for _, c := range res.Cases {
			if c.Subject != v.Subject {
				continue
			}
			cell := calibrationCell(v, c)
			switch cell.Outcome {
			case CellCaught:
				out.Sensitivity.Count++
				out.Sensitivity.Total++
			case CellMissed:
				out.Sensitivity.Total++
			case CellPassed:
				out.Specificity.Count++
				out.Specificity.Total++
			case CellFailed:
				out.Specificity.Total++
			case CellExtraCatch:
				out.ExtraCatches++
			}
			row.Cells = append(row.Cells, cell)
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}

func calibrationCell(v CalibrationVariant, c scenarios.CaseResult) CalibrationCell {
	cell := CalibrationCell{Scenario: c.Scenario, Attempt: c.Attempt, Observed: c.Observed, Verdict: c.Verdict,
		Message: c.Message, SlowestReloadMS: -1, BoundMS: -1}
	worst := -1.0
	for _, a := range c.Assertions {
		if !a.OK {
			cell.Failed = append(cell.Failed, a.Name)
		}
		for _, r := range a.Reloads {
			if r.WaitMS <= 0 {
				continue
			}
			if f := float64(r.LatencyMS) / float64(r.WaitMS); f > worst {
				worst, cell.SlowestReloadMS, cell.BoundMS = f, r.LatencyMS, r.WaitMS
			}
		}
	}
	noVerdict := c.Verdict == scenarios.Error || c.Verdict == scenarios.Skipped
	if v.Kind == KindSlow {
		// No verdict (error, skipped) counts as a failure; the message
		// says why.
		cell.Outcome = CellFailed
		if c.Verdict == scenarios.Pass && c.Observed == scenarios.Pass {
			cell.Outcome = CellPassed
		}
		return cell
	}
	if v.Listed != nil {
		cell.Expect, cell.Why, cell.Listed = v.Listed(c.Scenario)
	}
	caught := false
	switch v.CaughtWhen {
	case CaughtNotPass:
		caught = c.Verdict == scenarios.Fail || c.Verdict == scenarios.Error
	default:
		caught = c.Verdict == scenarios.Pass && c.Observed == scenarios.Fail
	}
	switch {
	case cell.Listed && caught:
		cell.Outcome = CellCaught
	case cell.Listed:
		cell.Outcome = CellMissed
	case c.Observed == scenarios.Fail:
		cell.Outcome = CellExtraCatch
	case noVerdict:
		cell.Outcome = CellNoVerdict
	default:
		cell.Outcome = CellNotListed
	}
	return cell
}

// WriteCalibration writes calibration.json and calibration.md into dir.
func WriteCalibration(dir string, c CalibrationResult) error {
	if err := writeJSON(filepath.Join(dir, CalibrationJSONFile), c); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, CalibrationMDFile), []byte(CalibrationMarkdown(c)), 0o644)
}

// CalibrationHeadline is the result in one line.
func CalibrationHeadline(c CalibrationResult) string {
	if c.ListedOnly {
		return fmt.Sprintf("sensitivity %s, specificity %s; known-bad variants run only in their listed scenarios (--listed-only)", c.Sensitivity, c.Specificity)
	}
	return fmt.Sprintf("sensitivity %s, specificity %s, %d extra catch(es) in scenarios not listed", c.Sensitivity, c.Specificity, c.ExtraCatches)
}

// CalibrationMarkdown renders the result: the headline, the matrix of
// variant x scenario, then each known-bad variant's listed scenarios with
// their reasons, each slow variant's margin, and every miss or failure.
func CalibrationMarkdown(c CalibrationResult) string {
	var b strings.Builder
	status := "✅"
	if !c.OK() {
		status = "❌"
	}
	fmt.Fprintf(&b, "# bootproof calibration\n\n%s %s\n\n", status, CalibrationHeadline(c))
	b.WriteString("Sensitivity: each known-bad variant caught, through the assertion named, in every scenario listed as able to see its defect. " +
		"Specificity: each known-good (slow) variant's cases that pass. Cells: ✅ caught or passed, ❌ missed or failed, " +
		"➕ caught in a scenario not listed, · not listed and not caught, – not run.\n\n")
	writeCalibrationMatrix(&b, c)
	b.WriteString("\n## Variants\n\n")
	for _, r := range c.Rows {
		fmt.Fprintf(&b, "### %s (%s)\n\n%s. Subject file: `%s`.\n\n", r.Variant, r.Kind, r.Summary, r.File)
		if r.Kind == KindSlow {
			worst, bound, where := slowestMargin(r.Cells)
			if worst >= 0 {
				fmt.Fprintf(&b, "Closest passing reload: %s against its wait's bound of %s (%s).\n\n", FormatMS(worst), FormatMS(bound), where)
			}
		} else {
			seen := map[string]bool{}
			for _, cell := range r.Cells {
				if cell.Listed && !seen[cell.Why] {
					seen[cell.Why] = true
					var names []string
					for _, o := range r.Cells {
						if o.Listed && o.Why == cell.Why && !slices.Contains(names, o.Scenario) {
							names = append(names, o.Scenario)
						}
					}
					fmt.Fprintf(&b, "* %s — through `%s`: %s\n", strings.Join(names, ", "), cell.Expect, cell.Why)
				}
			}
			b.WriteString("\n")
		}
		for _, cell := range r.Cells {
			switch cell.Outcome {
			case CellMissed, CellFailed, CellNoVerdict, CellExtraCatch:
				fmt.Fprintf(&b, "* %s %s%s: %s (observed %s, verdict %s): %s\n", cellMark(cell), cell.Scenario, attemptSuffix(cell.Attempt),
					cell.Outcome, cell.Observed, cell.Verdict, oneLine(cell.Message))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// writeCalibrationMatrix writes the table scenario x variant.
func writeCalibrationMatrix(b *strings.Builder, c CalibrationResult) {
	var scen []string
	for _, r := range c.Rows {
		for _, cell := range r.Cells {
			if !slices.Contains(scen, cell.Scenario) {
				scen = append(scen, cell.Scenario)
			}
		}
	}
	slices.Sort(scen)
	b.WriteString("| scenario |")
	for _, r := range c.Rows {
		fmt.Fprintf(b, " %s |", r.Variant)
	}
	b.WriteString("\n|---|")
	for range c.Rows {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, s := range scen {
		fmt.Fprintf(b, "| %s |", s)
		for _, r := range c.Rows {
			var marks []string
			for _, cell := range r.Cells {
				if cell.Scenario == s {
					marks = append(marks, cellMark(cell))
				}
			}
			if len(marks) == 0 {
				marks = append(marks, "–")
			}
			fmt.Fprintf(b, " %s |", strings.Join(marks, ""))
		}
		b.WriteString("\n")
	}
}

func cellMark(c CalibrationCell) string {
	switch c.Outcome {
	case CellCaught, CellPassed:
		return "✅"
	case CellExtraCatch:
		return "➕"
	case CellNotListed:
		return "·"
	}
	return "❌"
}

func attemptSuffix(a int) string {
	if a == 0 {
		return ""
	}
	return fmt.Sprintf(" #%d", a)
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// slowestMargin is the passing case whose reload came closest to its
// wait's bound: the reload, the bound, and the scenario.
func slowestMargin(cells []CalibrationCell) (worst, bound int64, where string) {
	worst, bound = -1, -1
	closest := -1.0
	for _, c := range cells {
		if c.Outcome != CellPassed || c.SlowestReloadMS < 0 || c.BoundMS <= 0 {
			continue
		}
		if f := float64(c.SlowestReloadMS) / float64(c.BoundMS); f > closest {
			closest, worst, bound, where = f, c.SlowestReloadMS, c.BoundMS, c.Scenario+attemptSuffix(c.Attempt)
		}
	}
	return worst, bound, where
}
