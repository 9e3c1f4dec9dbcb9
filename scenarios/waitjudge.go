package scenarios

import (
	"cmp"
	"fmt"
	"sort"
	"strings"
	"time"
)

// The assertions over a case's waits (initial-load, worker, reload), each
// a pure function of the case's facts and the Record; judgeWait, in
// reload.go, judges one wait.

// ReloadLatency is one reload a case saw: a node loading its modules in
// a new boot.
type ReloadLatency struct {
	Node   string `json:"node"`
	BootID string `json:"boot_id"`
	// LatencyMS is from the new boot being visible in the API to every
	// module of the node's spec loaded in it (the kernel's ground truth).
	LatencyMS int64 `json:"latency_ms"`
	// WaitMS is the timeout of the wait that saw the reload (the reload
	// bound, or the wait's own timeout when shorter); LatencyMS over it
	// is how close the reload came to failing.
	WaitMS int64 `json:"wait_ms,omitempty"`
}

// initialWait: w is a reload wait that started before the case's first
// node disruption was launched (the case may have none): it waits for
// the subject's first load.
func (f caseFacts) initialWait(w caseWait) bool {
	if w.kind != waitReload {
		return false
	}
	for _, d := range f.disrupted {
		if d.start.IsZero() || d.start.Before(w.start) {
			return false
		}
	}
	return true
}

// judgeWaitsOf judges the waits of f that pick selects: the first that
// did not hold fails the assertion name; held counts those that held.
func judgeWaitsOf(name string, f caseFacts, r Record, pick func(caseWait) bool) (res AssertionResult, held int) {
	for _, w := range f.waits {
		if !pick(w) {
			continue
		}
		if jr := judgeWait(f, r, w); !jr.held {
			return AssertionResult{Name: name, Message: waitFailure(w, jr)}, held
		}
		held++
	}
	return AssertionResult{Name: name, OK: true}, held
}

// judgeInitialLoad is the initial-load assertion: every reload wait
// before the case's first node disruption held.
func judgeInitialLoad(f caseFacts, r Record) AssertionResult {
	res, waits := judgeWaitsOf(AssertInitialLoad, f, r, f.initialWait)
	switch {
	case !res.OK:
	case waits == 0:
		res.Message = "no reload wait before the first disruption"
	default:
		res.Message = fmt.Sprintf("every module loaded in the boot each node started in, in %d wait(s) before the first disruption", waits)
		if f.firstLoad > 0 {
			res.Message += "; first load " + seconds(f.firstLoad)
		}
	}
	return res
}

// judgeWorkerWaits is the worker assertion: every worker-pod wait held.
func judgeWorkerWaits(f caseFacts, r Record) AssertionResult {
	res, waits := judgeWaitsOf(AssertWorker, f, r, func(w caseWait) bool { return w.kind == waitWorker })
	switch {
	case !res.OK:
	case waits == 0:
		res.Message = "no worker wait in the timeline"
	default:
		res.Message = fmt.Sprintf("%d worker wait(s) held", waits)
	}
	return res
}

// judgeReload is the reload assertion: every reload wait after the
// case's first node disruption held. Its message names the bound and,
// when it holds, the first load and each node's reload latency; when it
// fails, the first wait that did not hold and what was missing.
func judgeReload(f caseFacts, r Record) AssertionResult {
	res := AssertionResult{Name: AssertReload, OK: true}
	var reloads []ReloadLatency
	seen := map[string]bool{}
	waits := 0
	for _, w := range f.waits {
		if w.kind != waitReload || f.initialWait(w) {
			continue
		}
		jr := judgeWait(f, r, w)
		if !jr.held {
			res.OK, res.Message = false, waitFailure(w, jr)
			return res
		}
		waits++
		for _, nl := range jr.nodes {
			key := nl.node + "/" + nl.boot
			if seen[key] || nl.boot == f.baseBoot[nl.node] {
				continue
			}
			seen[key] = true
			from := cmp.Or(r.Nodes[nl.node].BootSeen[nl.boot], r.Nodes[nl.node].FirstSeen(nl.boot))
			reloads = append(reloads, ReloadLatency{Node: nl.node, BootID: nl.boot, LatencyMS: max(0, nl.loaded.Sub(from).Milliseconds()),
				WaitMS: w.timeout.Milliseconds()})
		}
	}
	res.Reloads = reloads
	res.Message = reloadSummary(waits, f.firstLoad, reloads)
	return res
}

// waitFailure says why wait w did not hold.
func waitFailure(w caseWait, jr waitResult) string {
	if w.kind == waitWorker {
		return fmt.Sprintf("waiting for a worker pod (%s): %s (last state: %s)", w.what, jr.why, w.lastOf(w.nodes))
	}
	var missing []string
	for _, nl := range jr.nodes {
		for _, m := range nl.missing {
			missing = append(missing, fmt.Sprintf("module %s not loaded in boot %s of node %s (last state: %s)", m, short(nl.boot), nl.node, w.lastOf([]string{nl.node})))
		}
	}
	return fmt.Sprintf("%d module(s) not reloaded within %s (%s) in %s: %s", len(missing), w.timeout.Round(time.Millisecond), w.why, w.what, strings.Join(missing, "; "))
}

// lastOf is the last observed state of nodes, for messages.
func (w caseWait) lastOf(nodes []string) string {
	var out []string
	for _, n := range nodes {
		if s, ok := w.last[n]; ok {
			out = append(out, s)
		}
	}
	return strings.Join(out, "; ")
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
		fmt.Fprintf(&b, "; first load %s", seconds(firstLoad))
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
		fmt.Fprintf(&b, " %s %s", n, seconds(time.Duration(worst[n])*time.Millisecond))
		if i < len(nodes)-1 && i < shown-1 {
			b.WriteString(",")
		}
	}
	return b.String()
}

func seconds(d time.Duration) string { return HumanDuration(d) }
