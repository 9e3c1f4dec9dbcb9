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
func (c *caseRun) rebootMetrics() []RebootMetric {
	c.obs.mu.Lock()
	defer c.obs.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []RebootMetric
	planned := map[string]bool{}
	for _, d := range c.disrupted {
		if d.kind != "reboot" || !d.completed {
			continue
		}
		planned[d.node+"/"+d.outcome.NewBootID] = true
		m := RebootMetric{Node: d.node, OldBootID: d.outcome.OldBootID, NewBootID: d.outcome.NewBootID, Planned: true,
			DowntimeMS: d.downtime.Milliseconds(), NotReadySeen: c.notReadySeen(d), DetectionLatencyMS: -1, ReloadLatencyMS: -1,
			StartMS: d.start.Sub(c.start).Milliseconds()}
		if visible, ok := c.obs.state[d.node].bootSeen[d.outcome.NewBootID]; ok {
			c.fillLatencies(&m, visible)
		}
		out = append(out, m)
	}
	for _, n := range c.names {
		prev := c.baseBoot[n]
		for _, b := range c.obs.bootsLocked(n) {
			if b.id == c.baseBoot[n] || b.at.Before(c.baseAt) || planned[n+"/"+b.id] {
				prev = b.id
				continue
			}
			m := RebootMetric{Node: n, OldBootID: prev, NewBootID: b.id, Planned: false, DowntimeMS: -1,
				DetectionLatencyMS: -1, ReloadLatencyMS: -1, StartMS: b.at.Sub(c.start).Milliseconds()}
			m.NotReadySeen = slices.ContainsFunc(c.obs.state[n].notReadyAt, func(t time.Time) bool {
				return !t.Before(c.obs.firstSeenLocked(n, prev)) && t.Before(b.at.Add(2*time.Second))
			})
			visible, ok := c.obs.state[n].bootSeen[b.id]
			if !ok {
				visible = b.at // seen in the kernel's truth only
			}
			c.fillLatencies(&m, visible)
			out = append(out, m)
			prev = b.id
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartMS < out[j].StartMS })
	return out
}

// fillLatencies sets m's boot visibility, detection and reload latency
// from when its new boot became visible; call with both locks held.
func (c *caseRun) fillLatencies(m *RebootMetric, visible time.Time) {
	m.BootVisibleMS = visible.Sub(c.start).Milliseconds()
	var first time.Time
	for _, p := range c.obs.pods {
		if p.node == m.Node && p.action == "Load" && !p.created.Before(visible) && (first.IsZero() || p.created.Before(first)) {
			first = p.created
		}
	}
	if !first.IsZero() {
		m.DetectionLatencyMS = first.Sub(visible).Milliseconds()
	}
	st := c.obs.state[m.Node]
	var last time.Time
	for _, mod := range c.spec[m.Node] {
		at, ok := st.lastModule[m.NewBootID+"/"+mod.ModuleName]
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

// checkUnplanned makes a no-reboot control with a reboot nobody asked for
// an invalid run.
func (c *caseRun) checkUnplanned(reboots []RebootMetric) error {
	if !slices.Contains(c.s.Labels, LabelNoReboot) {
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
