package mutate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bootproof/bootproof/scenarios"
)

// Files of a mutation run's report.
const (
	ReportJSONFile = "mutate.json"
	ReportMDFile   = "mutate.md"
	// CoverageFile is the unmutated reconciler's coverage profile in the
	// catalog (go tool cover -html=coverage.txt shows it).
	CoverageFile = "coverage.txt"
)

// Report is a mutation run, judged.
type Report struct {
	// Commit is the checkout's commit the mutants come from.
	Commit   string    `json:"commit,omitempty"`
	Started  time.Time `json:"started"`
	WallMS   int64     `json:"wall_ms"`
	Packages []string  `json:"packages"`
	// Generated is how many mutants the packages give; Sample, when
	// set, how many of them this run judged and how they were chosen.
	Generated int     `json:"generated"`
	Sample    *Sample `json:"sample,omitempty"`
	// Scenarios judged the mutants.
	Scenarios []string `json:"scenarios"`
	Parallel  int      `json:"parallel"`
	// Counts per status, over the mutants this run judged.
	Counts map[Status]int `json:"counts"`
	// Score is killed over the mutants that could be killed: those
	// judged, less the equivalent (by the triage or by construction) and
	// those that do not compile.
	Score Ratio `json:"score"`
	// ScenarioKills counts, per scenario, the mutants it killed (each
	// mutant is killed by the first scenario that fails it).
	ScenarioKills map[string]int `json:"scenario_kills"`
	Baseline      []Case         `json:"baseline"`
	// Reached counts the statements of the mutated packages the
	// unmutated reconciler ran in the catalog.
	Reached Ratio    `json:"statements_reached"`
	Results []Result `json:"mutants"`
	// StaleTriage lists triage entries that match no generated mutant.
	StaleTriage []string `json:"stale_triage,omitempty"`
}

// Sample is a run of some of the mutants.
type Sample struct {
	Size int    `json:"size"`
	Seed string `json:"seed"`
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

func (r Ratio) String() string {
	return fmt.Sprintf("%.1f %% (%d of %d)", r.Percent(), r.Count, r.Total)
}

// Summarize fills the counts, the score and the scenarios' kills from
// the results.
func (r *Report) Summarize() {
	r.Counts = map[Status]int{}
	r.ScenarioKills = map[string]int{}
	for _, res := range r.Results {
		r.Counts[res.Status]++
		if res.KilledBy != nil {
			r.ScenarioKills[res.KilledBy.Scenario]++
		}
	}
	r.Score = Ratio{Count: r.Counts[Killed], Total: r.Counts[Killed] + r.Counts[Survived] + r.Counts[Gap] + r.Counts[Mislabelled] + r.Counts[NotJudged]}
}

// OK reports a run whose every killable mutant is killed or explained:
// no survivor without a triage entry, nothing mislabelled or not judged,
// no triage entry contradicted by a kill, and at least minScore percent.
func (r *Report) OK(minScore float64) bool {
	return r.Counts[Survived] == 0 && r.Sound() && r.Score.Percent() >= minScore
}

// Sound reports a run with nothing no triage can excuse: no mutant
// mislabelled (a defect reported as an error), none left not judged, and
// no triage entry contradicted by a kill. Unexplained survivors are left
// to OK.
func (r *Report) Sound() bool {
	return r.Counts[Mislabelled] == 0 && r.Counts[NotJudged] == 0 && len(r.Contradicted()) == 0
}

// Contradicted lists the mutants the triage calls equivalent that were
// killed.
func (r *Report) Contradicted() []Result {
	var out []Result
	for _, res := range r.Results {
		if res.TriagedButKilled {
			out = append(out, res)
		}
	}
	return out
}

// Headline is the run in one line.
func (r *Report) Headline() string {
	what := fmt.Sprintf("%d mutants", r.Generated)
	if r.Sample != nil {
		what = fmt.Sprintf("a sample of %d of %d mutants (seed %s)", r.Sample.Size, r.Generated, r.Sample.Seed)
	}
	return fmt.Sprintf("mutation score %s over %s: %d killed, %d survived unexplained, %d known gaps, %d equivalent, %d mislabelled, %d not compiling, %d unobservable, %d not judged",
		r.Score, what, r.Counts[Killed], r.Counts[Survived], r.Counts[Gap], r.Counts[Equivalent], r.Counts[Mislabelled], r.Counts[NotCompiling],
		r.Counts[Unobservable], r.Counts[NotJudged])
}

// Write writes mutate.json and mutate.md into dir.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ReportJSONFile), append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ReportMDFile), []byte(r.Markdown()), 0o644)
}

// rerun counts the cases (the baseline's and the mutants') that ended in
// an error and ran once more, and those whose second attempt erred too.
func (r *Report) rerun() (again, erred int) {
	count := func(cs []Case) {
		for _, c := range cs {
			if c.ErrorBefore != "" {
				again++
				if c.Verdict == scenarios.Error {
					erred++
				}
			}
		}
	}
	count(r.Baseline)
	for _, res := range r.Results {
		count(res.Cases)
	}
	return again, erred
}

