package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/bootproof/bootproof/scenarios"
	"github.com/bootproof/bootproof/scenarios/trace"
)

// Files written by Write.
const (
	ResultsFile = "results.json"
	TraceFile   = "trace.json"
	JUnitFile   = "junit.xml"
	HTMLFile    = "index.html"
	SummaryFile = "summary.md"
)

// CaseName is the JUnit and HTML name of a case:
// "[<subject>] <scenario> (<nodes>, <cluster>)".
func CaseName(c scenarios.CaseResult) string {
	name := fmt.Sprintf("[%s] %s (%s, %s)", c.Subject, c.Scenario, c.Nodes, c.Cluster)
	if c.Attempt > 0 {
		name += fmt.Sprintf(" #%d", c.Attempt)
	}
	return name
}

// Write writes every report of a run into dir: results.json, trace.json,
// index.html, summary.md and, last, junit.xml. Each file is written under
// a temporary name and renamed into place, and a junit.xml already in dir
// is removed first, so junit.xml exists only once every other report is
// complete: a CI step that publishes it never sees a stale or partial
// one. When $GITHUB_STEP_SUMMARY is set the summary is appended there
// too. An error names the path that could not be written.
func Write(dir string, r scenarios.Results, generated time.Time) error {
	return write(dir, r, generated, nil)
}

// write writes the reports of Write and, for a calibration run (cal not
// nil), calibration.json and calibration.md, with the calibration at the
// top of index.html.
func write(dir string, r scenarios.Results, generated time.Time, cal *CalibrationResult) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report directory %s: %w", dir, err)
	}
	junit := filepath.Join(dir, JUnitFile)
	if err := os.Remove(junit); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the old %s: %w", junit, err)
	}
	r = withEmptyLists(r)
	if err := writeJSON(filepath.Join(dir, ResultsFile), r); err != nil {
		return err
	}
	var traces []scenarios.CaseTrace
	for _, c := range r.Cases {
		traces = append(traces, scenarios.CaseTrace{Case: CaseName(c), Events: c.Trace})
	}
	if err := writeJSON(filepath.Join(dir, TraceFile), traces); err != nil {
		return err
	}
	if cal != nil {
		if err := writeCalibrationFiles(dir, *cal); err != nil {
			return err
		}
	}
	html, err := renderHTML(r, generated, cal)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, HTMLFile), html, 0o644); err != nil {
		return err
	}
	md := Summary(r)
	if err := writeFile(filepath.Join(dir, SummaryFile), []byte(md), 0o644); err != nil {
		return err
	}
	if err := appendStepSummary(md); err != nil {
		return err
	}
	return WriteJUnit(junit, "bootproof", r, generated)
}

// appendStepSummary appends md to $GITHUB_STEP_SUMMARY when that is set.
func appendStepSummary(md string) error {
	p := os.Getenv("GITHUB_STEP_SUMMARY")
	if p == "" {
		return nil
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("$GITHUB_STEP_SUMMARY: %w", err)
	}
	_, err = f.WriteString(md)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("$GITHUB_STEP_SUMMARY %s: %w", p, err)
	}
	return nil
}

// withEmptyLists returns r with every nil list a consumer iterates made
// empty, so results.json says [] rather than null.
func withEmptyLists(r scenarios.Results) scenarios.Results {
	if r.Cases == nil {
		r.Cases = []scenarios.CaseResult{}
	}
	r.Cases = slices.Clone(r.Cases)
	for i := range r.Cases {
		c := &r.Cases[i]
		if c.Assertions == nil {
			c.Assertions = []scenarios.AssertionResult{}
		}
		if c.Reboots == nil {
			c.Reboots = []scenarios.RebootMetric{}
		}
		if c.Trace == nil {
			c.Trace = []trace.Event{}
		}
	}
	return r
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return writeFile(path, append(data, '\n'), 0o644)
}

// ReadResults reads a results.json.
func ReadResults(path string) (scenarios.Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return scenarios.Results{}, err
	}
	return DecodeResults(path, data)
}

// DecodeResults decodes the results.json data read from path.
func DecodeResults(path string, data []byte) (scenarios.Results, error) {
	var r scenarios.Results
	return r, decodeJSON(path, data, &r)
}

// decodeJSON decodes data, read from path, into v; the error names path.
func decodeJSON(path string, data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Rewrite reads results.json and trace.json from dir and writes every
// report again (after a change of the report code, or of the HTML); a
// calibration run's directory (with calibration.json) is judged again
// as that calibration (RewriteCalibration).
func Rewrite(dir string) (scenarios.Results, error) {
	r, err := ReadResults(filepath.Join(dir, ResultsFile))
	if err != nil {
		return r, fmt.Errorf("read results: %w", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, TraceFile))
	if err != nil {
		return r, fmt.Errorf("read trace: %w", err)
	}
	var traces []scenarios.CaseTrace
	if err := json.Unmarshal(data, &traces); err != nil {
		return r, fmt.Errorf("%s: %w", filepath.Join(dir, TraceFile), err)
	}
	byCase := map[string][]trace.Event{}
	for _, t := range traces {
		byCase[t.Case] = t.Events
	}
	for i := range r.Cases {
		r.Cases[i].Trace = byCase[CaseName(r.Cases[i])]
	}
	// A calibration run's directory is judged again as its calibration.
	if _, err := os.Stat(filepath.Join(dir, CalibrationJSONFile)); err == nil {
		if _, err := RewriteCalibration(dir, r, time.Now()); err != nil {
			return r, fmt.Errorf("rewrite the calibration: %w", err)
		}
		return r, nil
	}
	return r, Write(dir, r, time.Now())
}
