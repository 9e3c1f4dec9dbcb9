package reports

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/bootproof/bootproof/scenarios"
)

// reportTemplate is the HTML report (RenderHTML).
//
//go:embed templates/report.html.tmpl
var reportTemplate string

// calibrationTemplate is the calibration's part of the HTML report of a
// calibration run (WriteCalibration).
//
//go:embed templates/calibration.html.tmpl
var calibrationTemplate string

var page = func() *template.Template {
	t := template.Must(template.New("index").Funcs(funcs).Parse(reportTemplate))
	template.Must(t.New("calibration").Parse(calibrationTemplate))
	return t
}()

var funcs = template.FuncMap{
	"name":           CaseName,
	"dur":            FormatMS,
	"svg":            BuildTimeline,
	"short":          short,
	"anchor":         func(i int) string { return fmt.Sprintf("case-%d", i) },
	"expected":       Expected,
	"state":          State,
	"glyph":          Glyph,
	"stateLabel":     StateLabel,
	"meaning":        StateMeaning,
	"figures":        CaseFigures,
	"pair":           pair,
	"message":        SplitMessage,
	"absent":         func() string { return Absent },
	"whyNoReload":    func() string { return WhyNoReload },
	"whyNoDetection": func() string { return WhyNoDetection },
	"whyNoDowntime":  func() string { return WhyNoDowntime },
	"latency":        func(ms int64, why string) latencyCell { return latencyCell{Value: ms, Why: why} },
	"bound":          func(b *scenarios.ReloadBoundResult) string { return b.Format(FormatDuration) },
	"join":           strings.Join,
	// moreDetails: an assertion has evidence its message does not name.
	"moreDetails": func(ds []scenarios.Detail) bool { return len(ds) > scenarios.DetailsShown },
	"cellGlyph":   CellGlyph,
	"cellClass":   CellClass,
	"worldsLine":  WorldsLine,
	"cellMeaning": CellMeaning,
}

// latencyCell is a figure of the reboot table: a duration, or Absent
// with why it did not happen.
type latencyCell struct {
	Value int64
	Why   string
}

type pageData struct {
	Results   scenarios.Results
	Matrix    Matrix
	Counts    Counts
	Summaries []SubjectSummary
	States    []string
	Chart     Picture
	Generated time.Time
	// Calibration, for a calibration run, replaces the summary lines and
	// the conformance matrix.
	Calibration *calibrationView
}

// calibrationView is what the HTML shows of a calibration.
type calibrationView struct {
	OK       bool
	Headline string
	Result   CalibrationResult
	Lines    []calibrationLine
	Matrix   calibrationMatrix
	Outcomes []string
}

// calibrationLine is a variant's line (VariantLine), and whether the
// variant came out as its truth says.
type calibrationLine struct {
	Variant, Text string
	OK            bool
}

// RenderHTML renders the HTML report: a summary line per subject, the
// conformance matrix, the latency chart, the cases, and per case its
// assertions, reboots and SVG timeline. It uses no JavaScript.
func RenderHTML(r scenarios.Results, generated time.Time) ([]byte, error) {
	return renderHTML(r, generated, nil)
}

// RenderCalibrationHTML renders the HTML report of a calibration run:
// the calibration (its headline, a line per variant and the matrix of
// scenario x variant, each cell caught, missed, passed, ... and linked
// to its case) in place of the summary lines and the conformance
// matrix, then the latency chart and the cases as RenderHTML has them.
func RenderCalibrationHTML(r scenarios.Results, c CalibrationResult, generated time.Time) ([]byte, error) {
	return renderHTML(r, generated, &c)
}

func renderHTML(r scenarios.Results, generated time.Time, cal *CalibrationResult) ([]byte, error) {
	var b bytes.Buffer
	data := pageData{Results: r, Matrix: BuildMatrix(r), Counts: Count(r), Summaries: Summaries(r), States: States,
		Chart: BuildLatencyChart(r), Generated: generated}
	if cal != nil {
		v := &calibrationView{OK: cal.OK(), Headline: CalibrationHeadline(*cal), Result: *cal, Matrix: buildCalibrationMatrix(*cal), Outcomes: cellOutcomes}
		for _, row := range cal.Rows {
			v.Lines = append(v.Lines, calibrationLine{Variant: row.Variant, Text: VariantLine(row), OK: row.Full()})
		}
		data.Calibration = v
	}
	if err := page.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("render HTML report: %w", err)
	}
	return b.Bytes(), nil
}

// WriteHTML writes index.html.
func WriteHTML(path string, r scenarios.Results, generated time.Time) error {
	data, err := RenderHTML(r, generated)
	if err != nil {
		return err
	}
	return writeFile(path, data, 0o644)
}
