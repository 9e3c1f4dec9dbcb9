package reports

// Two calibrations side by side: the same variants judged in two worlds
// (in-process on the embedded cluster, as Deployments on kind), and the
// variants whose verdict differs between them flagged.

import (
	"fmt"
	"slices"
	"strings"
)

// Verdicts of a variant in one world (VariantOutcome.Verdict).
const (
	// VerdictCaught: a known-bad variant caught in every run of every
	// listed scenario that ran; VerdictNotCaught: some cell missed it.
	VerdictCaught    = "caught"
	VerdictNotCaught = "not caught"
	// VerdictPassed: a known-good variant passed every case;
	// VerdictFailed: some case failed or gave no verdict.
	VerdictPassed = "passed"
	VerdictFailed = "failed"
	// VerdictNotMeasured: no cell that counts ran (or the variant is not
	// in that calibration at all).
	VerdictNotMeasured = "not measured"
)

// WorldOutcomes is what one calibration found of each variant, as the
// comparison of two worlds needs it: kept in the other calibration's
// report so that it can be judged again (RewriteCalibration) without it.
type WorldOutcomes struct {
	// World is CalibrationResult.World (WorldInProcess when the report
	// did not record it).
	World string `json:"world"`
	// Source is where it was read from (a report directory), empty for
	// the calibration the comparison is part of.
	Source   string           `json:"source,omitempty"`
	Headline string           `json:"headline"`
	Variants []VariantOutcome `json:"variants"`
}

// VariantOutcome is one variant's verdict in a world, and the outcome of
// each scenario that counts in it (a known-bad variant's listed ones, a
// known-good variant's every one).
type VariantOutcome struct {
	Variant string `json:"variant"`
	Kind    string `json:"kind"`
	Verdict string `json:"verdict"`
	// Scenarios: the worst outcome of its runs (cellWorse), in the
	// calibration's order.
	Scenarios []ScenarioOutcome `json:"scenarios,omitempty"`
}

// ScenarioOutcome is the worst outcome of a variant's runs of a scenario.
type ScenarioOutcome struct {
	Scenario string `json:"scenario"`
	Outcome  string `json:"outcome"`
}

// WorldOutcomesOf summarises c for a comparison.
func WorldOutcomesOf(c CalibrationResult) WorldOutcomes {
	w := WorldOutcomes{World: c.World, Headline: CalibrationHeadline(c)}
	if w.World == "" {
		w.World = WorldInProcess
	}
	for _, r := range c.Rows {
		v := VariantOutcome{Variant: r.Variant, Kind: r.Kind, Verdict: rowVerdict(r)}
		worst := map[string]int{}
		for _, cell := range r.Cells {
			if r.Kind != KindSlow && !cell.Listed {
				continue
			}
			i := slices.Index(cellWorse, cell.Outcome)
			if i < 0 {
				i = len(cellWorse)
			}
			prev, seen := worst[cell.Scenario]
			if !seen {
				v.Scenarios = append(v.Scenarios, ScenarioOutcome{Scenario: cell.Scenario, Outcome: cell.Outcome})
				worst[cell.Scenario] = i
				continue
			}
			if i < prev {
				worst[cell.Scenario] = i
				v.Scenarios[slices.IndexFunc(v.Scenarios, func(s ScenarioOutcome) bool { return s.Scenario == cell.Scenario })].Outcome = cell.Outcome
			}
		}
		w.Variants = append(w.Variants, v)
	}
	return w
}

// rowVerdict is a row's verdict in its world.
func rowVerdict(r CalibrationRow) string {
	switch {
	case !r.Counted():
		return VerdictNotMeasured
	case r.Kind == KindSlow && r.Full():
		return VerdictPassed
	case r.Kind == KindSlow:
		return VerdictFailed
	case r.Full():
		return VerdictCaught
	default:
		return VerdictNotCaught
	}
}

// WorldComparison puts two calibrations of the same variants side by
// side: This (the calibration it is part of) and Other.
type WorldComparison struct {
	This  WorldOutcomes `json:"this"`
	Other WorldOutcomes `json:"other"`
	// Rows: a row per variant of either, this calibration's first.
	Rows []WorldRow `json:"rows"`
	// Differ names the variants measured in both whose verdicts differ.
	Differ []string `json:"differ,omitempty"`
	// Unmatched names the variants measured in one world only: not
	// compared, never counted as agreeing.
	Unmatched []string `json:"unmatched,omitempty"`
}

// WorldRow is one variant in both worlds.
type WorldRow struct {
	Variant string `json:"variant"`
	Kind    string `json:"kind"`
	This    string `json:"this"`
	Other   string `json:"other"`
	// Differs: measured in both, with different verdicts.
	Differs bool `json:"differs"`
	// Scenarios are those that ran in both worlds with different
	// outcomes (a variant can agree in its verdict and still differ in
	// how: caught in one world, an error in the other, both short).
	Scenarios []WorldScenario `json:"scenarios,omitempty"`
}

