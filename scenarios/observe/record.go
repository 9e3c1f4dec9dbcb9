package observe

import (
	"maps"
	"slices"
	"sort"

	"github.com/bootproof/bootproof/scenarios/judging"
)

// Record returns a copy of everything the observer has seen so far.
// It is what package judging judges.
func (o *Observer) Record() judging.Record {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := judging.Record{Nodes: make(map[string]judging.NodeRecord, len(o.state)), StatusBoot: o.statusBoot}
	for n := range o.state {
		r.Nodes[n] = o.nodeRecordLocked(n)
	}
	for _, l := range o.loads {
		r.Loads = append(r.Loads, judging.Load{Node: l.node, ModuleName: l.moduleName, Action: l.action, Boot: l.boot, At: l.at, Modules: slices.Clone(l.modules), Image: l.image})
	}
	r.Pods = o.podsLocked()
	return r
}

// podsLocked is every worker pod seen, in creation order.
func (o *Observer) podsLocked() []judging.Pod {
	out := make([]judging.Pod, 0, len(o.pods))
	for _, p := range o.pods {
		out = append(out, judging.Pod{Name: p.name, Node: p.node, ModuleName: p.moduleName, Action: p.action,
			Created: p.created, RunningAt: p.runningAt, SucceededAt: p.succeededAt})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}

// WaitRecord is the part of a Record a wait of nodes is judged on (their
// boots and ground truths, and the worker pods), for the polls.
func (o *Observer) WaitRecord(nodes []string) judging.Record {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := judging.Record{Nodes: make(map[string]judging.NodeRecord, len(nodes))}
	for _, n := range nodes {
		if s, ok := o.state[n]; ok {
			r.Nodes[n] = judging.NodeRecord{BootSeen: maps.Clone(s.bootSeen), TruthBootSeen: maps.Clone(s.truthBootSeen), Truths: slices.Clone(s.truths)}
		}
	}
	r.Pods = o.podsLocked()
	return r
}

// NodeRecord returns a copy of node's history.
func (o *Observer) NodeRecord(node string) judging.NodeRecord {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.nodeRecordLocked(node)
}

func (o *Observer) nodeRecordLocked(node string) judging.NodeRecord {
	s, ok := o.state[node]
	if !ok {
		return judging.NodeRecord{}
	}
	return judging.NodeRecord{NotReadyAt: slices.Clone(s.notReadyAt), RenewSeen: slices.Clone(s.renewSeen),
		BootSeen: maps.Clone(s.bootSeen), TruthBootSeen: maps.Clone(s.truthBootSeen), ModuleSeen: maps.Clone(s.lastModule),
		Truths: slices.Clone(s.truths), TruthActions: cloneActions(s.truthActions), KernelLoaded: maps.Clone(s.kernelLoaded),
		Claims: slices.Clone(s.claims)}
}

func cloneActions(in map[string]map[string]judging.ActionCount) map[string]map[string]judging.ActionCount {
	out := make(map[string]map[string]judging.ActionCount, len(in))
	for b, m := range in {
		out[b] = maps.Clone(m)
	}
	return out
}
