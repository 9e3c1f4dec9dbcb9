package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/bootproof/bootproof/scenarios"
)

// Files of a calibration run ('bootproof calibrate'), beside the run's
// own reports; its index.html shows the calibration (WriteCalibration).
const (
	CalibrationJSONFile = "calibration.json"
	CalibrationMDFile   = "calibration.md"
)

// Calibration kinds: a known-bad variant (one seeded defect) or a
// known-good one that is merely slow.
const (
	KindDefect = "defect"
	KindSlow   = "slow"
)

// Cell outcomes of a calibration run.
const (
	// A known-bad variant in a scenario listed as able to see its defect:
	// caught when the case failed through the assertion the listing
	// names (its verdict a pass: failed as expected); missed when it
	// passed, or failed only through other assertions.
	CellCaught = "caught"
	CellMissed = "missed"
	// A known-bad variant in a scenario not listed: the defect showed
	// (reported, counted in neither figure) or not.
	CellExtraCatch = "caught, not listed"
	CellNotListed  = "not listed"
	// A known-good variant.
	CellPassed = "passed"
	CellFailed = "failed"
	// A case that gave no verdict (error or skipped): never a catch. A
	// miss in a listed scenario, a failure of a known-good variant,
	// neither elsewhere.
	CellNoVerdict = "no verdict"
)

// ListedScenario is a scenario a known-bad variant's file lists as able
// to see its defect (calibration.sees).
type ListedScenario struct {
	Scenario string `json:"scenario"`
	// Expect is what the defect must be caught through (fail:reload),
	// Assertions its assertions.
	Expect     string   `json:"expect"`
	Assertions []string `json:"assertions"`
	// Why the scenario can see the defect.
	Why string `json:"why"`
	// ControlsInterleaving: the scenario's timeline orders the subject
	// against the nodes (scenarios.Scenario.ControlsInterleaving), so
	// the catch does not hang on timing.
	ControlsInterleaving bool `json:"controls_interleaving"`
}

// CalibrationVariant is one calibration subject, as the report needs it.
type CalibrationVariant struct {
	// Subject is its name in the results.
	Subject string `json:"subject"`
	Variant string `json:"variant"`
	// Kind is KindDefect or KindSlow.
	Kind    string `json:"kind"`
	Summary string `json:"summary"`
	File    string `json:"file"`
	// Listed, for a known-bad variant, is every scenario of the catalog
	// its file lists, whether it ran or not, in the catalog's order.
	Listed []ListedScenario `json:"listed,omitempty"`
}

// listing returns the listing of scenario, if any.
func (v CalibrationVariant) listing(scenario string) (ListedScenario, bool) {
	i := slices.IndexFunc(v.Listed, func(l ListedScenario) bool { return l.Scenario == scenario })
	if i < 0 {
		return ListedScenario{}, false
	}
	return v.Listed[i], true
}

// CalibrationCell is one case of a calibration run.
type CalibrationCell struct {
	Scenario string `json:"scenario"`
	Attempt  int    `json:"attempt,omitempty"`
	// Case is the case's index in results.json (index.html#case-<i>).
	Case int `json:"case"`
	// Listed, Expect, Why and ControlsInterleaving: the scenario is
	// listed as able to see the defect (ListedScenario).
	Listed               bool   `json:"listed"`
	Expect               string `json:"expect,omitempty"`
	Why                  string `json:"why,omitempty"`
	ControlsInterleaving bool   `json:"controls_interleaving,omitempty"`
	Observed             string `json:"observed"`
	// Failed lists the assertions the case failed.
	Failed  []string `json:"failed,omitempty"`
	Verdict string   `json:"verdict"`
	Outcome string   `json:"outcome"`
	Message string   `json:"message,omitempty"`
	// SlowestReloadMS is the reload (its window opening to every module
	// loaded in the new boot) that came closest to its service level
	// (reload-slo), -1 when none was judged; BoundMS that service level
	// (-1: none).
	SlowestReloadMS int64 `json:"slowest_reload_ms"`
	BoundMS         int64 `json:"bound_ms"`
}

