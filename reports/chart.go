package reports

import (
	"fmt"
	"math"

	"github.com/bootproof/bootproof/scenarios"
)

// The latency chart's layout: a row per scenario x subject, grouped by
// scenario, labels on the left, the values in a column on the right.
const (
	chLeft     = 300.0
	chPlot     = 480.0
	chRight    = 360.0
	chRow      = 18.0
	chGroupGap = 8.0
	chTop      = 40.0
)

var subjectColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"}

// BuildLatencyChart draws the run's detection and reload latencies per
// scenario and subject: for each case a thin bar (detection) and a thick
// one (reload) to the p50 over its reboots, each with a whisker to the
// max, and the values as text. A case without reboots says so; one whose
// reboots never reloaded shows Absent with the reason as its tooltip.
func BuildLatencyChart(r scenarios.Results) Picture {
	m := BuildMatrix(r)
	p := Picture{Label: "detection and reload latency per scenario and subject", Width: chLeft + chPlot + chRight}
	scale := niceCeil(chartMax(m))
	x := func(ms float64) float64 { return chLeft + chPlot*ms/scale }
	for i, s := range m.Subjects {
		lx := chLeft + float64(i%4)*130
		ly := 12 + float64(i/4)*14
		p.Rects = append(p.Rects, Rect{X: lx, Y: ly - 8, W: 10, H: 10, Fill: subjectColor(i)})
		p.Texts = append(p.Texts, Text{X: lx + 14, Y: ly, Text: s, Size: 11, Fill: "#222"})
	}
	legendH := 14 * float64((len(m.Subjects)+3)/4)
	top := max(chTop, 12+legendH+12)
	p.Texts = append(p.Texts, Text{X: 4, Y: 12, Text: "thin bar: detection, thick bar: reload", Size: 10, Fill: "#555"},
		Text{X: 4, Y: 25, Text: "bar: p50 over the case's reboots; whisker: max", Size: 10, Fill: "#555"})
	y := top
	for _, row := range m.Rows {
		first := true
		for j, cell := range row.Cells {
			if cell.Case < 0 {
				continue
			}
			if first {
				p.Texts = append(p.Texts, Text{X: 4, Y: y + 12, Text: row.Scenario, Size: 11, Fill: "#222"})
				first = false
			}
			p.Texts = append(p.Texts, Text{X: chLeft - 6, Y: y + 12, Text: m.Subjects[j], Anchor: "end", Size: 10, Fill: "#555"})
			p.Rects = append(p.Rects, Rect{X: chLeft, Y: y + 1, W: chPlot, H: chRow - 2, Fill: "#f6f6f6"})
			chartCell(&p, x, y, r.Cases[cell.Case], cell, subjectColor(j))
			y += chRow
		}
		if !first {
			y += chGroupGap
		}
	}
	chartAxis(&p, x, scale, top, y)
	p.Height = y + 24
	return p
}

