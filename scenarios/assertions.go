package scenarios

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bootproof/bootproof/contract"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The assertions of a case, as pure functions of the case's facts and an
// immutable Record of what the observer saw. The caseRun methods at the
// end only take the copies and keep the results.

// caseFacts is the case's own side of a judgement: what the scenario
// claims and what the engine did. It is a copy, taken under the case's
// lock.
type caseFacts struct {
	claim    Precondition // the scenario's precondition
	labels   []string
	declared []Module // the scenario's modules
	names    []string
	start    time.Time // the case's start: times in messages count from it
	baseAt   time.Time // every node Ready and publishing
	now      time.Time // the end of the judged window
	grace    time.Duration
	// disrupted is every disruption the timeline made, in order.
	disrupted []disruption
	// spec is the NodeModulesConfig spec the engine wrote, per node.
	spec map[string][]Module
	// baseBoot is each node's boot at baseAt.
	baseBoot map[string]string
	// subjectAt is when the subject started; firstLoad is the case's
	// measured first load (0: not measured).
	subjectAt time.Time
	firstLoad time.Duration
	// waits is every wait of the case so far, in order.
	waits []caseWait
}

// facts copies the case's facts, with now as the end of the window.
func (c *caseRun) facts(now time.Time) caseFacts {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := caseFacts{claim: c.s.Precondition, labels: slices.Clone(c.s.Labels), declared: slices.Clone(c.s.Modules),
		names: slices.Clone(c.names), start: c.start, baseAt: c.baseAt, now: now, grace: c.grace,
		spec: make(map[string][]Module, len(c.spec)), baseBoot: maps.Clone(c.baseBoot),
		subjectAt: c.subjectAt, firstLoad: c.firstLoad, waits: slices.Clone(c.waits)}
	for _, d := range c.disrupted {
		f.disrupted = append(f.disrupted, *d)
	}
	for n, m := range c.spec {
		f.spec[n] = slices.Clone(m)
	}
	return f
}

// judgePrecondition: the run tested what the scenario claims.
func judgePrecondition(f caseFacts, r Record) AssertionResult {
	fail := func(msg string) AssertionResult { return AssertionResult{Name: AssertPrecondition, Message: msg} }
	pass := func(msg string) AssertionResult {
		return AssertionResult{Name: AssertPrecondition, OK: true, Message: msg}
	}
	switch f.claim {
	case PreconditionFast:
		for _, n := range f.names {
			for _, t := range r.Nodes[n].NotReadyAt {
				if t.After(f.baseAt) {
					return fail(fmt.Sprintf("scenario claims fast reboots that never show NotReady, but node %s showed Ready!=True at %.1fs (grace period %s): the run did not test a fast reboot",
						n, t.Sub(f.start).Seconds(), f.grace))
				}
			}
		}
		// Ready that never left True is evidence only if the heartbeats
		// never paused for longer than the grace period: else NotReady
		// could have come and gone unseen (a watch gap, a lagging
		// observer).
		for _, n := range f.names {
			if gap, at := maxGap(r.Nodes[n].RenewSeen, f.baseAt, f.now); gap > f.grace {
				return fail(fmt.Sprintf("Ready never left True on node %s, but no renewal of its Lease was seen for %.1fs from %.1fs, longer than the grace period %s: NotReady could have been missed",
					n, gap.Seconds(), at.Sub(f.start).Seconds(), f.grace))
			}
		}
		return pass("Ready never left True on any node, and every node's Lease was renewed within the grace period")
	case PreconditionSlow:
		for _, d := range f.disrupted {
			if !notReadySeen(d, r.Nodes[d.node]) {
				return fail(fmt.Sprintf("scenario claims the node shows NotReady, but node %s stayed Ready through its %s of %s (grace period %s)",
					d.node, d.kind, d.downtime, f.grace))
			}
		}
		return pass("NotReady seen for every disruption")
	default:
		var seen []string
		for _, d := range f.disrupted {
			seen = append(seen, fmt.Sprintf("%s %s %s: NotReady seen %v", d.node, d.kind, d.downtime, notReadySeen(d, r.Nodes[d.node])))
		}
		return pass("recorded, not required: " + strings.Join(seen, "; "))
	}
}