// WorldScenario is a scenario whose outcome differs between the worlds.
type WorldScenario struct {
	Scenario string `json:"scenario"`
	This     string `json:"this"`
	Other    string `json:"other"`
}

// Same reports whether every variant was measured in both worlds with
// the same verdict.
func (w WorldComparison) Same() bool { return len(w.Differ) == 0 && len(w.Unmatched) == 0 }

// CompareWorlds compares this with other, variant by variant.
func CompareWorlds(this, other WorldOutcomes) WorldComparison {
	out := WorldComparison{This: this, Other: other}
	find := func(w WorldOutcomes, name string) (VariantOutcome, bool) {
		i := slices.IndexFunc(w.Variants, func(v VariantOutcome) bool { return v.Variant == name })
		if i < 0 {
			return VariantOutcome{Variant: name, Verdict: VerdictNotMeasured}, false
		}
		return w.Variants[i], true
	}
	var names []string
	for _, w := range []WorldOutcomes{this, other} {
		for _, v := range w.Variants {
			if !slices.Contains(names, v.Variant) {
				names = append(names, v.Variant)
			}
		}
	}
	for _, name := range names {
		a, inA := find(this, name)
		b, inB := find(other, name)
		kind := a.Kind
		if !inA {
			kind = b.Kind
		}
		row := WorldRow{Variant: name, Kind: kind, This: a.Verdict, Other: b.Verdict}
		switch {
		case a.Verdict == VerdictNotMeasured || b.Verdict == VerdictNotMeasured:
			out.Unmatched = append(out.Unmatched, name)
		case a.Verdict != b.Verdict:
			row.Differs = true
			out.Differ = append(out.Differ, name)
		}
		if inA && inB {
			for _, s := range a.Scenarios {
				i := slices.IndexFunc(b.Scenarios, func(o ScenarioOutcome) bool { return o.Scenario == s.Scenario })
				if i >= 0 && b.Scenarios[i].Outcome != s.Outcome {
					row.Scenarios = append(row.Scenarios, WorldScenario{Scenario: s.Scenario, This: s.Outcome, Other: b.Scenarios[i].Outcome})
				}
			}
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}

// WorldsLine says in a line how the two worlds compare.
func WorldsLine(w WorldComparison) string {
	var b strings.Builder
	compared := len(w.Rows) - len(w.Unmatched)
	switch {
	case len(w.Differ) == 0:
		fmt.Fprintf(&b, "same verdict as in the %s world for %d of %d variant(s)", w.Other.World, compared, compared)
	default:
		fmt.Fprintf(&b, "verdict not as in the %s world for %d of %d variant(s): %s", w.Other.World, len(w.Differ), compared, strings.Join(w.Differ, ", "))
	}
	if len(w.Unmatched) > 0 {
		fmt.Fprintf(&b, "; not measured in both: %s", strings.Join(w.Unmatched, ", "))
	}
	return b.String()
}

// writeWorldsMarkdown writes the comparison's section of calibration.md.
func writeWorldsMarkdown(b *strings.Builder, w WorldComparison) {
	mark := "✅"
	if !w.Same() {
		mark = "❌"
	}
	fmt.Fprintf(b, "## Both worlds\n\n%s %s.\n\n", mark, mdEscape(WorldsLine(w)))
	fmt.Fprintf(b, "* this calibration (%s): %s\n* the other (%s, `%s`): %s\n\n", w.This.World, mdEscape(w.This.Headline), w.Other.World, w.Other.Source, mdEscape(w.Other.Headline))
	fmt.Fprintf(b, "| variant | kind | here (%s) | other (%s) | |\n|---|---|---|---|---|\n", w.This.World, w.Other.World)
	for _, r := range w.Rows {
		flag := ""
		switch {
		case r.Differs:
			flag = "❌ differs"
		case r.This == VerdictNotMeasured || r.Other == VerdictNotMeasured:
			flag = "– not compared"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", r.Variant, r.Kind, r.This, r.Other, flag)
	}
	var lines []string
	for _, r := range w.Rows {
		for _, s := range r.Scenarios {
			lines = append(lines, fmt.Sprintf("* %s in %s: %s here, %s in the %s world\n", r.Variant, s.Scenario, s.This, s.Other, w.Other.World))
		}
	}
	if len(lines) > 0 {
		b.WriteString("\nScenarios whose outcome differs between the worlds:\n\n")
		for _, l := range lines {
			b.WriteString(l)
		}
	}
	b.WriteString("\n")
}
