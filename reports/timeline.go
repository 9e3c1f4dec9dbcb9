package reports

import (
	"fmt"
	"sort"
	"strings"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/scenarios"
	"github.com/bootproof/bootproof/scenarios/trace"
)

// Picture is an SVG picture (a case's timeline, the run's latency chart)
// as plain shapes that the HTML template renders (html/template escapes
// every value).
type Picture struct {
	// Label names the picture for assistive technology (aria-label).
	Label         string
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

// Text is an SVG text; Title, when set, is its tooltip.
type Text struct {
	X, Y   float64
	Text   string
	Anchor string
	Size   float64
	Fill   string
	Title  string
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

// The lanes of a node's group, top to bottom; lanesPerNode names them.
const (
	laneHeartbeats = iota
	laneReady
	laneBoot
	laneTruth
	laneWorkers
)

var lanesPerNode = []string{"heartbeats", "Ready", "boot", "module loaded (truth)", "worker pods"}

var bootColors = []string{"#8dd3c7", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5", "#bc80bd", "#ccebc5", "#ffed6f"}

// BuildTimeline lays out the trace of c: a group of lanes per node (at
// most maxNodes), lines across every lane for cluster faults and
// observation gaps, and a time axis.
func BuildTimeline(c scenarios.CaseResult) Picture {
	t := Picture{Label: "timeline of " + CaseName(c), Width: tlLeft + tlPlot + 20}
	nodes := traceNodes(c.Trace)
	if len(nodes) > maxNodes {
		t.Note = fmt.Sprintf("showing %d of %d nodes", maxNodes, len(nodes))
		nodes = nodes[:maxNodes]
	}
	l := &timelineLayout{c: c, t: &t, end: timelineEnd(c), groupH: float64(len(lanesPerNode))*(tlLane+tlLaneGap) + tlGroupGap}
	for gi, node := range nodes {
		l.drawNode(node, tlTop+float64(gi)*l.groupH)
	}
	axisY := tlTop + float64(len(nodes))*l.groupH
	l.drawFaults(axisY)
	l.drawAxis(axisY)
	t.Height = axisY + 20
	return t
}

// timelineEnd is the time at the right edge of c's timeline in ms: the
// end of the case or of its trace, and of the grace-period window of every
// disruption, at least one second.
func timelineEnd(c scenarios.CaseResult) int64 {
	end := c.DurationMS
	for _, e := range c.Trace {
		end = max(end, e.TMS)
	}
	for _, e := range c.Trace {
		if e.Disruption() {
			end = max(end, e.TMS+c.GracePeriodMS+500)
		}
	}
	return max(end, 1000)
}

// traceNodes lists the nodes named in trace, sorted.
func traceNodes(trace []trace.Event) []string {
	var nodes []string
	seen := map[string]bool{}
	for _, e := range trace {
		if e.Node != "" && !seen[e.Node] {
			seen[e.Node] = true
			nodes = append(nodes, e.Node)
		}
	}
	sort.Strings(nodes)
	return nodes
}

// timelineLayout draws one case into t.
type timelineLayout struct {
	c      scenarios.CaseResult
	t      *Picture
	end    int64   // ms at the right edge of the plot
	groupH float64 // height of a node's lanes and the gap below them
}

// x is the horizontal position of ms.
func (l *timelineLayout) x(ms int64) float64 { return tlLeft + tlPlot*float64(ms)/float64(l.end) }

// nodeGroup is the group of lanes of one node, its top at y.
type nodeGroup struct {
	*timelineLayout
	node string
	y    float64
}

// laneY is the top of lane i.
func (g nodeGroup) laneY(i int) float64 { return g.y + float64(i)*(tlLane+tlLaneGap) }

// laneEvents are the events of one node that are drawn as segments, each
// lasting until the next one of its kind.
type laneEvents struct {
	ready, boot, truth []trace.Event
	bootIdx            map[string]int // boot ID -> index of its colour
}

// drawNode draws the lanes of node with their events, segments and reboot
// metrics.
func (l *timelineLayout) drawNode(node string, y float64) {
	g := nodeGroup{timelineLayout: l, node: node, y: y}
	g.drawLanes()
	ev := g.drawEvents()
	g.segments(ev.ready, laneReady, readyColor, func(e trace.Event) string { return "Ready=" + e.Ready })
	g.segments(ev.boot, laneBoot, func(e trace.Event) string { return bootColors[ev.bootIdx[e.BootID]%len(bootColors)] },
		func(e trace.Event) string { return "boot " + short(e.BootID) })
	g.segments(ev.truth, laneTruth, truthColor, func(e trace.Event) string {
		return strings.Join(e.Modules, ",") + " in boot " + short(e.BootID)
	})
	for _, m := range l.c.Reboots {
		if m.Node == node && !m.Planned {
			g.drawUnplanned(m)
		}
		if m.Node != node || m.ReloadLatencyMS < 0 {
			continue
		}
		g.drawReload(m)
	}
}

// drawLanes draws the node's name and its empty, labelled lanes.
func (g nodeGroup) drawLanes() {
	t := g.t
	t.Texts = append(t.Texts, Text{X: 4, Y: g.y - 3, Text: g.node, Size: 11, Fill: "#222"})
	for i, name := range lanesPerNode {
		t.Texts = append(t.Texts, Text{X: tlLeft - 6, Y: g.laneY(i) + tlLane - 3, Text: name, Anchor: "end", Size: 10, Fill: "#555"})
		t.Rects = append(t.Rects, Rect{X: tlLeft, Y: g.laneY(i), W: tlPlot, H: tlLane, Fill: "#f4f4f4"})
	}
}

// drawEvents draws the node's instantaneous events (heartbeats, worker
// pods, disruptions) and returns those drawn as segments.
func (g nodeGroup) drawEvents() laneEvents {
	ev := laneEvents{bootIdx: map[string]int{}}
	for _, e := range g.c.Trace {
		if e.Node != g.node {
			continue
		}
		switch e.Kind {
		case trace.KindHeartbeat:
			g.t.Lines = append(g.t.Lines, Line{X1: g.x(e.TMS), Y1: g.laneY(laneHeartbeats) + 2, X2: g.x(e.TMS), Y2: g.laneY(laneHeartbeats) + tlLane - 2,
				Stroke: "#444", Width: 1, Title: fmt.Sprintf("lease renewed at %.2fs", sec(e.TMS))})
		case trace.KindReady:
			ev.ready = append(ev.ready, e)
		case trace.KindBoot:
			if _, ok := ev.bootIdx[e.BootID]; !ok {
				ev.bootIdx[e.BootID] = len(ev.bootIdx)
			}
			ev.boot = append(ev.boot, e)
		case trace.KindTruth:
			ev.truth = append(ev.truth, e)
		case trace.KindPod:
			g.drawPod(e)
		case trace.KindLoad:
			g.t.Circles = append(g.t.Circles, Circle{X: g.x(e.TMS), Y: g.laneY(laneWorkers) + tlLane/2, R: 4, Fill: "#2ca02c",
				Title: fmt.Sprintf("%s %s of %s succeeded at %.2fs in boot %s", e.Pod, e.WorkerAction, e.Module, sec(e.TMS), short(e.BootID))})
		case trace.KindAction:
			g.drawDisruption(e)
		}
	}
	return ev
}

// drawPod marks a worker pod's creation (a bar) or failure (a red dot).
func (g nodeGroup) drawPod(e trace.Event) {
	fill := "#1f77b4"
	if e.WorkerAction == contract.ActionUnload {
		fill = "#7f7f7f"
	}
	switch e.Phase {
	case trace.PhaseCreated:
		g.t.Rects = append(g.t.Rects, Rect{X: g.x(e.TMS) - 3, Y: g.laneY(laneWorkers) + 3, W: 6, H: tlLane - 6, Fill: fill,
			Title: fmt.Sprintf("%s %s at %.2fs", e.Pod, e.Detail, sec(e.TMS))})
	case trace.PhaseFailed:
		g.t.Circles = append(g.t.Circles, Circle{X: g.x(e.TMS), Y: g.laneY(laneWorkers) + tlLane/2, R: 4, Fill: "#d62728",
			Title: fmt.Sprintf("%s %s at %.2fs", e.Pod, e.Detail, sec(e.TMS))})
	}
}

// drawDisruption shades the grace-period window after the start of a
// node disruption (reboot, kubelet restart, network blip, node pause)
// across the node's lanes.
func (g nodeGroup) drawDisruption(e trace.Event) {
	if !e.Disruption() {
		return
	}
	grace := g.c.GracePeriodMS
	g.t.Rects = append(g.t.Rects, Rect{X: g.x(e.TMS), Y: g.y, W: g.x(e.TMS+grace) - g.x(e.TMS), H: g.groupH - tlGroupGap,
		Fill: "#ffcc00", Opacity: 0.15, Stroke: "#d4a000", Dash: "4 3",
		Title: fmt.Sprintf("%s at %.2fs; grace period window %s", e.Detail, sec(e.TMS), FormatMS(grace))})
	g.t.Texts = append(g.t.Texts, Text{X: g.x(e.TMS) + 2, Y: g.y + g.groupH - tlGroupGap - 2, Text: string(e.Action) + " / grace window",
		Size: 9, Fill: "#8a6d00"})
}

// segments draws evs in lane, each from its time to the next event's (the
// last to the end), coloured by color (no segment when it is empty) and
// labelled by label where there is room.
func (g nodeGroup) segments(evs []trace.Event, lane int, color, label func(trace.Event) string) {
	for i, e := range evs {
		stop := g.end
		if i+1 < len(evs) {
			stop = evs[i+1].TMS
		}
		col := color(e)
		if col == "" {
			continue
		}
		g.t.Rects = append(g.t.Rects, Rect{X: g.x(e.TMS), Y: g.laneY(lane), W: max(1, g.x(stop)-g.x(e.TMS)), H: tlLane, Fill: col,
			Title: fmt.Sprintf("%s from %.2fs to %.2fs", label(e), sec(e.TMS), sec(stop))})
		if l := label(e); g.x(stop)-g.x(e.TMS) > 60 {
			g.t.Texts = append(g.t.Texts, Text{X: g.x(e.TMS) + 3, Y: g.laneY(lane) + tlLane - 3, Text: l, Size: 9, Fill: "#111"})
		}
	}
}

// readyColor is the colour of a Ready condition status.
func readyColor(e trace.Event) string {
	switch e.Ready {
	case "True":
		return "#2ca02c"
	case "False":
		return "#ff7f0e"
	}
	return "#d62728"
}

// truthColor colours the time a module is loaded; none when it is not.
func truthColor(e trace.Event) string {
	if len(e.Modules) == 0 {
		return ""
	}
	return "#1f77b4"
}

// drawUnplanned marks a boot ID change that no action asked for across the
// node's lanes.
func (g nodeGroup) drawUnplanned(m scenarios.RebootMetric) {
	x0 := g.x(m.BootVisibleMS)
	g.t.Lines = append(g.t.Lines, Line{X1: x0, Y1: g.y, X2: x0, Y2: g.y + g.groupH - tlGroupGap, Stroke: "#d62728", Width: 2, Dash: "3 2",
		Title: fmt.Sprintf("unplanned reboot: boot %s -> %s at %.2fs, which no action requested", short(m.OldBootID), short(m.NewBootID), sec(m.BootVisibleMS))})
	g.t.Texts = append(g.t.Texts, Text{X: x0 + 3, Y: g.y + 10, Text: "unplanned reboot", Size: 9, Fill: "#d62728"})
}

// drawReload draws a reboot's reload latency above the truth lane.
func (g nodeGroup) drawReload(m scenarios.RebootMetric) {
	x1, x2 := g.x(m.BootVisibleMS), g.x(m.BootVisibleMS+m.ReloadLatencyMS)
	yy := g.laneY(laneTruth) - 1
	g.t.Lines = append(g.t.Lines, Line{X1: x1, Y1: yy, X2: max(x2, x1+2), Y2: yy, Stroke: "#9467bd", Width: 3,
		Title: fmt.Sprintf("reload latency %s (new boot visible -> module loaded)", FormatMS(m.ReloadLatencyMS))})
	g.t.Texts = append(g.t.Texts, Text{X: x2 + 3, Y: yy + 3, Text: "reload " + FormatMS(m.ReloadLatencyMS), Size: 9, Fill: "#5b3a8c"})
}

// drawFaults draws cluster faults and observation gaps across every lane
// (the case was not judged through them), and the subject's leader
// Lease's holder changes.
func (l *timelineLayout) drawFaults(axisY float64) {
	for _, e := range l.c.Trace {
		stroke := "#d62728"
		switch e.Kind {
		case trace.KindCluster, trace.KindWatch:
		case trace.KindLeader:
			// The subject's leader Lease changed holder: a restarted
			// operator may act from its taking.
			stroke = "#2ca02c"
		default:
			continue
		}
		l.t.Lines = append(l.t.Lines, Line{X1: l.x(e.TMS), Y1: tlTop - 6, X2: l.x(e.TMS), Y2: axisY, Stroke: stroke, Width: 1.5, Dash: "2 2",
			Title: fmt.Sprintf("%s at %.2fs: %s", e.Kind, sec(e.TMS), e.Detail)})
	}
}

// drawAxis draws the time axis at axisY, with at most about a dozen ticks
// and grid lines.
func (l *timelineLayout) drawAxis(axisY float64) {
	step := int64(1000)
	for l.end/step > 12 {
		step *= 2
	}
	for ms := int64(0); ms <= l.end; ms += step {
		l.t.Lines = append(l.t.Lines, Line{X1: l.x(ms), Y1: tlTop - 6, X2: l.x(ms), Y2: axisY, Stroke: "#ddd", Width: 0.5})
		l.t.Texts = append(l.t.Texts, Text{X: l.x(ms), Y: axisY + 12, Text: fmt.Sprintf("%d s", ms/1000), Anchor: "middle", Size: 9, Fill: "#555"})
	}
}

func sec(ms int64) float64 { return float64(ms) / 1000 }
