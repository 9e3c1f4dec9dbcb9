package observe

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/scenarios/judging"
	"github.com/bootproof/bootproof/scenarios/trace"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

func (o *Observer) onNode(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok || !o.nodes[n.Name] {
		return
	}
	now := o.clock.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.state[n.Name]
	r := readyOf(n)
	if r != s.ready {
		s.ready = r
		o.record(trace.Event{Kind: trace.KindReady, Node: n.Name, Ready: string(r)}, now)
	}
	if r != corev1.ConditionTrue {
		s.notReadyAt = append(s.notReadyAt, now)
	}
	s.kernelVersion = n.Status.NodeInfo.KernelVersion
	s.lifecycleTaints = lifecycleTaints(n)
	if b := n.Status.NodeInfo.BootID; b != s.bootID {
		s.bootID = b
		if _, seen := s.bootSeen[b]; !seen {
			s.bootSeen[b] = now
		}
		o.record(trace.Event{Kind: trace.KindBoot, Node: n.Name, BootID: b, Detail: "kernel " + s.kernelVersion}, now)
	}
}

// lifecycleTaints lists the taints the node lifecycle controller puts on
// a node that is not (yet) Ready or unreachable: while one is there, no
// worker pod without a toleration may run on it.
func lifecycleTaints(n *corev1.Node) []string {
	var out []string
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			out = append(out, t.ToString())
		}
	}
	return out
}

func (o *Observer) onLease(obj any) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok || !o.nodes[l.Name] {
		return
	}
	now := o.clock.Now()
	g, err := o.readTr.ReadGroundTruth(l)
	var t Truth
	has := g != nil
	if has {
		t = truthOf(g)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.state[l.Name]
	if l.Spec.RenewTime != nil && l.Spec.RenewTime.After(s.renewTime) {
		s.renewTime = l.Spec.RenewTime.Time
		s.renewSeen = append(s.renewSeen, now)
		o.record(trace.Event{Kind: trace.KindHeartbeat, Node: l.Name}, now)
	}
	if err != nil {
		if o.errs[l.Name] == nil {
			o.errs[l.Name] = fmt.Errorf("node %s: read the ground truth on its Lease: %w", l.Name, err)
		}
		return
	}
	if !has {
		return
	}
	if len(t.Actions) > 0 {
		counts := s.truthActions[t.BootID]
		if counts == nil {
			counts = map[string]judging.ActionCount{}
			s.truthActions[t.BootID] = counts
		}
		for m, c := range t.Actions {
			old := counts[m]
			counts[m] = judging.ActionCount{Loads: max(old.Loads, c.Loads), Unloads: max(old.Unloads, c.Unloads)}
		}
	}
	if s.truth == nil || s.truth.BootID != t.BootID || !maps.Equal(modNames(s.truth.Modules), modNames(t.Modules)) {
		s.truth, s.truthAt = &t, now
		s.truths = append(s.truths, judging.TruthSeen{At: now, BootID: t.BootID, Modules: sortedKeys(t.Modules)})
		if _, seen := s.truthBootSeen[t.BootID]; !seen {
			s.truthBootSeen[t.BootID] = now
		}
		for m, at := range t.Modules {
			key := t.BootID + "/" + m
			if _, seen := s.lastModule[key]; !seen {
				s.lastModule[key] = now
				s.kernelLoaded[key] = at
			}
		}
		mods := sortedKeys(t.Modules)
		o.record(trace.Event{Kind: trace.KindTruth, Node: l.Name, BootID: t.BootID, Modules: mods, Detail: strings.Join(mods, ",")}, now)
	}
}

func modNames(m map[string]time.Time) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (o *Observer) onPod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || !o.nodes[p.Spec.NodeName] {
		return
	}
	action, isWorker := p.Labels[contract.WorkerActionLabel]
	if !isWorker {
		return
	}
	now := o.clock.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	key := string(p.UID)
	po := o.pods[key]
	if po == nil {
		cfg := workerConfigOf(p)
		po = &podObs{name: p.Name, node: p.Spec.NodeName, action: action, created: now, moduleName: cfg.Modprobe.ModuleName, image: cfg.ContainerImage}
		o.pods[key] = po
		o.record(trace.Event{Kind: trace.KindPod, Node: po.node, Pod: p.Name, Module: po.moduleName, WorkerAction: action, Phase: trace.PhaseCreated, Detail: action + " created"}, now)
	}
	if p.Status.Phase != po.phase {
		po.phase = p.Status.Phase
		o.record(trace.Event{Kind: trace.KindPod, Node: po.node, Pod: p.Name, Module: po.moduleName, WorkerAction: action, Phase: trace.Phase(p.Status.Phase),
			Detail: action + " " + string(p.Status.Phase)}, now)
	}
	if p.DeletionTimestamp != nil && !po.deleting {
		po.deleting = true
		o.record(trace.Event{Kind: trace.KindPod, Node: po.node, Pod: p.Name, Module: po.moduleName, WorkerAction: action, Phase: trace.Phase(p.Status.Phase),
			Detail: action + " being deleted"}, now)
	}
	if p.Status.Phase == corev1.PodRunning && !po.running {
		po.running, po.runningAt = true, now
	}
	if p.Status.Phase == corev1.PodSucceeded && !po.succeeded {
		po.succeeded, po.succeededAt = true, now
		boot, mods := terminationBoot(p)
		if boot == "" {
			// A worker that reports no boot (upstream KMM's): the boot
			// the node is in when the success is observed.
			boot = o.state[po.node].bootID
		}
		po.loadBoot = boot
		o.loads = append(o.loads, load{node: po.node, moduleName: po.moduleName, action: action, boot: boot, at: now, modules: mods, image: po.image})
		o.record(trace.Event{Kind: trace.KindLoad, Node: po.node, Pod: p.Name, Module: po.moduleName, BootID: boot, WorkerAction: action, Detail: action}, now)
	}
}

