package reports

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// EnvBenchDir names the directory benchmarks write their figures to;
// 'make bench' sets it to _output/bench.
const EnvBenchDir = "BOOTPROOF_BENCH_DIR"

// Distribution summarises samples of one measured quantity.
type Distribution struct {
	Unit    string    `json:"unit"`
	Count   int       `json:"count"`
	Min     float64   `json:"min"`
	P50     float64   `json:"p50"`
	P90     float64   `json:"p90"`
	P95     float64   `json:"p95"`
	P99     float64   `json:"p99"`
	Max     float64   `json:"max"`
	Samples []float64 `json:"samples,omitempty"`
}

// Summarize computes a Distribution (nearest-rank percentiles).
func Summarize(unit string, samples []float64) Distribution {
	d := Distribution{Unit: unit, Count: len(samples), Samples: slices.Clone(samples)}
	if len(samples) == 0 {
		return d
	}
	s := slices.Sorted(slices.Values(samples))
	rank := func(p float64) float64 {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	d.Min, d.Max = s[0], s[len(s)-1]
	d.P50, d.P90, d.P95, d.P99 = rank(0.50), rank(0.90), rank(0.95), rank(0.99)
	return d
}

// BenchResult is one benchmark's figures, measured in one run.
type BenchResult struct {
	Name        string                  `json:"name"`
	Description string                  `json:"description"`
	Date        time.Time               `json:"date"`
	Machine     string                  `json:"machine"`
	Figures     map[string]Distribution `json:"figures"`
	Notes       []string                `json:"notes,omitempty"`
	// Comparison, when set, puts two sides' figures side by side.
	Comparison *BenchComparison `json:"comparison,omitempty"`
	// Table, when set, holds one row per step of a benchmark that measures
	// at several sizes (say a fleet at increasing node counts).
	Table *BenchTable `json:"table,omitempty"`
	// Requests, when set, counts the API requests the measured work made.
	Requests *RequestTable `json:"api_requests,omitempty"`
}

// BenchTable is a table of figures: a column per figure, a row per step,
// and a note per row (say why a step ended the run).
type BenchTable struct {
	Columns []TableColumn `json:"columns"`
	Rows    []TableRow    `json:"rows"`
}

// TableColumn names one column of a BenchTable and its unit.
type TableColumn struct {
	Name string `json:"name"`
	Unit string `json:"unit,omitempty"`
}

// TableRow is one row of a BenchTable: a value per column, in order; a
// row shorter than the columns was not measured past its last value (the
// Markdown shows "-").
type TableRow struct {
	Values []float64 `json:"values"`
	Note   string    `json:"note,omitempty"`
}

func (t *BenchTable) markdown(md *strings.Builder) {
	md.WriteString("|")
	for _, c := range t.Columns {
		if c.Unit != "" {
			fmt.Fprintf(md, " %s (%s) |", c.Name, c.Unit)
		} else {
			fmt.Fprintf(md, " %s |", c.Name)
		}
	}
	md.WriteString(" note |\n|")
	md.WriteString(strings.Repeat("---|", len(t.Columns)+1))
	md.WriteString("\n")
	for _, r := range t.Rows {
		md.WriteString("|")
		for i := range t.Columns {
			v := "-"
			if i < len(r.Values) {
				v = num(r.Values[i])
			}
			fmt.Fprintf(md, " %s |", v)
		}
		fmt.Fprintf(md, " %s |\n", r.Note)
	}
	md.WriteString("\n")
}

// RequestTable counts API requests by client, verb and resource over a
// window of a benchmark, per unit of the work done in it (a reload).
type RequestTable struct {
	// Unit names the unit of work ("reload").
	Unit string `json:"unit"`
	// Units is how many units of work the window held.
	Units int `json:"units"`
	// Window says which requests were counted, From and To bound them.
	Window string         `json:"window"`
	From   time.Time      `json:"from"`
	To     time.Time      `json:"to"`
	Rows   []RequestCount `json:"rows"`
}

// RequestCount is how many requests of one client, verb and resource
// were counted, and how many that is per unit of work.
type RequestCount struct {
	Client   string  `json:"client"`
	Verb     string  `json:"verb"`
	Resource string  `json:"resource"`
	Total    int     `json:"total"`
	PerUnit  float64 `json:"per_unit"`
}

func (t *RequestTable) markdown(md *strings.Builder) {
	fmt.Fprintf(md, "API requests per %s (%d %ss; %s):\n\n| client | verb | resource | total | per %s |\n|---|---|---|---|---|\n",
		t.Unit, t.Units, t.Unit, t.Window, t.Unit)
	for _, r := range t.Rows {
		fmt.Fprintf(md, "| %s | %s | %s | %d | %s |\n", r.Client, r.Verb, r.Resource, r.Total, strconv.FormatFloat(r.PerUnit, 'f', 2, 64))
	}
	md.WriteString("\n")
}

// BenchComparison is a side-by-side table of two sides measured in one
// run (say bootproof and KWOK): a row per figure, a value per side, and the
// ratio first/second where a ratio means something.
type BenchComparison struct {
	Sides [2]string       `json:"sides"`
	Rows  []ComparisonRow `json:"rows"`
}

// ComparisonRow is one figure of a BenchComparison.
type ComparisonRow struct {
	Figure string     `json:"figure"`
	Unit   string     `json:"unit"`
	Values [2]float64 `json:"values"`
	// Ratio is Values[0]/Values[1]; nil where it means nothing (counts,
	// latencies) or Values[1] is 0.
	Ratio *float64 `json:"ratio,omitempty"`
}

// Row returns a row without a ratio.
func Row(figure, unit string, first, second float64) ComparisonRow {
	return ComparisonRow{Figure: figure, Unit: unit, Values: [2]float64{first, second}}
}

// RatioRow returns a row with the ratio first/second (none when second
// is 0).
func RatioRow(figure, unit string, first, second float64) ComparisonRow {
	r := Row(figure, unit, first, second)
	if second != 0 {
		q := first / second
		r.Ratio = &q
	}
	return r
}

func (c *BenchComparison) markdown(md *strings.Builder) {
	fmt.Fprintf(md, "| figure | unit | %s | %s | %s/%s |\n|---|---|---|---|---|\n", c.Sides[0], c.Sides[1], c.Sides[0], c.Sides[1])
	for _, r := range c.Rows {
		ratio := "-"
		if r.Ratio != nil {
			ratio = strconv.FormatFloat(*r.Ratio, 'f', 2, 64)
		}
		fmt.Fprintf(md, "| %s | %s | %s | %s | %s |\n", r.Figure, r.Unit, num(r.Values[0]), num(r.Values[1]), ratio)
	}
	md.WriteString("\n")
}

// WriteBench writes <dir>/<name>.json and <dir>/<name>.md.
func WriteBench(dir string, r BenchResult) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench %s: %w", r.Name, err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("bench %s: %w", r.Name, err)
	}
	if err := writeFile(filepath.Join(dir, r.Name+".json"), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("bench %s: %w", r.Name, err)
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# %s\n\n%s\n\nMeasured %s on %s.\n\n", r.Name, r.Description, r.Date.Format(time.RFC3339), r.Machine)
	if r.Comparison != nil {
		r.Comparison.markdown(&md)
	}
	if r.Table != nil {
		r.Table.markdown(&md)
	}
	md.WriteString("| figure | unit | n | min | p50 | p90 | p95 | p99 | max |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range r.Figures {
			if !yield(k) {
				return
			}
		}
	}) {
		d := r.Figures[k]
		fmt.Fprintf(&md, "| %s | %s | %d | %s | %s | %s | %s | %s | %s |\n", k, d.Unit, d.Count, num(d.Min), num(d.P50), num(d.P90), num(d.P95), num(d.P99), num(d.Max))
	}
	if r.Requests != nil {
		md.WriteString("\n")
		r.Requests.markdown(&md)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&md, "\n%s\n", n)
	}
	if err := writeFile(filepath.Join(dir, r.Name+".md"), []byte(md.String()), 0o644); err != nil {
		return fmt.Errorf("bench %s: %w", r.Name, err)
	}
	return nil
}

// MachineDescription names the CPU count and kernel of this machine for
// benchmark reports.
func MachineDescription() string {
	host, _ := os.Hostname()
	release, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return fmt.Sprintf("%s, %d CPUs, Linux %s", host, runtime.NumCPU(), strings.TrimSpace(string(release)))
}

// num prints a figure with 4 significant digits and no exponent
// notation: 10153, 23.5, 0.0123.
func num(v float64) string {
	s := strconv.FormatFloat(v, 'g', 4, 64)
	if strings.ContainsRune(s, 'e') {
		s = strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	}
	return s
}