// CalibrationRow is one variant's cells and figures.
type CalibrationRow struct {
	CalibrationVariant
	Cells []CalibrationCell `json:"cells"`
	// Scenarios: a known-bad variant's listed scenarios that ran, and how
	// many caught the defect in every run; a known-good variant's
	// scenarios, and how many it passed in every run.
	Scenarios Ratio `json:"scenarios"`
	// Runs is the same over cells (each run of each scenario).
	Runs Ratio `json:"runs"`
	// NotRun are the listed scenarios with no cell: not selected
	// (calibrate --scenario), or the run was interrupted.
	NotRun []string `json:"not_run,omitempty"`
	// Interleaving are the listed scenarios that ran and control the
	// interleaving; InterleavingCaught those of them that caught the
	// defect in every run.
	Interleaving       []string `json:"interleaving,omitempty"`
	InterleavingCaught int      `json:"interleaving_caught"`
}

// Counted reports whether the row has a cell that counts in its figure:
// a listed scenario that ran (known bad), a case (known good).
func (r CalibrationRow) Counted() bool { return r.Runs.Total > 0 }

// Full reports whether the variant's truth was met in every cell that
// counts, and at least one did: a known-bad variant caught in every run
// of every listed scenario that ran, a known-good one passing every
// case.
func (r CalibrationRow) Full() bool { return r.Runs.Full() }

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
	if r.Total == 0 {
		return "not measured (none ran)"
	}
	return fmt.Sprintf("%.0f %% (%d of %d)", r.Percent(), r.Count, r.Total)
}

// CalibrationResult is a calibration run judged.
type CalibrationResult struct {
	// VariantsCaught: known-bad variants caught in every run of every
	// listed scenario that ran, over the known-bad variants.
	VariantsCaught Ratio `json:"variants_caught"`
	// VariantsPassed: known-good variants that passed every case, over
	// the known-good variants.
	VariantsPassed Ratio `json:"variants_passed"`
	// Sensitivity: listed cells (a known-bad variant in a listed
	// scenario, each run) that caught the defect, over all listed cells
	// that ran.
	Sensitivity Ratio `json:"sensitivity"`
	// Specificity: known-good variants' cases that passed, over all.
	Specificity Ratio `json:"specificity"`
	// ExtraCatches counts known-bad cases caught in a scenario not listed.
	ExtraCatches int `json:"extra_catches"`
	// NotRun counts listed scenarios of the known-bad variants that did
	// not run (CalibrationRow.NotRun).
	NotRun int `json:"not_run"`
	// NoCells names the variants with no cell that counts (see
	// CalibrationRow.Counted): a calibration that measured nothing of
	// them is an error, never a silent zero.
	NoCells []string `json:"no_cells,omitempty"`
	// ListedOnly: the known-bad variants ran only in their listed
	// scenarios (calibrate --listed-only), so catches elsewhere were not
	// looked for; both ratios are measured as without it.
	ListedOnly bool `json:"listed_only"`
	// World is where the variants ran: WorldInProcess (empty in reports
	// from before it was recorded) or WorldDeployment.
	World string           `json:"world,omitempty"`
	Rows  []CalibrationRow `json:"variants"`
	// Worlds, when the calibration was compared with another (calibrate
	// --compare-with), puts both side by side.
	Worlds *WorldComparison `json:"worlds,omitempty"`
}

// CompareWith puts c beside other, a calibration of another world (read
// from source), in c.Worlds.
func (c *CalibrationResult) CompareWith(other CalibrationResult, source string) {
	o := WorldOutcomesOf(other)
	o.Source = source
	c.compareWith(o)
}

func (c *CalibrationResult) compareWith(other WorldOutcomes) {
	c.Worlds = nil
	w := CompareWorlds(WorldOutcomesOf(*c), other)
	c.Worlds = &w
}