// chartCell draws one case's bars at y.
func chartCell(p *Picture, x func(float64) float64, y float64, c scenarios.CaseResult, cell MatrixCell, color string) {
	f := cell.Figures
	what := fmt.Sprintf("%s, %s", c.Subject, c.Scenario)
	if f.Reboots == 0 {
		p.Texts = append(p.Texts, Text{X: chLeft + 4, Y: y + 12, Text: "no reboot (" + StateLabel(cell.State) + ")", Size: 10, Fill: "#777"})
		return
	}
	bar := func(d Distribution, top, h float64, opacity float64, name, means string) {
		if d.Count == 0 {
			return
		}
		p.Rects = append(p.Rects, Rect{X: chLeft, Y: top, W: max(1, x(d.P50)-chLeft), H: h, Fill: color, Opacity: opacity,
			Title: fmt.Sprintf("%s: %s latency p50 %s, max %s over %s (%s)", what, name, formatMSFloat(d.P50), formatMSFloat(d.Max),
				plural(d.Count, "reboot", "reboots"), means)})
		if d.Max > d.P50 {
			mid := top + h/2
			p.Lines = append(p.Lines, Line{X1: x(d.P50), Y1: mid, X2: x(d.Max), Y2: mid, Stroke: color, Width: 1},
				Line{X1: x(d.Max), Y1: top, X2: x(d.Max), Y2: top + h, Stroke: color, Width: 1})
		}
	}
	bar(f.Detection, y+3, 3, 0.45, "detection", "new boot visible → loader pod created")
	bar(f.Reload, y+7, 8, 0.9, "reload", "new boot visible → module loaded in the new boot")
	label := Text{X: chLeft + chPlot + 8, Y: y + 13, Size: 10, Fill: "#222", Text: "reload " + pair(f.Reload) + " · detection " + pair(f.Detection)}
	if f.Reload.Count == 0 {
		label.Text, label.Fill = "reload "+Absent+" (not reloaded)", "#b00020"
		label.Title = "no reload: " + WhyNoReload
	} else if f.NotReloaded > 0 {
		label.Text += fmt.Sprintf("; %d of %d not reloaded", f.NotReloaded, f.Reboots)
		label.Title = "not reloaded: " + WhyNoReload
	}
	if f.Detection.Count == 0 && f.Reload.Count > 0 {
		label.Title = "no detection: " + WhyNoDetection
	}
	if late, slo := lateReloads(c); slo > 0 && f.Reload.Count > 0 {
		label.Text += " · SLO " + formatMSFloat(float64(slo))
		if late > 0 {
			label.Text += fmt.Sprintf(": %d late", late)
			label.Fill = "#b00020"
			label.Title = fmt.Sprintf("%s after its window opened (the new boot visible, the subject able to act), over the service level: %s",
				plural(late, "reload came", "reloads came"), c.ReloadBound.Format(FormatDuration))
		}
	}
	p.Texts = append(p.Texts, label)
}

// lateReloads counts the case's late reloads (reload-slo) and gives the
// largest service level its reloads were judged against (0: none).
func lateReloads(c scenarios.CaseResult) (late int, sloMS int64) {
	for _, a := range c.Assertions {
		if a.Name != scenarios.AssertReloadSLO {
			continue
		}
		for _, r := range a.Reloads {
			sloMS = max(sloMS, r.SLOMS)
			if r.Late {
				late++
			}
		}
	}
	return late, sloMS
}

// chartAxis draws the latency axis under the rows, with grid lines from
// top to bottom.
func chartAxis(p *Picture, x func(float64) float64, scale, top, bottom float64) {
	const ticks = 5
	for i := 0; i <= ticks; i++ {
		ms := scale * float64(i) / ticks
		p.Lines = append(p.Lines, Line{X1: x(ms), Y1: top, X2: x(ms), Y2: bottom, Stroke: "#ddd", Width: 0.5})
		p.Texts = append(p.Texts, Text{X: x(ms), Y: bottom + 12, Text: formatMSFloat(ms), Anchor: "middle", Size: 9, Fill: "#555"})
	}
	p.Texts = append(p.Texts, Text{X: chLeft + chPlot, Y: bottom + 22, Text: "latency after the new boot became visible", Anchor: "end", Size: 9, Fill: "#555"})
}

// chartMax is the largest latency the chart must show, at least 100 ms.
func chartMax(m Matrix) float64 {
	top := 100.0
	for _, row := range m.Rows {
		for _, c := range row.Cells {
			if c.Case >= 0 {
				top = max(top, c.Figures.Reload.Max, c.Figures.Detection.Max)
			}
		}
	}
	return top
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, so the axis's
// five ticks are round numbers.
func niceCeil(v float64) float64 {
	exp := math.Pow(10, math.Floor(math.Log10(v)))
	for _, f := range []float64{1, 2, 5, 10} {
		if v <= f*exp {
			return f * exp
		}
	}
	return 10 * exp
}

func subjectColor(i int) string { return subjectColors[i%len(subjectColors)] }
