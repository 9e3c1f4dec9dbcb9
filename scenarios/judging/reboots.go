package judging

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// LabelNoReboot marks a negative control that must see no reboot at all:
// a reboot nobody asked for makes such a case an invalid run.
const LabelNoReboot = "no-reboot"

// RebootMetrics lists every reboot of the case: those the timeline asked
// for (Planned) and every other boot ID change the observer saw, with the
// same metrics, in the order they happened.
func RebootMetrics(f Facts, r Record) []RebootMetric {
	var out []RebootMetric
	planned := map[string]bool{}
	for _, d := range f.Disrupted {
		if !d.Reboot || !d.Completed {
			continue
		}
		planned[d.Node+"/"+d.Outcome.NewBootID] = true
		m := RebootMetric{Node: d.Node, OldBootID: d.Outcome.OldBootID, NewBootID: d.Outcome.NewBootID, Planned: true,
			DowntimeMS: d.Downtime.Milliseconds(), NotReadySeen: NotReadySeen(d, r.Nodes[d.Node]), DetectionLatencyMS: -1, ReloadLatencyMS: -1,
			StartMS: d.Start.Sub(f.Start).Milliseconds()}
		if visible, ok := r.Nodes[d.Node].BootSeen[d.Outcome.NewBootID]; ok {
			fillLatencies(&m, visible, f, r)
		}
		out = append(out, m)
	}
	for _, n := range f.Names {
		nr := r.Nodes[n]
		prev := f.BaseBoot[n]
		for _, b := range nr.Boots() {
			if b.ID == f.BaseBoot[n] || b.At.Before(f.BaseAt) || planned[n+"/"+b.ID] {
				prev = b.ID
				continue
			}
			m := RebootMetric{Node: n, OldBootID: prev, NewBootID: b.ID, Planned: false, DowntimeMS: -1,
				DetectionLatencyMS: -1, ReloadLatencyMS: -1, StartMS: b.At.Sub(f.Start).Milliseconds()}
			from := nr.FirstSeen(prev)
			m.NotReadySeen = slices.ContainsFunc(nr.NotReadyAt, func(t time.Time) bool {
				return !t.Before(from) && t.Before(b.At.Add(2*time.Second))
			})
			visible, ok := nr.BootSeen[b.ID]
			if !ok {
				visible = b.At // seen in the kernel's truth only
			}
			fillLatencies(&m, visible, f, r)
			out = append(out, m)
			prev = b.ID
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartMS < out[j].StartMS })
	return out
}

// fillLatencies sets m's boot visibility, detection and reload latency
// from when its new boot became visible: detection ends at the node's
// first Load worker pod created after it, reload at the last of the
// spec's modules seen loaded in the new boot.
func fillLatencies(m *RebootMetric, visible time.Time, f Facts, r Record) {
	m.BootVisibleMS = visible.Sub(f.Start).Milliseconds()
	for _, p := range r.Pods { // in creation order
		if p.Node == m.Node && p.Action == "Load" && !p.Created.Before(visible) {
			m.DetectionLatencyMS = p.Created.Sub(visible).Milliseconds()
			break
		}
	}
	var last time.Time
	for _, mod := range f.Spec[m.Node] {
		at, ok := r.Nodes[m.Node].ModuleSeen[m.NewBootID+"/"+mod.ModuleName]
		if !ok {
			return
		}
		if at.After(last) {
			last = at
		}
	}
	if !last.IsZero() {
		m.ReloadLatencyMS = max(0, last.Sub(visible).Milliseconds())
	}
}

// Unplanned says why a no-reboot control (by its labels) with a reboot
// nobody asked for is an invalid run ("": it is not).
func Unplanned(labels []string, reboots []RebootMetric) string {
	if !slices.Contains(labels, LabelNoReboot) {
		return ""
	}
	var seen []Detail
	for _, m := range reboots {
		if !m.Planned {
			seen = append(seen, Detail{Node: m.Node, Evidence: fmt.Sprintf("from boot %s to %s at %.1fs", Short(m.OldBootID), Short(m.NewBootID), float64(m.StartMS)/1000)})
		}
	}
	if len(seen) == 0 {
		return ""
	}
	// Every reboot is in results.json's reboots, planned or not: the
	// message names the first few.
	SortDetails(seen)
	what, nodes := "unplanned reboot", map[string]bool{}
	for _, d := range seen {
		nodes[d.Node] = true
	}
	if len(nodes) > 1 {
		what += fmt.Sprintf(" on %d nodes", len(nodes))
	}
	var shown []string
	for _, d := range seen[:min(len(seen), DetailsShown)] {
		shown = append(shown, fmt.Sprintf("node %s %s", d.Node, d.Evidence))
	}
	if rest := len(seen) - DetailsShown; rest > 0 {
		shown = append(shown, fmt.Sprintf("and %d more, every one in results.json", rest))
	}
	return fmt.Sprintf("%s (%s), which no action requested: the control no longer tests what it claims", what, strings.Join(shown, "; "))
}
