package reports

import (
	"fmt"
	"sort"
	"strings"

	"github.com/bootproof/bootproof/scenarios"
)

// Timeline is an SVG picture of one case, as plain shapes that the HTML
// template renders (html/template escapes every value).
type Timeline struct {
	Width, Height float64
	Rects         []Rect
	Lines         []Line
	Texts         []Text
	Circles       []Circle
	Note          string
}

// Rect is an SVG rect.
type Rect struct {
	X, Y, W, H   float64
	Fill, Title  string
	Opacity      float64
	Stroke, Dash string
}

// Line is an SVG line.
type Line struct {
	X1, Y1, X2, Y2 float64
	Stroke, Dash   string
	Width          float64
	Title          string
}

// Text is an SVG text.
type Text struct {
	X, Y   float64
	Text   string
	Anchor string
	Size   float64
	Fill   string
}

// Circle is an SVG circle.
type Circle struct {
	X, Y, R     float64
	Fill, Title string
}

const (
	tlLeft     = 170.0
	tlPlot     = 880.0
	tlLane     = 14.0
	tlLaneGap  = 4.0
	tlGroupGap = 16.0
	tlTop      = 24.0
	maxNodes   = 6
)

var lanesPerNode = []string{"heartbeats", "Ready", "boot", "module loaded (truth)", "worker pods"}