func (o *Observer) onPodDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if po := o.pods[string(p.UID)]; po != nil && !po.deleted {
		po.deleted = true
		o.record(trace.Event{Kind: trace.KindPod, Node: po.node, Pod: p.Name, Module: po.moduleName, WorkerAction: po.action, Phase: trace.PhaseDeleted,
			Detail: po.action + " deleted"}, o.clock.Now())
	}
}

// StatusBootSeen reports whether any NodeModulesConfig status entry of
// the case carried a bootId.
func (o *Observer) StatusBootSeen() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.statusBoot
}

// ActiveWorkers names the worker pods that have not ended, sorted (see
// ActiveWorkerDetails).
func (o *Observer) ActiveWorkers() []string {
	var out []string
	for _, d := range o.ActiveWorkerDetails() {
		out = append(out, d.Evidence)
	}
	sort.Strings(out)
	return out
}

// notEnded says how a worker pod has not ended ("" when it has): it
// exists and has neither Succeeded nor Failed, or its deletion started
// and something (a finalizer) still keeps it.
func (p *podObs) notEnded() string {
	phase := cmp.Or(string(p.phase), "no phase")
	switch {
	case p.deleted:
		return ""
	case p.phase != corev1.PodSucceeded && p.phase != corev1.PodFailed:
		return fmt.Sprintf("worker pod %s (%s %s, %s)", p.name, p.action, p.moduleName, phase)
	case p.deleting:
		return fmt.Sprintf("worker pod %s (%s %s, %s) still there, its deletion begun: a finalizer keeps it", p.name, p.action, p.moduleName, phase)
	}
	return ""
}

// ActiveWorkerDetails is ActiveWorkers as evidence by node: each worker
// pod that exists and has not finished, on the node it is bound to.
func (o *Observer) ActiveWorkerDetails() []judging.Detail {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []judging.Detail
	for _, p := range o.pods {
		if why := p.notEnded(); why != "" {
			out = append(out, judging.Detail{Node: p.node, Evidence: why})
		}
	}
	judging.SortDetails(out)
	return out
}

func (o *Observer) onNMC(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || !o.nodes[u.GetName()] {
		return
	}
	status := entries(u, "status")
	spec := entries(u, "spec")
	now := o.clock.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.state[u.GetName()]
	s.spec = spec
	for _, e := range status {
		if e.BootID != "" {
			o.statusBoot = true
		}
	}
	if !slices.Equal(s.status, status) {
		s.status = status
		s.claims = judging.UpdateClaims(s.claims, status, now)
		var parts []string
		for _, e := range status {
			parts = append(parts, fmt.Sprintf("%s@%s", e.Name, judging.Short(e.BootID)))
		}
		o.record(trace.Event{Kind: trace.KindStatus, Node: u.GetName(), Detail: strings.Join(parts, ",")}, now)
	}
}

// onNMCDelete forgets a deleted NodeModulesConfig's spec and status.
func (o *Observer) onNMCDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || !o.nodes[u.GetName()] {
		return
	}
	now := o.clock.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.state[u.GetName()]
	s.spec, s.status = nil, nil
	s.claims = judging.UpdateClaims(s.claims, nil, now)
	o.record(trace.Event{Kind: trace.KindStatus, Node: u.GetName(), Detail: "NodeModulesConfig deleted"}, now)
}

// entries reads spec.modules or status.modules of an NMC.
func entries(u *unstructured.Unstructured, field string) []judging.StatusEntry {
	items, _, _ := unstructured.NestedSlice(u.Object, field, "modules")
	var out []judging.StatusEntry
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		e := judging.StatusEntry{}
		e.Name, _, _ = unstructured.NestedString(m, "name")
		e.Namespace, _, _ = unstructured.NestedString(m, "namespace")
		e.BootID, _, _ = unstructured.NestedString(m, "bootId")
		e.KernelVersion, _, _ = unstructured.NestedString(m, "config", "kernelVersion")
		e.ModuleName, _, _ = unstructured.NestedString(m, "config", "modprobe", "moduleName")
		e.ContainerImage, _, _ = unstructured.NestedString(m, "config", "containerImage")
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
