package scenarios

import (
	"maps"
	"slices"
	"sort"
	"time"
)

// Record is an immutable copy of what the observer saw, taken once for a
// judgement. The assertions and the reboot metrics are pure functions of
// a Record and the case's facts (assertions.go, waitjudge.go, reboots.go):
// they take no lock, read no informer, and are tested on records built by
// hand.
type Record struct {
	// Nodes is each case node's history.
	Nodes map[string]NodeRecord
	// Loads is every successful worker action, in the order seen.
	Loads []load
	// Pods is every worker pod seen, in creation order.
	Pods []podObs
	// StatusBoot: some NodeModulesConfig status entry carried a bootId.
	StatusBoot bool
}

// NodeRecord is the history of one node.
type NodeRecord struct {
	// NotReadyAt is every observation of Ready != True.
	NotReadyAt []time.Time
	// RenewSeen is when each Lease renewal was observed.
	RenewSeen []time.Time
	// BootSeen is when each boot ID was first visible in the Node's
	// status; TruthBootSeen, in the kernel's ground truth.
	BootSeen, TruthBootSeen map[string]time.Time
	// ModuleSeen is the first observation of each module loaded, keyed
	// "boot/module".
	ModuleSeen map[string]time.Time
	// Truths is every ground truth the node's kernel published, in the
	// order seen: each holds from its At until the next one's.
	Truths []TruthSeen
	// TruthActions is, per boot and module, the most loads and unloads
	// the kernel's ground truth counted (empty when the node counts none).
	TruthActions map[string]map[string]ActionCount
	// KernelLoaded is the kernel's own stamp of each module's load, keyed
	// "boot/module", from the first ground truth that listed it.
	KernelLoaded map[string]time.Time
	// Claims is every claim of the node's NodeModulesConfig status, in
	// the order seen.
	Claims []StatusClaim
}

// TruthSeen is one ground truth of a node's kernel as first observed.
type TruthSeen struct {
	At      time.Time
	BootID  string
	Modules []string // sorted
}

// bootAt is a boot ID and when it was first seen.
type bootAt struct {
	id string
	at time.Time
}

// Record returns a copy of everything the observer has seen so far.
func (o *Observer) Record() Record {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := Record{Nodes: make(map[string]NodeRecord, len(o.state)), Loads: slices.Clone(o.loads), StatusBoot: o.statusBoot}
	for n := range o.state {
		r.Nodes[n] = o.nodeRecordLocked(n)
	}
	for _, p := range o.pods {
		r.Pods = append(r.Pods, *p)
	}
	sort.SliceStable(r.Pods, func(i, j int) bool { return r.Pods[i].created.Before(r.Pods[j].created) })
	return r
}

// waitRecord is the part of a Record a wait of nodes is judged on (their
// boots and ground truths, and the worker pods), for the polls.
func (o *Observer) waitRecord(nodes []string) Record {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := Record{Nodes: make(map[string]NodeRecord, len(nodes))}
	for _, n := range nodes {
		if s, ok := o.state[n]; ok {
			r.Nodes[n] = NodeRecord{BootSeen: maps.Clone(s.bootSeen), TruthBootSeen: maps.Clone(s.truthBootSeen), Truths: slices.Clone(s.truths)}
		}
	}
	for _, p := range o.pods {
		r.Pods = append(r.Pods, *p)
	}
	return r
}

// NodeRecord returns a copy of node's history.
func (o *Observer) NodeRecord(node string) NodeRecord {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.nodeRecordLocked(node)
}

func (o *Observer) nodeRecordLocked(node string) NodeRecord {
	s, ok := o.state[node]
	if !ok {
		return NodeRecord{}
	}
	return NodeRecord{NotReadyAt: slices.Clone(s.notReadyAt), RenewSeen: slices.Clone(s.renewSeen),
		BootSeen: maps.Clone(s.bootSeen), TruthBootSeen: maps.Clone(s.truthBootSeen), ModuleSeen: maps.Clone(s.lastModule),
		Truths: slices.Clone(s.truths), TruthActions: cloneActions(s.truthActions), KernelLoaded: maps.Clone(s.kernelLoaded),
		Claims: slices.Clone(s.claims)}
}

func cloneActions(in map[string]map[string]ActionCount) map[string]map[string]ActionCount {
	out := make(map[string]map[string]ActionCount, len(in))
	for b, m := range in {
		out[b] = maps.Clone(m)
	}
	return out
}

// FirstSeen is when boot was first seen by either source (zero: never).
func (r NodeRecord) FirstSeen(boot string) time.Time {
	a, okA := r.BootSeen[boot]
	b, okB := r.TruthBootSeen[boot]
	switch {
	case okA && okB && b.Before(a):
		return b
	case okA:
		return a
	case okB:
		return b
	}
	return time.Time{}
}

// Boots lists the node's boot IDs, from its Node status or its kernel's
// ground truth, in the order they were first seen.
func (r NodeRecord) Boots() []bootAt {
	var out []bootAt
	for _, m := range []map[string]time.Time{r.BootSeen, r.TruthBootSeen} {
		for id := range m {
			if id != "" && !slices.ContainsFunc(out, func(b bootAt) bool { return b.id == id }) {
				out = append(out, bootAt{id: id, at: r.FirstSeen(id)})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}
