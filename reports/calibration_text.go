package reports

// The calibration rendered for people: its headline, a line per variant,
// calibration.md, and the look of a cell.

import (
	"fmt"
	"slices"
	"strings"
)

// CalibrationHeadline is the result in one line: the variants as their
// truth says, then the cells.
func CalibrationHeadline(c CalibrationResult) string {
	var b strings.Builder
	if len(c.NoCells) > 0 {
		fmt.Fprintf(&b, "not calibrated: no cell that counts ran for %s; ", strings.Join(c.NoCells, ", "))
	}
	fmt.Fprintf(&b, "%s, %s; sensitivity %s, specificity %s",
		variantsRatio(c.VariantsCaught, "known-bad", "caught in every listed scenario"), variantsRatio(c.VariantsPassed, "known-good", "passed every case"),
		cellsRatio(c.Sensitivity, "listed cells"), cellsRatio(c.Specificity, "cases"))
	if c.NotRun > 0 {
		fmt.Fprintf(&b, "; %d listed scenario(s) not run", c.NotRun)
	}
	if c.World == WorldDeployment {
		b.WriteString("; variants run as Deployments, one per case")
	}
	if c.ListedOnly {
		b.WriteString("; known-bad variants run only in their listed scenarios (--listed-only)")
	} else {
		fmt.Fprintf(&b, "; %d extra catch(es) in scenarios not listed", c.ExtraCatches)
	}
	if c.Worlds != nil {
		b.WriteString("; " + WorldsLine(*c.Worlds))
	}
	return b.String()
}

// variantsRatio says "10 of 10 known-bad variants caught ...", or that
// none ran.
func variantsRatio(r Ratio, kind, what string) string {
	if r.Total == 0 {
		return "no " + kind + " variant ran"
	}
	return fmt.Sprintf("%d of %d %s variants %s", r.Count, r.Total, kind, what)
}

// cellsRatio says "100 % (84 of 84 listed cells)", or that none ran.
func cellsRatio(r Ratio, what string) string {
	if r.Total == 0 {
		return "not measured (no " + what + ")"
	}
	return fmt.Sprintf("%.0f %% (%d of %d %s)", r.Percent(), r.Count, r.Total, what)
}

// VariantLine says in a line how a variant came out: a known-bad one,
// in how many of its listed scenarios it was caught, through which
// assertions, whether any of them controls the interleaving, what was
// missed and what did not run; a known-good one, how many scenarios it
// passed and its closest reload.
func VariantLine(r CalibrationRow) string {
	var b strings.Builder
	if r.Kind == KindSlow {
		fmt.Fprintf(&b, "%s (known good): passed %s", r.Variant, countOf(r.Scenarios, r.Runs, "scenario"))
		if worst, bound, where := slowestMargin(r.Cells); worst >= 0 {
			fmt.Fprintf(&b, "; closest reload %s against its service level of %s (%s)", FormatMS(worst), FormatMS(bound), where)
		}
		writeShortfalls(&b, r)
		return b.String()
	}
	fmt.Fprintf(&b, "%s (known bad): caught in %s, through %s", r.Variant, countOf(r.Scenarios, r.Runs, "listed scenario"), strings.Join(throughOf(r), " or "))
	switch n := len(r.Interleaving); {
	case r.Scenarios.Total == 0:
	case n == 0:
		b.WriteString("; none of them controls the interleaving")
	case n == r.Scenarios.Total:
		fmt.Fprintf(&b, "; every one controls the interleaving (%d caught every time)", r.InterleavingCaught)
	default:
		fmt.Fprintf(&b, "; %d control the interleaving, %d of them caught every time: %s", n, r.InterleavingCaught, strings.Join(r.Interleaving, ", "))
	}
	writeShortfalls(&b, r)
	return b.String()
}

// countOf renders scenarios and their runs: "8 of 8 listed scenarios",
// and "(24 of 24 runs)" when a scenario ran more than once.
func countOf(scen, runs Ratio, what string) string {
	s := fmt.Sprintf("%d of %d %ss", scen.Count, scen.Total, what)
	if runs.Total != scen.Total {
		s += fmt.Sprintf(" (%d of %d runs)", runs.Count, runs.Total)
	}
	return s
}