// Where a calibration's variants ran (CalibrationResult.World).
const (
	// WorldInProcess: in the harness's process, one reconciler per case.
	WorldInProcess = "in-process"
	// WorldDeployment: as Deployments, one per case in its namespace,
	// from bootproof's operator image.
	WorldDeployment = "deployment"
)

// OK reports a calibration that measured every variant and found each
// as its truth says: every known-bad variant caught in every listed
// scenario that ran, every known-good one passing every case.
func (c CalibrationResult) OK() bool {
	return len(c.NoCells) == 0 && len(c.Rows) > 0 &&
		c.VariantsCaught.Count == c.VariantsCaught.Total && c.VariantsPassed.Count == c.VariantsPassed.Total
}

// Variants returns the variants the result was computed for.
func (c CalibrationResult) Variants() []CalibrationVariant {
	out := make([]CalibrationVariant, 0, len(c.Rows))
	for _, r := range c.Rows {
		out = append(out, r.CalibrationVariant)
	}
	return out
}

// Calibrate judges res, a run of the calibration variants, against what
// each variant's truth is.
func Calibrate(res scenarios.Results, variants []CalibrationVariant) CalibrationResult {
	var out CalibrationResult
	for _, v := range variants {
		row := CalibrationRow{CalibrationVariant: v}
		for i, c := range res.Cases {
			if c.Subject == v.Subject {
				row.Cells = append(row.Cells, calibrationCell(v, i, c))
			}
		}
		row.figures()
		for _, cell := range row.Cells {
			switch cell.Outcome {
			case CellExtraCatch:
				out.ExtraCatches++
			case CellCaught, CellPassed:
				addRatio(&out.Sensitivity, &out.Specificity, v.Kind, true)
			case CellMissed, CellFailed:
				addRatio(&out.Sensitivity, &out.Specificity, v.Kind, false)
			case CellNoVerdict:
				if cell.Listed || v.Kind == KindSlow {
					addRatio(&out.Sensitivity, &out.Specificity, v.Kind, false)
				}
			}
		}
		addRatio(&out.VariantsCaught, &out.VariantsPassed, v.Kind, row.Full())
		out.NotRun += len(row.NotRun)
		if !row.Counted() {
			out.NoCells = append(out.NoCells, v.Variant)
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}

// addRatio counts one more in defect's ratio (known bad) or slow's, and
// in its count when ok.
func addRatio(defect, slow *Ratio, kind string, ok bool) {
	r := defect
	if kind == KindSlow {
		r = slow
	}
	r.Total++
	if ok {
		r.Count++
	}
}

// figures computes the row's figures from its cells.
func (r *CalibrationRow) figures() {
	good := func(c CalibrationCell) bool { return c.Outcome == CellCaught || c.Outcome == CellPassed }
	counts := func(c CalibrationCell) bool { return r.Kind == KindSlow || c.Listed }
	var order []string
	all := map[string]bool{}
	for _, c := range r.Cells {
		if !counts(c) {
			continue
		}
		r.Runs.Total++
		if good(c) {
			r.Runs.Count++
		}
		if _, seen := all[c.Scenario]; !seen {
			order = append(order, c.Scenario)
			all[c.Scenario] = true
		}
		all[c.Scenario] = all[c.Scenario] && good(c)
	}
	for _, s := range order {
		r.Scenarios.Total++
		if all[s] {
			r.Scenarios.Count++
		}
	}
	for _, l := range r.Listed {
		ran := slices.Contains(order, l.Scenario)
		switch {
		case !ran:
			r.NotRun = append(r.NotRun, l.Scenario)
		case l.ControlsInterleaving:
			r.Interleaving = append(r.Interleaving, l.Scenario)
			if all[l.Scenario] {
				r.InterleavingCaught++
			}
		}
	}
}

// calibrationCell judges case c, at index i of the results, for
// variant v.
func calibrationCell(v CalibrationVariant, i int, c scenarios.CaseResult) CalibrationCell {
	cell := CalibrationCell{Scenario: c.Scenario, Attempt: c.Attempt, Case: i, Observed: c.Observed, Verdict: c.Verdict,
		Message: c.Message, SlowestReloadMS: -1, BoundMS: -1}
	worst := -1.0
	for _, a := range c.Assertions {
		if !a.OK {
			cell.Failed = append(cell.Failed, a.Name)
		}
		for _, r := range a.Reloads {
			if r.SLOMS <= 0 {
				continue
			}
			if f := float64(r.WindowMS) / float64(r.SLOMS); f > worst {
				worst, cell.SlowestReloadMS, cell.BoundMS = f, r.WindowMS, r.SLOMS
			}
		}
	}
	// Observed error or skipped: the case was not judged on its
	// assertions. (A case observed failing whose verdict is an error
	// failed for the wrong reason: a miss, not a missing verdict.)
	noVerdict := c.Observed != scenarios.Pass && c.Observed != scenarios.Fail
	if v.Kind == KindSlow {
		switch {
		case noVerdict:
			cell.Outcome = CellNoVerdict
		case c.Verdict == scenarios.Pass && c.Observed == scenarios.Pass:
			cell.Outcome = CellPassed
		default:
			cell.Outcome = CellFailed
		}
		return cell
	}
	l, listed := v.listing(c.Scenario)
	if listed {
		cell.Listed, cell.Expect, cell.Why, cell.ControlsInterleaving = true, l.Expect, l.Why, l.ControlsInterleaving
	}
	// Caught: observed failing through an assertion the listing names,
	// and so judged (a pass: failed as expected). Never an error.
	through := c.Observed == scenarios.Fail && slices.ContainsFunc(cell.Failed, func(a string) bool { return slices.Contains(l.Assertions, a) })
	switch {
	case noVerdict:
		cell.Outcome = CellNoVerdict
	case listed && through && c.Verdict == scenarios.Pass:
		cell.Outcome = CellCaught
	case listed:
		cell.Outcome = CellMissed
	case c.Observed == scenarios.Fail:
		cell.Outcome = CellExtraCatch
	default:
		cell.Outcome = CellNotListed
	}
	return cell
}

// WriteCalibration writes every report of a calibration run into dir:
// those of Write, but with an index.html that shows the calibration (its
// figures, a line per variant and the matrix of variant x scenario)
// above the cases, and calibration.json and calibration.md; junit.xml
// last, as Write does.
func WriteCalibration(dir string, r scenarios.Results, c CalibrationResult, generated time.Time) error {
	return write(dir, r, generated, &c)
}

// RewriteCalibration judges the results in dir again as the calibration
// its calibration.json describes (its variants and listings) and writes
// every report anew (after a change of the report code).
func RewriteCalibration(dir string, r scenarios.Results, generated time.Time) (CalibrationResult, error) {
	old, err := ReadCalibration(dir)
	if err != nil {
		return CalibrationResult{}, err
	}
	c := Calibrate(r, old.Variants())
	c.ListedOnly, c.World = old.ListedOnly, old.World
	if old.Worlds != nil {
		c.compareWith(old.Worlds.Other)
	}
	return c, WriteCalibration(dir, r, c, generated)
}

// ReadCalibration reads the calibration.json of dir.
func ReadCalibration(dir string) (CalibrationResult, error) {
	path := filepath.Join(dir, CalibrationJSONFile)
	var c CalibrationResult
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	return c, decodeJSON(path, data, &c)
}

// writeCalibrationFiles writes calibration.json and calibration.md.
func writeCalibrationFiles(dir string, c CalibrationResult) error {
	if err := writeJSON(filepath.Join(dir, CalibrationJSONFile), c); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, CalibrationMDFile), []byte(CalibrationMarkdown(c)), 0o644)
}
