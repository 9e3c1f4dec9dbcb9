package reports

import (
	"fmt"
	"html"
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

// Summary renders the Markdown summary: counts, a line per subject, the
// conformance matrix, a table of every case and the latency distribution
// per subject.
func Summary(r scenarios.Results) string {
	var b strings.Builder
	n := Count(r)
	fmt.Fprintf(&b, "## bootproof: %d passed, %d failed, %d errors, %d skipped\n\n", n.Pass, n.Fail, n.Error, n.Skipped)
	for _, s := range Summaries(r) {
		mark := stateLooks[StatePass].emoji
		if !s.AllAsExpected() {
			mark = stateLooks[StateFail].emoji
		}
		fmt.Fprintf(&b, "- %s %s\n", mark, mdEscape(s.Line()))
	}
	if len(r.Cases) > 0 {
		b.WriteString("\n")
	}
	if env := r.EnvironmentLine(); env != "" {
		fmt.Fprintf(&b, "Environment: %s\n\n", mdEscape(env))
	}
	writeMatrix(&b, BuildMatrix(r))
	b.WriteString("\n| verdict | subject | scenario | nodes | expected | observed | reboots | reload p50 / max | duration | message |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.Cases {
		f := CaseFigures(c)
		fmt.Fprintf(&b, "| %s | %s | %s | %d %s, %s | %s | %s | %d | %s | %s | %s |\n", stateMark(State(c)), c.Subject, c.Scenario,
			c.NodeCount, c.Nodes, c.Cluster, Expected(c), c.Observed, len(c.Reboots), pair(f.Reload), FormatMS(c.DurationMS), mdMessage(c.Message+notes(c)))
	}
	var subjects []string
	for _, c := range r.Cases {
		if !slices.Contains(subjects, c.Subject) {
			subjects = append(subjects, c.Subject)
		}
	}
	b.WriteString("\n| subject | reboots | not reloaded | detection p50 / p95 / p99 / max | reload p50 / p95 / p99 / max |\n|---|---|---|---|---|\n")
	for _, s := range subjects {
		reboots, notReloaded := 0, 0
		for _, c := range r.Cases {
			if c.Subject == s {
				f := CaseFigures(c)
				reboots, notReloaded = reboots+f.Reboots, notReloaded+f.NotReloaded
			}
		}
		det, rel := Latencies(r, s)
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s |\n", s, reboots, notReloaded, dist(Summarize("ms", det)), dist(Summarize("ms", rel)))
	}
	fmt.Fprintf(&b, "\n%s: a latency that did not happen (reload: %s; detection: %s).\n", Absent, WhyNoReload, WhyNoDetection)
	return b.String()
}

// writeMatrix writes the conformance matrix: scenarios x subjects, each
// cell the verdict (linking to the case in index.html) and the case's
// reload latency; a cell that did not go as expected also says what was
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
			fmt.Fprintf(b, " [%s](%s#case-%d)", stateMark(c.State), HTMLFile, c.Case)
			switch r := c.Repeats(); {
			case r != "":
				fmt.Fprintf(b, " observed %s, expected %s", r, c.Expected)
			case c.State == StateFail || c.State == StateError:
				fmt.Fprintf(b, " observed %s, expected %s", c.Observed, c.Expected)
			case c.State == StateExpectedFailure:
				fmt.Fprintf(b, " %s", c.Expected)
			}
			if len(c.Unjudged) > 0 {
				fmt.Fprintf(b, " · ⚠️ partly judged: %s", mdEscape(strings.Join(c.Unjudged, "; ")))
			}
			fmt.Fprintf(b, " · %s |", c.Figures.KeyFigure())
		}
		b.WriteString("\n")
	}
	b.WriteString("\nEach cell: the verdict (☑️ expected failure: the subject failed as expected of it, through the assertions named), then the reload latency, p50 / max over the case's reboots.\n")
}

// notes are the case's notes and the parts of its assertions that were
// not judged, for its message.
func notes(c scenarios.CaseResult) string {
	all := append(append([]string{}, c.Notes...), c.Unjudged()...)
	if len(all) == 0 {
		return ""
	}
	return " (" + strings.Join(all, "; ") + ")"
}

func dist(d Distribution) string {
	if d.Count == 0 {
		return Absent
	}
	return strings.Join([]string{formatMSFloat(d.P50), formatMSFloat(d.P95), formatMSFloat(d.P99), formatMSFloat(d.Max)}, " / ")
}

// stateMark is a state's emoji and label in Markdown.
func stateMark(state string) string { return stateLooks[state].emoji + " " + stateLooks[state].label }

// mdMessage renders a message for a table cell: as it is when short,
// else its head with the whole message in a <details>.
func mdMessage(msg string) string {
	m := SplitMessage(msg)
	if !m.Long {
		return mdEscape(html.EscapeString(m.Full))
	}
	return "<details><summary>" + mdEscape(html.EscapeString(m.Head)) + "</summary>" + mdEscape(html.EscapeString(m.Full)) + "</details>"
}

// mdEscape keeps s on one line of a table cell.
func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "\n", " ")
}
