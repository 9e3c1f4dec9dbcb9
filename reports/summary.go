package reports

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bootproof/bootproof/scenarios"
)

// Counts tallies verdicts.
type Counts struct{ Pass, Fail, Error, Skipped int }

// Count tallies the verdicts of r.
func Count(r scenarios.Results) Counts {
	var c Counts
	for _, cs := range r.Cases {
		switch cs.Verdict {
		case scenarios.Pass:
			c.Pass++
		case scenarios.Fail:
			c.Fail++
		case scenarios.Error:
			c.Error++
		default:
			c.Skipped++
		}
	}
	return c
}

// Latencies collects detection and reload latencies (ms) of every reboot
// that had them.
func Latencies(r scenarios.Results, subject string) (detection, reload []float64) {
	for _, c := range r.Cases {
		if subject != "" && c.Subject != subject {
			continue
		}
		for _, m := range c.Reboots {
			if m.DetectionLatencyMS >= 0 {
				detection = append(detection, float64(m.DetectionLatencyMS))
			}
			if m.ReloadLatencyMS >= 0 {
				reload = append(reload, float64(m.ReloadLatencyMS))
			}
		}
	}
	return detection, reload
}

// Summary renders the Markdown summary: counts, a table of every case and
// the latency distribution per subject.
func Summary(r scenarios.Results) string {
	var b strings.Builder
	n := Count(r)
	fmt.Fprintf(&b, "## bootproof: %d passed, %d failed, %d errors, %d skipped\n\n", n.Pass, n.Fail, n.Error, n.Skipped)
	if env := r.EnvironmentLine(); env != "" {
		fmt.Fprintf(&b, "Environment: %s\n\n", mdEscape(env))
	}
	writeMatrix(&b, BuildMatrix(r))
	b.WriteString("\n| verdict | subject | scenario | nodes | expected | observed | reboots | duration | message |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.Cases {
		fmt.Fprintf(&b, "| %s | %s | %s | %d %s, %s | %s | %s | %d | %.1fs | %s |\n", verdictMark(c.Verdict), c.Subject, c.Scenario,
			c.NodeCount, c.Nodes, c.Cluster, Expected(c), c.Observed, len(c.Reboots), float64(c.DurationMS)/1000, mdEscape(c.Message+notes(c)))
	}
	var subjects []string
	for _, c := range r.Cases {
		if !slices.Contains(subjects, c.Subject) {
			subjects = append(subjects, c.Subject)
		}
	}
	b.WriteString("\n| subject | reboots | detection p50 / p95 / p99 / max (ms) | reload p50 / p95 / p99 / max (ms) |\n|---|---|---|---|\n")
	for _, s := range subjects {
		det, rel := Latencies(r, s)
		d, l := Summarize("ms", det), Summarize("ms", rel)
		fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", s, l.Count, dist(d), dist(l))
	}
	return b.String()
}

// writeMatrix writes the conformance matrix: scenarios x subjects, each
// cell the verdict (linking to the case in index.html) with what was
// observed and expected.
func writeMatrix(b *strings.Builder, m Matrix) {
	b.WriteString("| scenario |")
	for _, s := range m.Subjects {
		fmt.Fprintf(b, " %s |", mdEscape(s))
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(m.Subjects)) + "\n")
	for _, row := range m.Rows {
		fmt.Fprintf(b, "| %s |", row.Scenario)
		for _, c := range row.Cells {
			if c.Case < 0 {
				b.WriteString(" not run |")
				continue
			}
			fmt.Fprintf(b, " [%s](%s#case-%d) %s / %s |", verdictMark(c.Verdict), HTMLFile, c.Case, c.Observed, c.Expected)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nEach cell: verdict, then observed / expected.\n")
}

func notes(c scenarios.CaseResult) string {
	if len(c.Notes) == 0 {
		return ""
	}
	return " (" + strings.Join(c.Notes, "; ") + ")"
}

func dist(d Distribution) string {
	if d.Count == 0 {
		return "none"
	}
	return fmt.Sprintf("%.0f / %.0f / %.0f / %.0f", d.P50, d.P95, d.P99, d.Max)
}

func verdictMark(v string) string {
	switch v {
	case scenarios.Pass:
		return "✅ pass"
	case scenarios.Fail:
		return "❌ fail"
	case scenarios.Error:
		return "⚠️ error"
	}
	return "⏭️ skipped"
}

func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
