package judging

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// JudgePrecondition is the precondition assertion: the run tested what
// the scenario claims.
func JudgePrecondition(f Facts, r Record) AssertionResult {
	fail := func(msg string) AssertionResult { return AssertionResult{Name: AssertPrecondition, Message: msg} }
	pass := func(msg string) AssertionResult {
		return AssertionResult{Name: AssertPrecondition, OK: true, Message: msg}
	}
	switch f.Claim {
	case PreconditionFast:
		for _, n := range f.Names {
			for _, t := range r.Nodes[n].NotReadyAt {
				if t.After(f.BaseAt) {
					return fail(fmt.Sprintf("scenario claims fast reboots that never show NotReady, but node %s showed Ready!=True at %.1fs (grace period %s): the run did not test a fast reboot",
						n, t.Sub(f.Start).Seconds(), f.Grace))
				}
			}
		}
		// Ready that never left True is evidence only if the heartbeats
		// never paused for longer than the grace period: else NotReady
		// could have come and gone unseen (a watch gap, a lagging
		// observer).
		for _, n := range f.Names {
			if gap, at := maxGap(r.Nodes[n].RenewSeen, f.BaseAt, f.Now); gap > f.Grace {
				return fail(fmt.Sprintf("Ready never left True on node %s, but no renewal of its Lease was seen for %.1fs from %.1fs, longer than the grace period %s: NotReady could have been missed",
					n, gap.Seconds(), at.Sub(f.Start).Seconds(), f.Grace))
			}
		}
		return pass("Ready never left True on any node, and every node's Lease was renewed within the grace period")
	case PreconditionSlow:
		for _, d := range f.Disrupted {
			if !NotReadySeen(d, r.Nodes[d.Node]) {
				return fail(fmt.Sprintf("scenario claims the node shows NotReady, but node %s stayed Ready through its %s of %s (grace period %s)",
					d.Node, d.Kind, d.Downtime, f.Grace))
			}
		}
		return pass("NotReady seen for every disruption")
	default:
		var seen []string
		for _, d := range f.Disrupted {
			seen = append(seen, fmt.Sprintf("%s %s %s: NotReady seen %v", d.Node, d.Kind, d.Downtime, NotReadySeen(d, r.Nodes[d.Node])))
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

// NotReadySeen: Ready left True on the disrupted node between the
// disruption's start and a little after its end.
func NotReadySeen(d Disruption, nr NodeRecord) bool {
	until := d.End.Add(2 * time.Second)
	return slices.ContainsFunc(nr.NotReadyAt, func(t time.Time) bool { return !t.Before(d.Start) && t.Before(until) })
}

// JudgeExtraWork is the no-extra-work assertion: per (node, module, boot)
// at most one load more than the unloads in that boot, so no reload
// without a boot change. The count is the kernels' ground truth (every
// load a node's kernel was asked to make in a boot, whichever pod asked)
// where the nodes publish it, and never less than the worker pods the
// observer saw succeed; the pods only explain it.
func JudgeExtraWork(r Record) AssertionResult {
	type key struct{ node, module, boot string }
	pods, podUnloads := map[key]int{}, map[key]int{}
	for _, l := range r.Loads {
		k := key{l.Node, l.ModuleName, l.Boot}
		if l.Action == "Load" {
			pods[k]++
		} else {
			podUnloads[k]++
		}
	}
	kernel, kernelUnloads := map[key]int{}, map[key]int{}
	counted := false
	for n, nr := range r.Nodes {
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
	var bad []Detail
	total := 0
	for k := range keys {
		n, u := max(pods[k], kernel[k]), max(podUnloads[k], kernelUnloads[k])
		total += n
		if n > 1+u {
			bad = append(bad, Detail{Node: k.node, Evidence: fmt.Sprintf("module %s loaded %d times in boot %s (%d unloads; the kernel counted %d loads, worker pods %d)",
				k.module, n, Short(k.boot), u, kernel[k], pods[k])})
		}
	}
	if len(bad) > 0 {
		return AssertionResult{Name: AssertNoExtraWork, Message: Summarize("a load without a boot change", bad), Details: bad}
	}
	source := "the kernels' counts and the worker pods"
	if !counted {
		source = "the worker pods (the nodes publish no load counts)"
	}
	return AssertionResult{Name: AssertNoExtraWork, OK: true, Message: fmt.Sprintf("%d loads, none repeated within a boot (from %s)", total, source)}
}

// NodeState is a node's last observed state as the consistency
// assertion compares it: the kernel's boot and loaded modules, and the
// node's NodeModulesConfig status.
type NodeState struct {
	TruthBoot    string
	TruthModules []string
	Status       []StatusEntry
	// LastLoadImage is, per kernel module, the image of the last loader
	// pod seen succeed in the node's current boot (LastLoadImages).
	LastLoadImage map[string]string
}

// LastLoadImages is, per kernel module, the image of the last Load the
// record holds of node in boot (a worker whose config names no image
// leaves the module out).
func LastLoadImages(r Record, node, boot string) map[string]string {
	out := map[string]string{}
	for _, l := range r.Loads {
		if l.Node == node && l.Boot == boot && l.Action == "Load" && l.Image != "" {
			out[l.ModuleName] = l.Image
		}
	}
	return out
}

// Inconsistencies lists how node n's NodeModulesConfig status (in sn)
// differs from its kernel, given the spec the engine wrote and the
// scenario's declared modules. bootOK: the boot part applies (see
// BootApplicable).
func Inconsistencies(n string, sn NodeState, spec, declared []Module, bootOK bool) []Detail {
	var bad []Detail
	add := func(format string, a ...any) { bad = append(bad, Detail{Node: n, Evidence: fmt.Sprintf(format, a...)}) }
	for _, e := range sn.Status {
		switch {
		case bootOK && e.BootID != sn.TruthBoot:
			add("status says %s was loaded in boot %s, the node is in boot %s", e.Name, Short(e.BootID), Short(sn.TruthBoot))
		case e.ModuleName != "" && !slices.Contains(sn.TruthModules, e.ModuleName):
			if bootOK {
				add("status says %s is loaded in boot %s, the kernel has %v", e.Name, Short(e.BootID), sn.TruthModules)
			} else {
				add("status lists %s as loaded, the kernel has %v", e.Name, sn.TruthModules)
			}
		}
	}
	hasEntry := func(name string) bool {
		return slices.ContainsFunc(sn.Status, func(e StatusEntry) bool { return e.Name == name })
	}
	for _, m := range spec {
		if !hasEntry(m.Name) {
			add("spec has %s but status has no entry", m.Name)
		}
		bad = append(bad, configDiffers(n, sn, m)...)
	}
	for _, m := range declared {
		if slices.ContainsFunc(spec, func(x Module) bool { return x.Name == m.Name }) {
			continue
		}
		if slices.Contains(sn.TruthModules, m.ModuleName) {
			add("%s was removed from the spec but is loaded", m.ModuleName)
		}
		if hasEntry(m.Name) {
			add("%s was removed from the spec but has a status entry", m.Name)
		}
	}
	return bad
}

// configDiffers lists how the config of module m's status entry, and of
// its last load in the node's current boot, differ from the config the
// engine wrote for it (m): a status or a kernel still at an old kernel
// version or image. A field the subject's status leaves empty is not
// compared (an API without it).
func configDiffers(n string, sn NodeState, m Module) []Detail {
	var bad []Detail
	add := func(format string, a ...any) { bad = append(bad, Detail{Node: n, Evidence: fmt.Sprintf(format, a...)}) }
	for _, e := range sn.Status {
		if e.Name != m.Name {
			continue
		}
		if e.KernelVersion != "" && m.KernelVersion != "" && e.KernelVersion != m.KernelVersion {
			add("status says %s was loaded for kernel %s, the spec asks for %s", e.Name, e.KernelVersion, m.KernelVersion)
		}
		if e.ContainerImage != "" && m.ContainerImage != "" && e.ContainerImage != m.ContainerImage {
			add("status says %s was loaded from image %s, the spec asks for %s", e.Name, e.ContainerImage, m.ContainerImage)
		}
	}
	if img, ok := sn.LastLoadImage[m.ModuleName]; ok && m.ContainerImage != "" && img != m.ContainerImage {
		add("the last load of %s in boot %s ran image %s, the spec asks for %s", m.ModuleName, Short(sn.TruthBoot), img, m.ContainerImage)
	}
	return bad
}

// JudgeConsistency is the consistency assertion on the inconsistencies
// found on every node (Inconsistencies): none, or a message naming how
// many nodes and the first few, with every one in Details.
func JudgeConsistency(bad []Detail) AssertionResult {
	if len(bad) == 0 {
		return AssertionResult{Name: AssertConsistency, OK: true, Message: "NodeModulesConfig status matches the kernels"}
	}
	bad = slices.Clone(bad)
	return AssertionResult{Name: AssertConsistency, Message: Summarize("NodeModulesConfig status differs from the kernel", bad), Details: bad}
}

// BootApplicable says whether the subject's NodeModulesConfig API has
// boot IDs ("") or why not: KMM before boot-ID support has no
// status.modules[].bootId, and must not be failed for a field it does not
// have. It has none when the CRD's schema lacks the field (schemaHas
// false and known), or when no status entry of this case ever carried
// one (bootSeen false).
func BootApplicable(schemaHas, schemaKnown, bootSeen bool) (why string) {
	if schemaKnown && !schemaHas {
		return "the NodeModulesConfig CRD has no status.modules[].bootId, so only which modules are listed is compared"
	}
	if !bootSeen {
		return "no status entry of the subject ever carried a bootId, so only which modules are listed is compared"
	}
	return ""
}

// StatusClaimSlack is how long after a status claim was seen the kernel's
// ground truth may still not show the load: the observer watches the
// NodeModulesConfigs and the Leases on two streams, and a node publishes
// its kernel's state just after a load, beside the pod's status. A
// correct subject claims a load only after its worker pod finished, so
// its claims trail the kernel; one that claims when it creates the pod
// leads it by the pod's start and action (over 1 s on a
// kubelet-defaults node, 4 s with a podLatency of 2 s).
const StatusClaimSlack = time.Second

// JudgeStatusAfterLoad is the status-after-load assertion: no status
// claim (an entry with a bootId) leads the kernel. A claim that module M
// is loaded in boot B, first seen at t, is early when the kernel loaded M
// in B only later than t + StatusClaimSlack (both by the observer's first
// sighting of the load and by the kernel's own stamp of it), or never
// while, at t + StatusClaimSlack, it still showed B and the claim still
// stood. A stale claim (the node rebooted since, the module was unloaded
// since) is the consistency assertion's and the reload assertion's
// business. end is when the case was judged, for claims that still
// stand.
func JudgeStatusAfterLoad(r Record, end time.Time) AssertionResult {
	var bad []Detail
	claims := 0
	for _, n := range slices.Sorted(maps.Keys(r.Nodes)) {
		nr := r.Nodes[n]
		for _, c := range nr.Claims {
			claims++
			if why := earlyClaim(nr, c, end); why != "" {
				bad = append(bad, Detail{Node: n, Evidence: why})
			}
		}
	}
	if len(bad) > 0 {
		return AssertionResult{Name: AssertStatusAfterLoad, Message: Summarize("a status claimed a load before the kernel made it", bad), Details: bad}
	}
	if claims == 0 {
		return AssertionResult{Name: AssertStatusAfterLoad, OK: true, Message: "no status entry claimed a load"}
	}
	return AssertionResult{Name: AssertStatusAfterLoad, OK: true,
		Message: fmt.Sprintf("%d status claims, none ahead of the kernel by over %s", claims, StatusClaimSlack)}
}

// earlyClaim says how claim c of a node with history nr led the kernel
// ("": it did not).
func earlyClaim(nr NodeRecord, c StatusClaim, end time.Time) string {
	key := c.Boot + "/" + c.Module
	what := fmt.Sprintf("status entry %s claimed %s loaded in boot %s", c.Entry, c.Module, Short(c.Boot))
	if seen, ok := nr.ModuleSeen[key]; ok {
		loaded := seen
		if stamp, ok := nr.KernelLoaded[key]; ok && stamp.Before(loaded) {
			loaded = stamp
		}
		if lead := loaded.Sub(c.From); lead > StatusClaimSlack {
			return fmt.Sprintf("%s %s before the kernel loaded it", what, lead.Round(time.Millisecond))
		}
		return ""
	}
	check := c.From.Add(StatusClaimSlack)
	until := c.Until
	if until.IsZero() {
		until = end
	}
	if !check.Before(until) || nr.TruthAt(check).BootID != c.Boot {
		return ""
	}
	return fmt.Sprintf("%s, and %s later the kernel, still in that boot, had not loaded it (and never did)", what, StatusClaimSlack)
}
