package reports

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"time"

	"github.com/bootproof/bootproof/scenarios"
)

var page = template.Must(template.New("index").Funcs(template.FuncMap{
	"name":     CaseName,
	"sec":      func(ms int64) string { return fmt.Sprintf("%.1fs", float64(ms)/1000) },
	"svg":      BuildTimeline,
	"short":    short,
	"anchor":   func(i int) string { return fmt.Sprintf("case-%d", i) },
	"expected": Expected,
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"/><title>bootproof report</title>
<style>
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;font-size:13px}
.pass{background:#e6f4e6}.fail{background:#fde2e2}.error{background:#fff1cc}.skipped{background:#eee}
.case{border-top:2px solid #ddd;margin-top:1.5em;padding-top:.5em}.msg{font-family:monospace;font-size:12px;white-space:pre-wrap}
.legend span{display:inline-block;margin-right:1em;font-size:12px}.sw{display:inline-block;width:12px;height:10px;margin-right:4px;vertical-align:middle}
</style></head><body>
<h1>bootproof report</h1>
<p>Generated {{.Generated.Format "2006-01-02 15:04:05 MST"}}: {{.Counts.Pass}} passed, {{.Counts.Fail}} failed, {{.Counts.Error}} errors, {{.Counts.Skipped}} skipped.{{with .Results.EnvironmentLine}} Environment: <code>{{.}}</code>.{{end}}
A case passes when what was observed matches what is expected of the subject: the <code>legacy</code> subject is expected to <em>fail</em> fast reboots, and a legacy pass of a fast reboot means the harness is broken.</p>
<h2>Conformance</h2>
<table><tr><th>scenario</th>{{range .Matrix.Subjects}}<th>{{.}}</th>{{end}}</tr>
{{range .Matrix.Rows}}<tr><td>{{.Scenario}}</td>{{range .Cells}}{{if ge .Case 0}}<td class="{{.Verdict}}"><a href="#{{anchor .Case}}">{{.Verdict}}</a> <small>observed {{.Observed}} / expected {{.Expected}}</small></td>{{else}}<td>not run</td>{{end}}{{end}}</tr>
{{end}}</table>
<h2>Cases</h2>
<table><tr><th>verdict</th><th>case</th><th>expected</th><th>observed</th><th>duration</th><th>message</th></tr>
{{range $i, $c := .Results.Cases}}<tr class="{{$c.Verdict}}"><td>{{$c.Verdict}}</td><td><a href="#{{anchor $i}}">{{name $c}}</a></td><td>{{expected $c}}</td><td>{{$c.Observed}}</td><td>{{sec $c.DurationMS}}</td><td class="msg">{{$c.Message}}</td></tr>
{{end}}</table>
<div class="legend"><span><i class="sw" style="background:#2ca02c"></i>Ready=True</span><span><i class="sw" style="background:#d62728"></i>Ready=Unknown</span><span><i class="sw" style="background:#ff7f0e"></i>Ready=False</span><span><i class="sw" style="background:#bebada"></i>boot (a colour per boot ID)</span><span><i class="sw" style="background:#1f77b4"></i>module loaded (kernel ground truth)</span><span><i class="sw" style="background:#ffcc00;opacity:.4"></i>grace-period window after a reboot</span><span><i class="sw" style="background:#9467bd"></i>reload latency</span><span><i class="sw" style="background:#2ca02c;border-radius:6px"></i>worker succeeded</span></div>
{{range $i, $c := .Results.Cases}}<div class="case" id="{{anchor $i}}">
<h3>{{name $c}} — {{$c.Verdict}}</h3>
<p>{{$c.Description}}</p>
<p class="msg">{{$c.Message}}</p>
{{range $c.Notes}}<p><em>{{.}}</em></p>{{end}}
<table><tr><th>assertion</th><th>ok</th><th>message</th></tr>{{range $c.Assertions}}<tr class="{{if .OK}}pass{{else}}fail{{end}}"><td>{{.Name}}</td><td>{{.OK}}</td><td class="msg">{{.Message}}</td></tr>{{end}}</table>
{{if $c.Reboots}}<table><tr><th>node</th><th>boot</th><th>planned</th><th>downtime</th><th>NotReady seen</th><th>detection</th><th>reload</th></tr>{{range $c.Reboots}}<tr><td>{{.Node}}</td><td>{{short .OldBootID}} → {{short .NewBootID}}</td><td>{{if .Planned}}yes{{else}}<b>no</b>{{end}}</td><td>{{if ge .DowntimeMS 0}}{{.DowntimeMS}}ms{{else}}unknown{{end}}</td><td>{{.NotReadySeen}}</td><td>{{.DetectionLatencyMS}}ms</td><td>{{.ReloadLatencyMS}}ms</td></tr>{{end}}</table>{{end}}
{{with svg $c}}<svg xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" role="img" aria-label="timeline">
{{range .Rects}}<rect x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}" fill="{{.Fill}}"{{if .Opacity}} fill-opacity="{{.Opacity}}"{{end}}{{if .Stroke}} stroke="{{.Stroke}}" stroke-dasharray="{{.Dash}}"{{end}}>{{if .Title}}<title>{{.Title}}</title>{{end}}</rect>
{{end}}{{range .Lines}}<line x1="{{.X1}}" y1="{{.Y1}}" x2="{{.X2}}" y2="{{.Y2}}" stroke="{{.Stroke}}" stroke-width="{{.Width}}"{{if .Dash}} stroke-dasharray="{{.Dash}}"{{end}}>{{if .Title}}<title>{{.Title}}</title>{{end}}</line>
{{end}}{{range .Circles}}<circle cx="{{.X}}" cy="{{.Y}}" r="{{.R}}" fill="{{.Fill}}"><title>{{.Title}}</title></circle>
{{end}}{{range .Texts}}<text x="{{.X}}" y="{{.Y}}" font-size="{{.Size}}" fill="{{.Fill}}"{{if .Anchor}} text-anchor="{{.Anchor}}"{{end}}>{{.Text}}</text>
{{end}}</svg>{{if .Note}}<p>{{.Note}}</p>{{end}}{{end}}
</div>
{{end}}</body></html>
`))

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
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
