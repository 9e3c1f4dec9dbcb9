package judging

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// The assertions over a case's waits (initial-load, worker, reload),
// each a pure function of the case's Facts and the Record; JudgeWait
// judges one wait.

// JudgeWait judges one wait on the case's facts and the Record: a
// reload wait held when, for each of its nodes, at some moment of its
// window (from its start until it stopped, at most its timeout) the Node
// showed the boot the node had to be in (WantBoot at the window's end)
// and the kernel showed every module of the node's spec loaded in that
// boot; a worker wait held when a matching worker pod reached the state
// by the window's end.
func JudgeWait(f Facts, r Record, w Wait) WaitResult {
	end := w.Until()
	if w.Kind == WaitWorker {
		out := WaitResult{Held: true}
		for _, n := range w.Nodes {
			if !workerSeen(r.Pods, n, w.Worker, end) {
				out.Held = false
				out.NoWorker = append(out.NoWorker, n)
			}
		}
		if !out.Held {
			out.Why = fmt.Sprintf("no %s worker pod %s within %s", w.Worker.Action, w.Worker.State, w.Timeout)
		}
		return out
	}
	out := WaitResult{Held: true}
	for _, n := range w.Nodes {
		nr := r.Nodes[n]
		boot := WantBoot(f, nr, n, end)
		var mods []string
		for _, m := range w.Spec[n] {
			mods = append(mods, m.ModuleName)
		}
		nl := NodeLoad{Node: n, Boot: boot}
		if at, ok := LoadedIn(nr, boot, mods, w.Start, end); ok {
			nl.Loaded = at
		} else {
			out.Held = false
			for _, m := range mods {
				if _, ok := LoadedIn(nr, boot, []string{m}, w.Start, end); !ok {
					nl.Missing = append(nl.Missing, m)
				}
			}
			if len(nl.Missing) == 0 { // each alone, never all at once
				nl.Missing = mods
			}
		}
		out.Nodes = append(out.Nodes, nl)
	}
	return out
}

// BootsNotVisible lists the nodes of nodes whose Node status has not
// shown the new boot of their last completed reboot yet.
func BootsNotVisible(f Facts, r Record, nodes []string) []string {
	var out []string
	for _, n := range nodes {
		want := rebootedInto(f, n, f.Now)
		if _, ok := r.Nodes[n].BootSeen[want]; want != "" && !ok {
			out = append(out, n)
		}
	}
	return out
}

// WantBoot is the boot node n had to be in at t: the new boot of its
// last reboot completed by then, else the boot its Node showed at t; but
// a boot its kernel showed at t that was first seen after that one (a
// reboot nobody asked for) is the current one.
func WantBoot(f Facts, nr NodeRecord, n string, t time.Time) string {
	return currentBoot(rebootedInto(f, n, t), nr.BootAt(t), nr.TruthAt(t).BootID, nr)
}

// rebootedInto is the new boot of node n's last reboot completed by t
// ("": none).
func rebootedInto(f Facts, n string, t time.Time) string {
	boot := ""
	for _, d := range f.Disrupted {
		if d.Node == n && d.Reboot && d.Completed && !d.End.After(t) {
			boot = d.Outcome.NewBootID
		}
	}
	return boot
}

// currentBoot is the boot a node is known to be in: rebooted, the new
// boot of its last completed reboot ("" if none), else apiBoot, what its
// Node shows; but truthBoot, what its kernel shows, when it was first
// seen after that one (in nr: a reboot nobody asked for).
func currentBoot(rebooted, apiBoot, truthBoot string, nr NodeRecord) string {
	want := cmp.Or(rebooted, apiBoot)
	if truthBoot == "" || truthBoot == want {
		return want
	}
	if seen := nr.FirstSeen(want); !seen.IsZero() && nr.FirstSeen(truthBoot).After(seen) {
		return truthBoot
	}
	return want
}

// LoadedIn finds a moment in [from, to] at which the Node showed boot
// and the kernel showed boot with every module of mods loaded, and
// returns when that state began (it may be before from).
func LoadedIn(nr NodeRecord, boot string, mods []string, from, to time.Time) (time.Time, bool) {
	visible, ok := nr.BootSeen[boot]
	if !ok || boot == "" {
		return time.Time{}, false
	}
	bootEnd := nr.bootUntil(boot)
	for i, s := range nr.Truths {
		if s.BootID != boot || !containsAll(s.Modules, mods) {
			continue
		}
		lo := Later(s.At, visible)
		hi := bootEnd
		if i+1 < len(nr.Truths) && (hi.IsZero() || nr.Truths[i+1].At.Before(hi)) {
			hi = nr.Truths[i+1].At
		}
		if !hi.IsZero() && !hi.After(lo) {
			continue // the Node left the boot before the kernel showed it loaded
		}
		if lo.After(to) {
			return time.Time{}, false
		}
		if hi.IsZero() || hi.After(from) {
			return lo, true
		}
	}
	return time.Time{}, false
}

func containsAll(have, want []string) bool {
	for _, m := range want {
		if !slices.Contains(have, m) {
			return false
		}
	}
	return true
}