// throughOf lists the assertions a variant's listings name, in order.
func throughOf(r CalibrationRow) []string {
	var out []string
	for _, l := range r.Listed {
		for _, a := range l.Assertions {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// writeShortfalls appends what fell short: the cells that count and did
// not meet the variant's truth, and the listed scenarios that did not
// run.
func writeShortfalls(b *strings.Builder, r CalibrationRow) {
	var bad []string
	for _, c := range r.Cells {
		if (c.Listed || r.Kind == KindSlow) && c.Outcome != CellCaught && c.Outcome != CellPassed {
			bad = append(bad, fmt.Sprintf("%s%s (%s, observed %s)", c.Scenario, attemptSuffix(c.Attempt), c.Outcome, c.Observed))
		}
	}
	if len(bad) > 0 {
		fmt.Fprintf(b, "; %s: %s", plural(len(bad), "shortfall", "shortfalls"), strings.Join(bad, ", "))
	}
	if len(r.NotRun) > 0 {
		fmt.Fprintf(b, "; %d listed scenario(s) not run: %s", len(r.NotRun), strings.Join(r.NotRun, ", "))
	}
	if !r.Counted() {
		b.WriteString("; nothing measured: no cell that counts ran")
	}
}

// CalibrationMarkdown renders the result: the headline, a line per
// variant, the matrix of scenario x variant, then each known-bad
// variant's listed scenarios with their reasons and every cell that fell
// short or caught the defect where it is not listed.
func CalibrationMarkdown(c CalibrationResult) string {
	var b strings.Builder
	status := "✅"
	if !c.OK() {
		status = "❌"
	}
	fmt.Fprintf(&b, "# bootproof calibration\n\n%s %s\n\n", status, mdEscape(CalibrationHeadline(c)))
	b.WriteString("A known-bad variant is caught in a scenario its file lists only when the case fails through the assertion the listing names; " +
		"an error is never a catch. A known-good (slow) variant must pass every case. Sensitivity counts the listed cells, specificity the known-good cases; " +
		"a scenario that controls the interleaving (⇄) orders the subject against the nodes (pause, resume or restart the subject, wait for a worker pod) instead of relying on timing.\n\n")
	for _, r := range c.Rows {
		mark := "✅"
		if !r.Full() {
			mark = "❌"
		}
		fmt.Fprintf(&b, "- %s %s\n", mark, mdEscape(VariantLine(r)))
	}
	b.WriteString("\nCells: ")
	for i, o := range cellOutcomes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s", cellLooks[o].emoji, o)
	}
	b.WriteString(", – not run.\n\n")
	writeCalibrationMatrix(&b, c)
	b.WriteString("\n")
	if c.Worlds != nil {
		writeWorldsMarkdown(&b, *c.Worlds)
	}
	b.WriteString("## Variants\n\n")
	for _, r := range c.Rows {
		fmt.Fprintf(&b, "### %s (%s)\n\n%s. Subject file: `%s`.\n\n", r.Variant, r.Kind, r.Summary, r.File)
		if r.Kind == KindDefect {
			seen := map[string]bool{}
			for _, l := range r.Listed {
				if seen[l.Why] {
					continue
				}
				seen[l.Why] = true
				var names []string
				for _, o := range r.Listed {
					if o.Why == l.Why {
						names = append(names, o.Scenario)
					}
				}
				fmt.Fprintf(&b, "* %s — through `%s`: %s\n", strings.Join(names, ", "), l.Expect, l.Why)
			}
			b.WriteString("\n")
		}
		for _, cell := range r.Cells {
			switch cell.Outcome {
			case CellMissed, CellFailed, CellNoVerdict, CellExtraCatch:
				fmt.Fprintf(&b, "* %s %s%s: %s (observed %s, verdict %s): %s\n", cellLooks[cell.Outcome].emoji, cell.Scenario, attemptSuffix(cell.Attempt),
					cell.Outcome, cell.Observed, cell.Verdict, oneLine(cell.Message))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// cellLook is how a cell outcome is shown: the HTML glyph and class, the
// Markdown emoji, and what it means.
type cellLook struct{ glyph, class, emoji, meaning string }

var cellLooks = map[string]cellLook{
	CellCaught:     {"✔", "caught", "✅", "a known-bad variant failed, as its file says, through the assertion named, in a scenario listed as able to see its defect"},
	CellPassed:     {"✔", "passed", "✅", "a known-good variant passed the case"},
	CellMissed:     {"✘", "missed", "❌", "a known-bad variant passed a listed scenario, or failed it only through other assertions: the defect went unseen"},
	CellFailed:     {"✘", "failed", "❌", "a known-good variant failed a case: a false alarm"},
	CellNoVerdict:  {"⚠", "noverdict", "⚠️", "no verdict (an error or a skip): never a catch; a miss in a listed scenario, a failure of a known-good variant"},
	CellExtraCatch: {"+", "extra", "➕", "a known-bad variant failed a scenario its file does not list: reported, counted in neither figure"},
	CellNotListed:  {"·", "notlisted", "·", "a known-bad variant passed a scenario its file does not list: nothing expected"},
}

// CellGlyph is the symbol the HTML shows for a cell outcome.
func CellGlyph(outcome string) string { return cellLooks[outcome].glyph }

// CellClass is the CSS class of a cell outcome in the HTML.
func CellClass(outcome string) string { return cellLooks[outcome].class }

// CellMeaning says what a cell outcome means, for a legend.
func CellMeaning(outcome string) string { return cellLooks[outcome].meaning }

// cellOutcomes lists the outcomes in the order a legend shows them.
var cellOutcomes = []string{CellCaught, CellPassed, CellMissed, CellFailed, CellNoVerdict, CellExtraCatch, CellNotListed}

// writeCalibrationMatrix writes the table scenario x variant.
func writeCalibrationMatrix(b *strings.Builder, c CalibrationResult) {
	m := buildCalibrationMatrix(c)
	b.WriteString("| scenario |")
	for _, v := range m.Variants {
		fmt.Fprintf(b, " %s |", v)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(m.Variants)) + "\n")
	for _, row := range m.Rows {
		name := row.Scenario
		if row.Interleaving {
			name += " ⇄"
		}
		fmt.Fprintf(b, "| %s |", name)
		for _, cell := range row.Cells {
			var marks []string
			for _, run := range cell.Runs {
				marks = append(marks, run.Emoji)
			}
			if len(marks) == 0 {
				marks = append(marks, "–")
			}
			fmt.Fprintf(b, " %s |", strings.Join(marks, ""))
		}
		b.WriteString("\n")
	}
}

// calibrationMatrix is the matrix of scenario x variant the Markdown and
// the HTML show.
type calibrationMatrix struct {
	Variants []string
	Rows     []calibrationMatrixRow
}

type calibrationMatrixRow struct {
	Scenario string
	// Interleaving: the scenario controls the interleaving (as listed by
	// some variant).
	Interleaving bool
	Cells        []calibrationMatrixCell
}

// calibrationMatrixCell is a variant's runs of a scenario (one, more
// with --repeat; none: not run); Class is the worst run's, Title says
// what each run observed.
type calibrationMatrixCell struct {
	Runs  []calibrationMatrixRun
	Class string
	Title string
}

// calibrationMatrixRun is one run of a cell: its outcome as shown, and
// its case (index.html#case-<Case>).
type calibrationMatrixRun struct {
	Outcome, Glyph, Class, Emoji string
	Case                         int
}

// cellWorse orders outcomes for a cell of several runs: the first one
// found is the cell's class.
var cellWorse = []string{CellMissed, CellFailed, CellNoVerdict, CellExtraCatch, CellCaught, CellPassed, CellNotListed}

func buildCalibrationMatrix(c CalibrationResult) calibrationMatrix {
	var m calibrationMatrix
	var scen []string
	interleaving := map[string]bool{}
	for _, r := range c.Rows {
		m.Variants = append(m.Variants, r.Variant)
		for _, cell := range r.Cells {
			if !slices.Contains(scen, cell.Scenario) {
				scen = append(scen, cell.Scenario)
			}
		}
		for _, l := range r.Listed {
			interleaving[l.Scenario] = interleaving[l.Scenario] || l.ControlsInterleaving
		}
	}
	slices.Sort(scen)
	for _, s := range scen {
		row := calibrationMatrixRow{Scenario: s, Interleaving: interleaving[s]}
		for _, r := range c.Rows {
			var cell calibrationMatrixCell
			var titles []string
			worst := len(cellWorse)
			for _, x := range r.Cells {
				if x.Scenario != s {
					continue
				}
				look := cellLooks[x.Outcome]
				cell.Runs = append(cell.Runs, calibrationMatrixRun{Outcome: x.Outcome, Glyph: look.glyph, Class: look.class, Emoji: look.emoji, Case: x.Case})
				if i := slices.Index(cellWorse, x.Outcome); i >= 0 && i < worst {
					worst, cell.Class = i, look.class
				}
				t := fmt.Sprintf("%s%s: %s (observed %s, verdict %s", r.Variant, attemptSuffix(x.Attempt), x.Outcome, x.Observed, x.Verdict)
				if x.Listed {
					t += "; listed: " + x.Expect
				}
				titles = append(titles, t+")")
			}
			cell.Title = strings.Join(titles, "; ")
			row.Cells = append(row.Cells, cell)
		}
		m.Rows = append(m.Rows, row)
	}
	return m
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
// service level: the reload, the service level, and the scenario.
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