var bootColors = []string{"#8dd3c7", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5", "#bc80bd", "#ccebc5", "#ffed6f"}

// BuildTimeline lays out the trace of c.
func BuildTimeline(c scenarios.CaseResult) Timeline {
	end := c.DurationMS
	for _, e := range c.Trace {
		end = max(end, e.TMS)
	}
	for _, e := range c.Trace {
		if e.Kind == scenarios.TraceAction && strings.Contains(e.Detail, "(downtime") {
			end = max(end, e.TMS+c.GracePeriodMS+500)
		}
	}
	end = max(end, 1000)
	x := func(ms int64) float64 { return tlLeft + tlPlot*float64(ms)/float64(end) }

	var nodes []string
	seen := map[string]bool{}
	for _, e := range c.Trace {
		if e.Node != "" && !seen[e.Node] {
			seen[e.Node] = true
			nodes = append(nodes, e.Node)
		}
	}
	sort.Strings(nodes)
	t := Timeline{Width: tlLeft + tlPlot + 20}
	if len(nodes) > maxNodes {
		t.Note = fmt.Sprintf("showing %d of %d nodes", maxNodes, len(nodes))
		nodes = nodes[:maxNodes]
	}
	groupH := float64(len(lanesPerNode))*(tlLane+tlLaneGap) + tlGroupGap
	y0 := tlTop
	for gi, node := range nodes {
		gy := y0 + float64(gi)*groupH
		laneY := func(i int) float64 { return gy + float64(i)*(tlLane+tlLaneGap) }
		t.Texts = append(t.Texts, Text{X: 4, Y: gy - 3, Text: node, Size: 11, Fill: "#222"})
		for i, name := range lanesPerNode {
			t.Texts = append(t.Texts, Text{X: tlLeft - 6, Y: laneY(i) + tlLane - 3, Text: name, Anchor: "end", Size: 10, Fill: "#555"})
			t.Rects = append(t.Rects, Rect{X: tlLeft, Y: laneY(i), W: tlPlot, H: tlLane, Fill: "#f4f4f4"})
		}
		var readyT, bootT, truthT []scenarios.TraceEvent
		bootIdx := map[string]int{}
		for _, e := range c.Trace {
			if e.Node != node {
				continue
			}
			switch e.Kind {
			case scenarios.TraceHeartbeat:
				t.Lines = append(t.Lines, Line{X1: x(e.TMS), Y1: laneY(0) + 2, X2: x(e.TMS), Y2: laneY(0) + tlLane - 2, Stroke: "#444", Width: 1, Title: fmt.Sprintf("lease renewed at %.2fs", sec(e.TMS))})
			case scenarios.TraceReady:
				readyT = append(readyT, e)
			case scenarios.TraceBoot:
				if _, ok := bootIdx[e.BootID]; !ok {
					bootIdx[e.BootID] = len(bootIdx)
				}
				bootT = append(bootT, e)
			case scenarios.TraceTruth:
				truthT = append(truthT, e)
			case scenarios.TracePod:
				fill := "#1f77b4"
				if strings.HasPrefix(e.Detail, "Unload") {
					fill = "#7f7f7f"
				}
				switch {
				case strings.HasSuffix(e.Detail, "created"):
					t.Rects = append(t.Rects, Rect{X: x(e.TMS) - 3, Y: laneY(4) + 3, W: 6, H: tlLane - 6, Fill: fill, Title: fmt.Sprintf("%s %s at %.2fs", e.Pod, e.Detail, sec(e.TMS))})
				case strings.HasSuffix(e.Detail, "Failed"):
					t.Circles = append(t.Circles, Circle{X: x(e.TMS), Y: laneY(4) + tlLane/2, R: 4, Fill: "#d62728", Title: fmt.Sprintf("%s %s at %.2fs", e.Pod, e.Detail, sec(e.TMS))})
				}
			case scenarios.TraceLoad:
				t.Circles = append(t.Circles, Circle{X: x(e.TMS), Y: laneY(4) + tlLane/2, R: 4, Fill: "#2ca02c",
					Title: fmt.Sprintf("%s %s of %s succeeded at %.2fs in boot %s", e.Pod, e.Detail, e.Module, sec(e.TMS), short(e.BootID))})
			case scenarios.TraceAction:
				if strings.HasPrefix(e.Detail, "reboot (") || strings.HasPrefix(e.Detail, "restart-kubelet (") || strings.HasPrefix(e.Detail, "network-blip (") {
					t.Rects = append(t.Rects, Rect{X: x(e.TMS), Y: gy, W: x(e.TMS+c.GracePeriodMS) - x(e.TMS), H: groupH - tlGroupGap,
						Fill: "#ffcc00", Opacity: 0.15, Stroke: "#d4a000", Dash: "4 3",
						Title: fmt.Sprintf("%s at %.2fs; grace period window %.1fs", e.Detail, sec(e.TMS), sec(c.GracePeriodMS))})
					t.Texts = append(t.Texts, Text{X: x(e.TMS) + 2, Y: gy + groupH - tlGroupGap - 2, Text: strings.SplitN(e.Detail, " (", 2)[0] + " / grace window", Size: 9, Fill: "#8a6d00"})
				}
			}
		}
		segments := func(evs []scenarios.TraceEvent, lane int, color func(scenarios.TraceEvent) string, label func(scenarios.TraceEvent) string) {
			for i, e := range evs {
				stop := end
				if i+1 < len(evs) {
					stop = evs[i+1].TMS
				}
				col := color(e)
				if col == "" {
					continue
				}
				t.Rects = append(t.Rects, Rect{X: x(e.TMS), Y: laneY(lane), W: max(1, x(stop)-x(e.TMS)), H: tlLane, Fill: col,
					Title: fmt.Sprintf("%s from %.2fs to %.2fs", label(e), sec(e.TMS), sec(stop))})
				if l := label(e); x(stop)-x(e.TMS) > 60 {
					t.Texts = append(t.Texts, Text{X: x(e.TMS) + 3, Y: laneY(lane) + tlLane - 3, Text: l, Size: 9, Fill: "#111"})
				}
			}
		}
		segments(readyT, 1, func(e scenarios.TraceEvent) string {
			switch e.Ready {
			case "True":
				return "#2ca02c"
			case "False":
				return "#ff7f0e"
			}
			return "#d62728"
		}, func(e scenarios.TraceEvent) string { return "Ready=" + e.Ready })
		segments(bootT, 2, func(e scenarios.TraceEvent) string { return bootColors[bootIdx[e.BootID]%len(bootColors)] },
			func(e scenarios.TraceEvent) string { return "boot " + short(e.BootID) })
		segments(truthT, 3, func(e scenarios.TraceEvent) string {
			if e.Detail == "" {
				return ""
			}
			return "#1f77b4"
		}, func(e scenarios.TraceEvent) string { return e.Detail + " in boot " + short(e.BootID) })
		for _, m := range c.Reboots {
			if m.Node == node && !m.Planned {
				x0 := x(m.BootVisibleMS)
				t.Lines = append(t.Lines, Line{X1: x0, Y1: gy, X2: x0, Y2: gy + groupH - tlGroupGap, Stroke: "#d62728", Width: 2, Dash: "3 2",
					Title: fmt.Sprintf("unplanned reboot: boot %s -> %s at %.2fs, which no action requested", short(m.OldBootID), short(m.NewBootID), sec(m.BootVisibleMS))})
				t.Texts = append(t.Texts, Text{X: x0 + 3, Y: gy + 10, Text: "unplanned reboot", Size: 9, Fill: "#d62728"})
			}
			if m.Node != node || m.ReloadLatencyMS < 0 {
				continue
			}
			x1, x2 := x(m.BootVisibleMS), x(m.BootVisibleMS+m.ReloadLatencyMS)
			yy := laneY(3) - 1
			t.Lines = append(t.Lines, Line{X1: x1, Y1: yy, X2: max(x2, x1+2), Y2: yy, Stroke: "#9467bd", Width: 3,
				Title: fmt.Sprintf("reload latency %dms (new boot visible -> module loaded)", m.ReloadLatencyMS)})
			t.Texts = append(t.Texts, Text{X: x2 + 3, Y: yy + 3, Text: fmt.Sprintf("reload %dms", m.ReloadLatencyMS), Size: 9, Fill: "#5b3a8c"})
		}
	}
	axisY := y0 + float64(len(nodes))*groupH
	// Cluster faults and observation gaps cross every lane: the case was
	// not judged through them.
	for _, e := range c.Trace {
		if e.Kind != scenarios.TraceCluster && e.Kind != scenarios.TraceWatch {
			continue
		}
		t.Lines = append(t.Lines, Line{X1: x(e.TMS), Y1: tlTop - 6, X2: x(e.TMS), Y2: axisY, Stroke: "#d62728", Width: 1.5, Dash: "2 2",
			Title: fmt.Sprintf("%s at %.2fs: %s", e.Kind, sec(e.TMS), e.Detail)})
	}
	step := int64(1000)
	for end/step > 12 {
		step *= 2
	}
	for ms := int64(0); ms <= end; ms += step {
		t.Lines = append(t.Lines, Line{X1: x(ms), Y1: tlTop - 6, X2: x(ms), Y2: axisY, Stroke: "#ddd", Width: 0.5})
		t.Texts = append(t.Texts, Text{X: x(ms), Y: axisY + 12, Text: fmt.Sprintf("%.0fs", sec(ms)), Anchor: "middle", Size: 9, Fill: "#555"})
	}
	t.Height = axisY + 20
	return t
}

func sec(ms int64) float64 { return float64(ms) / 1000 }