// Later is the later of a and b.
func Later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// workerSeen: a worker pod of node matching m reached m.State (created,
// running or succeeded) by until.
func workerSeen(pods []Pod, node string, m WorkerMatch, until time.Time) bool {
	for _, p := range pods {
		if p.Node != node || (m.Action != "" && p.Action != m.Action) || (m.Module != "" && p.ModuleName != m.Module) {
			continue
		}
		var at time.Time
		switch m.State {
		case "created":
			at = p.Created
		case "running":
			at = p.RunningAt
			if at.IsZero() || (!p.SucceededAt.IsZero() && p.SucceededAt.Before(at)) {
				at = p.SucceededAt
			}
		case "succeeded":
			at = p.SucceededAt
		}
		if !at.IsZero() && !at.After(until) {
			return true
		}
	}
	return false
}

// judgeWaitsOf judges the waits of f that pick selects: the first that
// did not hold fails the assertion name; held counts those that held.
func judgeWaitsOf(name string, f Facts, r Record, pick func(Wait) bool) (res AssertionResult, held int) {
	for _, w := range f.Waits {
		if !pick(w) {
			continue
		}
		if jr := JudgeWait(f, r, w); !jr.Held {
			msg, details := waitFailure(w, jr)
			return AssertionResult{Name: name, Message: msg, Details: details}, held
		}
		held++
	}
	return AssertionResult{Name: name, OK: true}, held
}

// JudgeInitialLoad is the initial-load assertion: every reload wait
// before the case's first node disruption held.
func JudgeInitialLoad(f Facts, r Record) AssertionResult {
	res, waits := judgeWaitsOf(AssertInitialLoad, f, r, f.InitialWait)
	switch {
	case !res.OK:
	case waits == 0:
		res.Message = "no reload wait before the first disruption"
	default:
		res.Message = fmt.Sprintf("every module loaded in the boot each node started in, in %d wait(s) before the first disruption", waits)
		if f.FirstLoad > 0 {
			res.Message += "; first load " + HumanDuration(f.FirstLoad)
		}
	}
	return res
}

// JudgeWorkerWaits is the worker assertion: every worker-pod wait held.
func JudgeWorkerWaits(f Facts, r Record) AssertionResult {
	res, waits := judgeWaitsOf(AssertWorker, f, r, func(w Wait) bool { return w.Kind == WaitWorker })
	switch {
	case !res.OK:
	case waits == 0:
		res.Message = "no worker wait in the timeline"
	default:
		res.Message = fmt.Sprintf("%d worker wait(s) held", waits)
	}
	return res
}

// JudgeReload is the reload assertion: every reload wait after the
// case's first node disruption held, so no reload was missed. Its message
// names, when it holds, the first load and each node's reload latency;
// when it fails, the first wait that did not hold and what was missing.
func JudgeReload(f Facts, r Record) AssertionResult {
	res := AssertionResult{Name: AssertReload, OK: true}
	reloads, waits, missed, jr := judgeReloadWaits(f, r)
	if missed != nil {
		res.OK = false
		res.Message, res.Details = waitFailure(*missed, jr)
		return res
	}
	res.Reloads = reloads
	res.Message = reloadSummary(waits, f.FirstLoad, reloads)
	return res
}

// JudgeReloadSLO is the reload-slo assertion: every reload that came (a
// node's modules loaded in a new boot, in a reload wait that held) came
// within its wait's service level after its window opened (Wait.SLO).
// A reload that never came is reload's to judge: a case that missed one
// is judged here on the reloads before it, and says so.
func JudgeReloadSLO(f Facts, r Record) AssertionResult {
	res := AssertionResult{Name: AssertReloadSLO, OK: true}
	reloads, _, missed, _ := judgeReloadWaits(f, r)
	if missed != nil {
		res.NotJudged = "the reload missed in " + missed.What + " (see reload)"
	}
	var late []Detail
	var worst *ReloadLatency
	for i, rl := range reloads {
		if rl.Late {
			late = append(late, Detail{Node: rl.Node, Evidence: fmt.Sprintf("boot %s: loaded %s after its window opened, over the service level %s (%s after the new boot showed)",
				Short(rl.BootID), HumanMS(rl.WindowMS), HumanMS(rl.SLOMS), HumanMS(rl.LatencyMS))})
		}
		if worst == nil || float64(rl.WindowMS)/float64(max(rl.SLOMS, 1)) > float64(worst.WindowMS)/float64(max(worst.SLOMS, 1)) {
			worst = &reloads[i]
		}
	}
	res.Reloads = reloads
	if len(late) > 0 {
		res.OK = false
		res.Details = late
		res.Message = Summarize(fmt.Sprintf("%d of %d reload(s) late", len(late), len(reloads)), late)
		return res
	}
	if worst == nil {
		res.Message = "no reload to judge"
		return res
	}
	res.Message = fmt.Sprintf("%d reload(s) within the service level; closest: node %s boot %s, %s of %s", len(reloads), worst.Node, Short(worst.BootID),
		HumanMS(worst.WindowMS), HumanMS(worst.SLOMS))
	return res
}