// Markdown renders the report.
func (r *Report) Markdown() string {
	var b strings.Builder
	status := "✅"
	if !r.OK(0) {
		status = "❌"
	}
	fmt.Fprintf(&b, "# bootproof mutation testing\n\n%s %s.\n\n", status, r.Headline())
	fmt.Fprintf(&b, "Mutants of %s", strings.Join(r.Packages, ", "))
	if r.Commit != "" {
		fmt.Fprintf(&b, " at %s", r.Commit)
	}
	fmt.Fprintf(&b, ", judged by %d scenarios on the embedded cluster with simulated nodes, %d cases at once; wall time %s.\n\n",
		len(r.Scenarios), r.Parallel, (time.Duration(r.WallMS) * time.Millisecond).Round(time.Second))
	fmt.Fprintf(&b, "The unmutated reconciler passed every scenario and ran %s of the mutated packages' statements; a mutant in code no scenario runs "+
		"is not judged and must be explained like a survivor.\n\n", r.Reached)
	b.WriteString("Score = killed ÷ (judged − equivalent − unobservable − not compiling). A mutant is killed only by a case whose verdict is " +
		"`fail` through a judged assertion; a case that ends in an error never kills, and a mutant with an error and no kill is *mislabelled*. " +
		"A survivor was judged by every scenario.\n\n")
	if again, erred := r.rerun(); again > 0 {
		fmt.Fprintf(&b, "%d case(s) ended in an error (no verdict: an invalid run, a fault of the cluster) and ran once more, as every such case does; "+
			"%d ended in an error again.\n\n", again, erred)
	}
	r.writeByFile(&b)
	r.writeKills(&b)
	r.writeList(&b, Survived, "Survivors (not explained)", "Each needs a scenario, action or assertion that kills it, or a triage entry saying why it is equivalent.")
	r.writeList(&b, Gap, "Known gaps", "Real defects the catalog cannot see yet; the triage file names the situation it lacks. They count as not killed.")
	r.writeList(&b, Mislabelled, "Mislabelled", "A case ended in an error where the reconciler was at fault.")
	r.writeContradicted(&b)
	r.writeList(&b, Equivalent, "Equivalent (triaged)", "Survived every scenario; the triage file says why the change cannot alter what the reconciler does.")
	r.writeList(&b, NotJudged, "Not judged", "")
	r.writeList(&b, NotCompiling, "Not compiling", "")
	r.writeList(&b, Unobservable, "Unobservable by construction", "The change lies wholly in a message for people; these mutants are not run.")
	if len(r.StaleTriage) > 0 {
		b.WriteString("\n## Stale triage entries\n\n")
		for _, s := range r.StaleTriage {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	return b.String()
}

// writeByFile writes mutants by file and operator: killed of killable.
func (r *Report) writeByFile(b *strings.Builder) {
	type cell struct{ killed, killable, all int }
	files := map[string]map[Operator]*cell{}
	for _, res := range r.Results {
		if files[res.File] == nil {
			files[res.File] = map[Operator]*cell{}
		}
		c := files[res.File][res.Operator]
		if c == nil {
			c = &cell{}
			files[res.File][res.Operator] = c
		}
		c.all++
		switch res.Status {
		case Killed:
			c.killed++
			c.killable++
		case Survived, Gap, Mislabelled, NotJudged:
			c.killable++
		}
	}
	b.WriteString("## Mutants by file and operator\n\nEach cell: killed / killable (all generated).\n\n| file |")
	var ops []Operator
	for _, o := range Operators {
		for _, f := range files {
			if f[o] != nil {
				ops = append(ops, o)
				break
			}
		}
	}
	for _, o := range ops {
		fmt.Fprintf(b, " %s |", o)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(ops)) + "\n")
	for _, f := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(b, "| %s |", f)
		for _, o := range ops {
			if c := files[f][o]; c != nil {
				fmt.Fprintf(b, " %d/%d (%d) |", c.killed, c.killable, c.all)
			} else {
				b.WriteString(" |")
			}
		}
		b.WriteString("\n")
	}
}

// writeKills writes the scenarios' kills and the kill matrix.
func (r *Report) writeKills(b *strings.Builder) {
	b.WriteString("\n## Kills by scenario\n\n| scenario | mutants killed |\n|---|---|\n")
	names := slices.Clone(r.Scenarios)
	slices.SortStableFunc(names, func(a, c string) int { return cmp.Compare(r.ScenarioKills[c], r.ScenarioKills[a]) })
	for _, s := range names {
		fmt.Fprintf(b, "| %s | %d |\n", s, r.ScenarioKills[s])
	}
	b.WriteString("\n## Kill matrix\n\n| mutant | where | operator | change | killed by | through |\n|---|---|---|---|---|---|\n")
	for _, res := range r.Results {
		if res.Status != Killed {
			continue
		}
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s |\n", res.ID, res.Where(), res.Operator, mdCell(res.Change()), res.KilledBy.Scenario,
			strings.Join(res.KilledBy.Failed, ", "))
	}
}

func (r *Report) writeList(b *strings.Builder, st Status, title, intro string) {
	var rows []Result
	for _, res := range r.Results {
		if res.Status == st {
			rows = append(rows, res)
		}
	}
	fmt.Fprintf(b, "\n## %s (%d)\n\n", title, len(rows))
	if len(rows) == 0 {
		return
	}
	if intro != "" {
		b.WriteString(intro + "\n\n")
	}
	b.WriteString("| mutant | where | function | operator | change | why |\n|---|---|---|---|---|---|\n")
	for _, res := range rows {
		why := res.Why
		if res.Triage != "" {
			why += " (" + res.Triage + ")"
		}
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s |\n", res.ID, res.Where(), mdCell(res.Func), res.Operator, mdCell(res.Change()), mdCell(short(why, 300)))
	}
}

func (r *Report) writeContradicted(b *strings.Builder) {
	rows := r.Contradicted()
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Triage contradicted (%d)\n\nThe triage file calls these equivalent, but a case killed them: the entry is wrong.\n\n", len(rows))
	for _, res := range rows {
		fmt.Fprintf(b, "- mutant %d (%s, %s): killed by %s through %s\n", res.ID, res.Where(), mdCell(res.Change()), res.KilledBy.Scenario,
			strings.Join(res.KilledBy.Failed, ", "))
	}
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "`", "'").Replace(s)
}