// maxGap is the longest time in [from, to] without one of the times in
// seen (sorted), and where it began.
func maxGap(seen []time.Time, from, to time.Time) (time.Duration, time.Time) {
	prev, gap, at := from, time.Duration(0), from
	for _, t := range seen {
		if t.Before(from) {
			continue
		}
		if t.After(to) {
			break
		}
		if d := t.Sub(prev); d > gap {
			gap, at = d, prev
		}
		prev = t
	}
	if d := to.Sub(prev); d > gap {
		gap, at = d, prev
	}
	return gap, at
}

// notReadySeen: Ready left True on the disrupted node between the
// disruption's start and a little after its end.
func notReadySeen(d disruption, nr NodeRecord) bool {
	until := d.end.Add(2 * time.Second)
	return slices.ContainsFunc(nr.NotReadyAt, func(t time.Time) bool { return !t.Before(d.start) && t.Before(until) })
}

// judgeExtraWork: per (node, module, boot) at most one load more than
// the unloads in that boot, so no reload without a boot change. The
// count is the kernels' ground truth (every load a node's kernel was
// asked to make in a boot, whichever pod asked) where the nodes publish
// it, and never less than the worker pods the observer saw succeed; the
// pods only explain it.
func judgeExtraWork(loads []load, nodes map[string]NodeRecord) AssertionResult {
	type key struct{ node, module, boot string }
	pods, podUnloads := map[key]int{}, map[key]int{}
	for _, l := range loads {
		k := key{l.node, l.moduleName, l.boot}
		if l.action == "Load" {
			pods[k]++
		} else {
			podUnloads[k]++
		}
	}
	kernel, kernelUnloads := map[key]int{}, map[key]int{}
	counted := false
	for n, nr := range nodes {
		for boot, mods := range nr.TruthActions {
			for m, c := range mods {
				k := key{n, m, boot}
				kernel[k], kernelUnloads[k] = c.Loads, c.Unloads
				counted = true
			}
		}
	}
	keys := map[key]bool{}
	for k := range pods {
		keys[k] = true
	}
	for k := range kernel {
		keys[k] = true
	}
	var bad []string
	total := 0
	for k := range keys {
		n, u := max(pods[k], kernel[k]), max(podUnloads[k], kernelUnloads[k])
		total += n
		if n > 1+u {
			bad = append(bad, fmt.Sprintf("module %s loaded %d times in boot %s of node %s (%d unloads; the kernel counted %d loads, worker pods %d)",
				k.module, n, short(k.boot), k.node, u, kernel[k], pods[k]))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		return AssertionResult{Name: AssertNoExtraWork, Message: strings.Join(bad, "; ") + ": a load without a boot change"}
	}
	source := "the kernels' counts and the worker pods"
	if !counted {
		source = "the worker pods (the nodes publish no load counts)"
	}
	return AssertionResult{Name: AssertNoExtraWork, OK: true, Message: fmt.Sprintf("%d loads, none repeated within a boot (from %s)", total, source)}
}

// inconsistencies lists how node n's NodeModulesConfig status (in its
// snapshot sn) differs from its kernel, given the spec the engine wrote
// and the scenario's declared modules. bootOK: the boot part applies.
func inconsistencies(n string, sn NodeSnapshot, spec, declared []Module, bootOK bool) []string {
	var bad []string
	for _, e := range sn.Status {
		switch {
		case bootOK && e.BootID != sn.TruthBoot:
			bad = append(bad, fmt.Sprintf("node %s: status says %s was loaded in boot %s, the node is in boot %s", n, e.Name, short(e.BootID), short(sn.TruthBoot)))
		case e.ModuleName != "" && !slices.Contains(sn.TruthModules, e.ModuleName):
			if bootOK {
				bad = append(bad, fmt.Sprintf("node %s: status says %s is loaded in boot %s, the kernel has %v", n, e.Name, short(e.BootID), sn.TruthModules))
			} else {
				bad = append(bad, fmt.Sprintf("node %s: status lists %s as loaded, the kernel has %v", n, e.Name, sn.TruthModules))
			}
		}
	}
	hasEntry := func(name string) bool {
		return slices.ContainsFunc(sn.Status, func(e StatusEntry) bool { return e.Name == name })
	}
	for _, m := range spec {
		if !hasEntry(m.Name) {
			bad = append(bad, fmt.Sprintf("node %s: spec has %s but status has no entry", n, m.Name))
		}
	}
	for _, m := range declared {
		if slices.ContainsFunc(spec, func(x Module) bool { return x.Name == m.Name }) {
			continue
		}
		if slices.Contains(sn.TruthModules, m.ModuleName) {
			bad = append(bad, fmt.Sprintf("node %s: %s was removed from the spec but is loaded", n, m.ModuleName))
		}
		if hasEntry(m.Name) {
			bad = append(bad, fmt.Sprintf("node %s: %s was removed from the spec but has a status entry", n, m.Name))
		}
	}
	return bad
}

// checkPrecondition judges the precondition on what was seen so far.
func (c *caseRun) checkPrecondition() {
	c.results = append(c.results, judgePrecondition(c.facts(time.Now()), c.obs.Record()))
}

// checkReload judges every wait of the case: the initial load, the
// worker waits and the reloads (judgeInitialLoad, judgeWorkerWaits,
// judgeReload).
func (c *caseRun) checkReload() {
	f, r := c.facts(time.Now()), c.obs.Record()
	c.results = append(c.results, judgeInitialLoad(f, r), judgeWorkerWaits(f, r), judgeReload(f, r))
}

// checkExtraWork judges the loads seen so far, and the status claims.
func (c *caseRun) checkExtraWork() {
	r := c.obs.Record()
	c.results = append(c.results, judgeExtraWork(r.Loads, r.Nodes), judgeStatusAfterLoad(r, time.Now()))
}

// checkConsistency: the final NMC status matches ground truth. With wait,
// it gives the subject SettleTimeout to write its last status. The boot
// part (each entry's bootId is the node's boot) is judged only where the
// subject's API has boot IDs (see bootApplicable), decided at each look,
// since a subject may write its first bootId late.
func (c *caseRun) checkConsistency(ctx context.Context, wait bool) (AssertionResult, error) {
	timeout := c.e.SettleTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	if !wait {
		timeout = time.Millisecond
	}
	schemaHas, schemaKnown := c.schemaHasBootID(ctx)
	var why string
	check := func() error {
		why = bootApplicable(schemaHas, schemaKnown, c.obs.StatusBootSeen())
		f := c.facts(time.Now())
		var bad []string
		for _, n := range f.names {
			bad = append(bad, inconsistencies(n, c.obs.Snapshot(n), f.spec[n], f.declared, why == "")...)
		}
		if len(bad) > 0 {
			return errors.New(strings.Join(bad, "; "))
		}
		return nil
	}
	err := c.waitFor(ctx, timeout, check)
	if isFault(err) {
		return AssertionResult{}, err
	}
	res := AssertionResult{Name: AssertConsistency, OK: err == nil, Message: "NodeModulesConfig status matches the kernels"}
	if err != nil {
		res.Message = check().Error()
	}
	if why != "" {
		res.NotJudged = "boot part not judged: " + why
		res.Message += " (" + res.NotJudged + ")"
	}
	return res, nil
}

// bootApplicable says whether the subject's NodeModulesConfig API has
// boot IDs ("") or why not: KMM before boot-ID support has no
// status.modules[].bootId, and must not be failed for a field it does not
// have. It has none when the CRD's schema lacks the field (schemaHas
// false and known), or when no status entry of this case ever carried
// one (bootSeen false).
func bootApplicable(schemaHas, schemaKnown, bootSeen bool) (why string) {
	if schemaKnown && !schemaHas {
		return "the NodeModulesConfig CRD has no status.modules[].bootId, so only which modules are listed is compared"
	}
	if !bootSeen {
		return "no status entry of the subject ever carried a bootId, so only which modules are listed is compared"
	}
	return ""
}

// crdResource is apiextensions.k8s.io/v1 CustomResourceDefinitions.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// schemaHasBootID reads the NodeModulesConfig CRD's schema: has says
// whether status.modules[].bootId is a field; known is false when the
// CRD cannot be read (no permission) or has no schema for the version.
func (c *caseRun) schemaHasBootID(ctx context.Context) (has, known bool) {
	if c.dyn == nil {
		return false, false
	}
	crd, err := c.dyn.Resource(crdResource).Get(ctx, contract.NMCResource.GroupResource().String(), metav1.GetOptions{})
	if err != nil {
		return false, false
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if name, _, _ := unstructured.NestedString(m, "name"); name != contract.NMCResource.Version {
			continue
		}
		status, found, _ := unstructured.NestedMap(m, "schema", "openAPIV3Schema", "properties", "status")
		if !found {
			return false, false
		}
		if keep, _, _ := unstructured.NestedBool(status, "x-kubernetes-preserve-unknown-fields"); keep {
			return true, true
		}
		_, has, _ := unstructured.NestedMap(status, "properties", "modules", "items", "properties", "bootId")
		return has, true
	}
	return false, false
}