// judgeReloadWaits judges the reload waits after the case's first node
// disruption in order, up to the first that did not hold (missed, with
// its result jr): the reloads they saw (each node's first in each new
// boot) and how many held.
func judgeReloadWaits(f Facts, r Record) (reloads []ReloadLatency, waits int, missed *Wait, jr WaitResult) {
	seen := map[string]bool{}
	for i, w := range f.Waits {
		if w.Kind != WaitReload || f.InitialWait(w) {
			continue
		}
		jr = JudgeWait(f, r, w)
		if !jr.Held {
			return reloads, waits, &f.Waits[i], jr
		}
		waits++
		for _, nl := range jr.Nodes {
			key := nl.Node + "/" + nl.Boot
			if seen[key] || nl.Boot == f.BaseBoot[nl.Node] {
				continue
			}
			seen[key] = true
			visible := r.Visible(nl.Node, nl.Boot)
			window := r.ReloadWindow(nl, w.Start)
			reloads = append(reloads, ReloadLatency{Node: nl.Node, BootID: nl.Boot, LatencyMS: max(0, nl.Loaded.Sub(visible).Milliseconds()),
				WindowMS: window.Milliseconds(), SLOMS: w.SLO.Milliseconds(), Late: w.SLO > 0 && window > w.SLO, WaitMS: w.Timeout.Milliseconds()})
		}
	}
	return reloads, waits, nil, jr
}

// ReloadWindow is how long node load nl of a reload wait that started
// at start took from its window's opening (the new boot visible, or the
// wait's start when later) to its modules loaded: what reload-slo judges
// and what widens the next reload's service level.
func (r Record) ReloadWindow(nl NodeLoad, start time.Time) time.Duration {
	return max(0, nl.Loaded.Sub(Later(r.Visible(nl.Node, nl.Boot), start)))
}

// Visible is when node's boot became visible: in its Node status, else
// (seen only in the kernel's ground truth) when first seen at all.
func (r Record) Visible(node, boot string) time.Time {
	return cmp.Or(r.Nodes[node].BootSeen[boot], r.Nodes[node].FirstSeen(boot))
}

// waitFailure says why wait w did not hold: a message that names how
// many nodes and the first few, and every node's evidence.
func waitFailure(w Wait, jr WaitResult) (string, []Detail) {
	var details []Detail
	if w.Kind == WaitWorker {
		for _, n := range jr.NoWorker {
			details = append(details, Detail{Node: n, Evidence: "last state: " + w.lastOf([]string{n})})
		}
		return Summarize(fmt.Sprintf("waiting for a worker pod (%s): %s", w.What, jr.Why), details), details
	}
	missing := 0
	for _, nl := range jr.Nodes {
		if len(nl.Missing) == 0 {
			continue
		}
		missing += len(nl.Missing)
		what := "module " + nl.Missing[0]
		if len(nl.Missing) > 1 {
			what = "modules " + strings.Join(nl.Missing, ", ")
		}
		details = append(details, Detail{Node: nl.Node, Evidence: fmt.Sprintf("%s not loaded in boot %s (last state: %s)", what, Short(nl.Boot), w.lastOf([]string{nl.Node}))})
	}
	what := fmt.Sprintf("%d module(s) not reloaded within %s (%s) in %s", missing, w.Timeout.Round(time.Millisecond), w.Why, w.What)
	return Summarize(what, details), details
}

// reloadSummary is the message of a reload assertion that holds.
func reloadSummary(waits int, firstLoad time.Duration, reloads []ReloadLatency) string {
	var b strings.Builder
	if waits == 0 {
		b.WriteString("no reload wait after a disruption")
	} else {
		fmt.Fprintf(&b, "every module loaded in each node's current boot in %d wait(s) after a disruption", waits)
	}
	if firstLoad > 0 {
		fmt.Fprintf(&b, "; first load %s", HumanDuration(firstLoad))
	}
	if len(reloads) == 0 {
		b.WriteString("; no reboot to reload after")
		return b.String()
	}
	worst := map[string]int64{}
	var nodes []string
	for _, r := range reloads {
		if _, ok := worst[r.Node]; !ok {
			nodes = append(nodes, r.Node)
		}
		worst[r.Node] = max(worst[r.Node], r.LatencyMS)
	}
	sort.SliceStable(nodes, func(i, j int) bool { return worst[nodes[i]] > worst[nodes[j]] })
	fmt.Fprintf(&b, "; reload latency (new boot visible -> loaded), %d reload(s), worst per node:", len(reloads))
	const shown = 5
	for i, n := range nodes {
		if i == shown {
			fmt.Fprintf(&b, " and %d more node(s)", len(nodes)-shown)
			break
		}
		fmt.Fprintf(&b, " %s %s", n, HumanDuration(time.Duration(worst[n])*time.Millisecond))
		if i < len(nodes)-1 && i < shown-1 {
			b.WriteString(",")
		}
	}
	return b.String()
}
