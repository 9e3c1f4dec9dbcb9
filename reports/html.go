package reports

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"time"

	"github.com/bootproof/bootproof/scenarios"
)

// reportTemplate is the HTML report: a conformance matrix, a table of
// cases, and per case its assertions, reboots and SVG timeline.
//
//go:embed templates/report.html.tmpl
var reportTemplate string

var page = template.Must(template.New("index").Funcs(template.FuncMap{
	"name":     CaseName,
	"sec":      func(ms int64) string { return fmt.Sprintf("%.1fs", float64(ms)/1000) },
	"svg":      BuildTimeline,
	"short":    short,
	"anchor":   func(i int) string { return fmt.Sprintf("case-%d", i) },
	"expected": Expected,
}).Parse(reportTemplate))

type pageData struct {
	Results   scenarios.Results
	Matrix    Matrix
	Counts    Counts
	Generated time.Time
}

// RenderHTML renders the HTML report.
func RenderHTML(r scenarios.Results, generated time.Time) ([]byte, error) {
	var b bytes.Buffer
	if err := page.Execute(&b, pageData{Results: r, Matrix: BuildMatrix(r), Counts: Count(r), Generated: generated}); err != nil {
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
