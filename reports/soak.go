package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bootproof/bootproof/scenarios"
)

// Files WriteSoak writes.
const (
	SoakJSONFile = "soak.json"
	SoakMDFile   = "soak.md"
)

// Soak is the flake table of several runs of the same matrix: each case's
// verdict per run, and the cases whose verdict changed.
type Soak struct {
	Runs []string `json:"runs"`
	// Cases are sorted by name; Verdicts are in Runs order ("" where the
	// run lacks the case).
	Cases []SoakCase `json:"cases"`
	// Flaky counts the cases whose verdict differs in any run from the
	// first run's.
	Flaky int `json:"flaky"`
	// PerRun counts each run's verdicts.
	PerRun []Counts `json:"per_run"`
}

// SoakCase is one case across the runs.
type SoakCase struct {
	Case     string   `json:"case"`
	Verdicts []string `json:"verdicts"`
	Flaky    bool     `json:"flaky"`
	// Messages are the messages of the verdicts that differ from the
	// first run's, by run.
	Messages map[string]string `json:"messages,omitempty"`
}

// BuildSoak compares runs (name -> results), ordered by name.
func BuildSoak(runs map[string]scenarios.Results) Soak {
	var s Soak
	for name := range runs {
		s.Runs = append(s.Runs, name)
	}
	sort.Slice(s.Runs, func(i, j int) bool { return runOrder(s.Runs[i], s.Runs[j]) })
	byCase := map[string]*SoakCase{}
	for i, name := range s.Runs {
		s.PerRun = append(s.PerRun, Count(runs[name]))
		for _, c := range runs[name].Cases {
			k := CaseName(c)
			sc := byCase[k]
			if sc == nil {
				sc = &SoakCase{Case: k, Verdicts: make([]string, len(s.Runs))}
				byCase[k] = sc
			}
			sc.Verdicts[i] = c.Verdict
			if i > 0 && c.Verdict != sc.Verdicts[0] {
				if sc.Messages == nil {
					sc.Messages = map[string]string{}
				}
				sc.Messages[name] = c.Message
			}
		}
	}
	for _, sc := range byCase {
		for _, v := range sc.Verdicts[1:] {
			if v != sc.Verdicts[0] {
				sc.Flaky = true
			}
		}
		if sc.Flaky {
			s.Flaky++
		}
		s.Cases = append(s.Cases, *sc)
	}
	sort.Slice(s.Cases, func(i, j int) bool { return s.Cases[i].Case < s.Cases[j].Case })
	return s
}

// runOrder sorts run-2 before run-10.
func runOrder(a, b string) bool {
	var na, nb int
	_, errA := fmt.Sscanf(filepath.Base(a), "run-%d", &na)
	_, errB := fmt.Sscanf(filepath.Base(b), "run-%d", &nb)
	if errA == nil && errB == nil {
		return na < nb
	}
	return a < b
}

// ReadSoak reads the results.json of every subdirectory of dir that has
// one.
func ReadSoak(dir string) (map[string]scenarios.Results, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	runs := map[string]scenarios.Results{}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name(), ResultsFile)
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			continue
		}
		r, err := ReadResults(p)
		if err != nil {
			return nil, err
		}
		runs[e.Name()] = r
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%s: no run directory with a %s", dir, ResultsFile)
	}
	return runs, nil
}

// SoakMarkdown renders the flake table.
func SoakMarkdown(s Soak) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Soak: %d runs, %d cases, %d flaky\n\n", len(s.Runs), len(s.Cases), s.Flaky)
	b.WriteString("A case is flaky when its verdict in any run differs from the first run's.\n\n| run | passed | failed | errors | skipped |\n|---|---|---|---|---|\n")
	for i, r := range s.Runs {
		n := s.PerRun[i]
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d |\n", r, n.Pass, n.Fail, n.Error, n.Skipped)
	}
	b.WriteString("\n| case | " + strings.Join(s.Runs, " | ") + " | flaky |\n|---|" + strings.Repeat("---|", len(s.Runs)+1) + "\n")
	for _, c := range s.Cases {
		cells := make([]string, len(c.Verdicts))
		for i, v := range c.Verdicts {
			cells[i] = v
			if v == "" {
				cells[i] = "not run"
			}
			if i > 0 && v != c.Verdicts[0] {
				cells[i] = "**" + cells[i] + "**"
			}
		}
		flaky := ""
		if c.Flaky {
			flaky = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", mdEscape(c.Case), strings.Join(cells, " | "), flaky)
	}
	for _, c := range s.Cases {
		for _, r := range s.Runs {
			if m, ok := c.Messages[r]; ok {
				fmt.Fprintf(&b, "\n- %s, %s: %s", mdEscape(c.Case), r, mdEscape(SplitMessage(m).Head))
			}
		}
	}
	return b.String() + "\n"
}

// WriteSoak writes soak.json and soak.md into dir.
func WriteSoak(dir string, s Soak) error {
	if err := writeJSON(filepath.Join(dir, SoakJSONFile), s); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, SoakMDFile), []byte(SoakMarkdown(s)), 0o644)
}
