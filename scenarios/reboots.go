package scenarios

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

// invalidRunError marks a run that did not test what the scenario claims
// for a reason the assertions do not cover (a reboot nobody asked for in
// a no-reboot control).
type invalidRunError struct{ msg string }

func (e *invalidRunError) Error() string { return e.msg }

// rebootMetrics lists every reboot of the case: those the timeline asked
// for (Planned) and every other boot ID change the observer saw, with the
// same metrics, in the order they happened.
func rebootMetrics(f caseFacts, r Record) []RebootMetric {
	var out []RebootMetric
	planned := map[string]bool{}
	for _, d := range f.disrupted {
		if d.kind != ActReboot || !d.completed {
			continue
		}
		planned[d.node+"/"+d.outcome.NewBootID] = true
		m := RebootMetric{Node: d.node, OldBootID: d.outcome.OldBootID, NewBootID: d.outcome.NewBootID, Planned: true,
			DowntimeMS: d.downtime.Milliseconds(), NotReadySeen: notReadySeen(d, r.Nodes[d.node]), DetectionLatencyMS: -1, ReloadLatencyMS: -1,
			StartMS: d.start.Sub(f.start).Milliseconds()}
		if visible, ok := r.Nodes[d.node].BootSeen[d.outcome.NewBootID]; ok {
			fillLatencies(&m, visible, f, r)
		}
		out = append(out, m)
	}
	for _, n := range f.names {
		nr := r.Nodes[n]
		prev := f.baseBoot[n]
		for _, b := range nr.Boots() {
			if b.id == f.baseBoot[n] || b.at.Before(f.baseAt) || planned[n+"/"+b.id] {
				prev = b.id
				continue
			}
			m := RebootMetric{Node: n, OldBootID: prev, NewBootID: b.id, Planned: false, DowntimeMS: -1,
				DetectionLatencyMS: -1, ReloadLatencyMS: -1, StartMS: b.at.Sub(f.start).Milliseconds()}
			from := nr.FirstSeen(prev)
			m.NotReadySeen = slices.ContainsFunc(nr.NotReadyAt, func(t time.Time) bool {
				return !t.Before(from) && t.Before(b.at.Add(2*time.Second))
			})
			visible, ok := nr.BootSeen[b.id]
			if !ok {
				visible = b.at // seen in the kernel's truth only
			}
			fillLatencies(&m, visible, f, r)
			out = append(out, m)
			prev = b.id
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartMS < out[j].StartMS })
	return out
}

// fillLatencies sets m's boot visibility, detection and reload latency
// from when its new boot became visible: detection ends at the node's
// first Load worker pod created after it, reload at the last of the
// spec's modules seen loaded in the new boot.
func fillLatencies(m *RebootMetric, visible time.Time, f caseFacts, r Record) {
	m.BootVisibleMS = visible.Sub(f.start).Milliseconds()
	for _, p := range r.Pods { // in creation order
		if p.node == m.Node && p.action == "Load" && !p.created.Before(visible) {
			m.DetectionLatencyMS = p.created.Sub(visible).Milliseconds()
			break
		}
	}
	var last time.Time
	for _, mod := range f.spec[m.Node] {
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

// unplannedError makes a no-reboot control (by its labels) with a reboot
// nobody asked for an invalid run.
func unplannedError(labels []string, reboots []RebootMetric) error {
	if !slices.Contains(labels, LabelNoReboot) {
		return nil
	}
	var seen []string
	for _, m := range reboots {
		if !m.Planned {
			seen = append(seen, fmt.Sprintf("node %s from boot %s to %s at %.1fs", m.Node, short(m.OldBootID), short(m.NewBootID), float64(m.StartMS)/1000))
		}
	}
	if len(seen) == 0 {
		return nil
	}
	return &invalidRunError{fmt.Sprintf("unplanned reboot (%s), which no action requested: the control no longer tests what it claims", strings.Join(seen, "; "))}
}

// rebootMetrics lists the case's reboots as seen so far.
func (c *caseRun) rebootMetrics() []RebootMetric {
	return rebootMetrics(c.facts(time.Now()), c.obs.Record())
}

// checkUnplanned: see unplannedError.
func (c *caseRun) checkUnplanned(reboots []RebootMetric) error {
	return unplannedError(c.s.Labels, reboots)
}
