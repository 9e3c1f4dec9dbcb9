package scenarios

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The four assertions of a case and the per-reboot metrics, computed
// from the observer's record once the timeline has run.

// checkPrecondition checks that the run tested what the scenario claims.
func (c *caseRun) checkPrecondition() {
	c.obs.mu.Lock()
	defer c.obs.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.s.Precondition {
	case "fast":
		for _, n := range c.names {
			for _, t := range c.obs.state[n].notReadyAt {
				if t.After(c.baseAt) {
					c.assert(AssertPrecondition, false, fmt.Sprintf("scenario claims fast reboots that never show NotReady, but node %s showed Ready!=True at %.1fs (grace period %s): the run did not test a fast reboot",
						n, t.Sub(c.start).Seconds(), c.grace))
					return
				}
			}
		}
		// Ready that never left True is evidence only if the heartbeats
		// never paused for longer than the grace period: else NotReady
		// could have come and gone unseen (a watch gap, a lagging
		// observer).
		for _, n := range c.names {
			if gap, at := maxGap(c.obs.state[n].renewSeen, c.baseAt, time.Now()); gap > c.grace {
				c.assert(AssertPrecondition, false, fmt.Sprintf("Ready never left True on node %s, but no renewal of its Lease was seen for %.1fs from %.1fs, longer than the grace period %s: NotReady could have been missed",
					n, gap.Seconds(), at.Sub(c.start).Seconds(), c.grace))
				return
			}
		}
		c.assert(AssertPrecondition, true, "Ready never left True on any node, and every node's Lease was renewed within the grace period")
	case "slow":
		for _, d := range c.disrupted {
			if !c.notReadySeen(d) {
				c.assert(AssertPrecondition, false, fmt.Sprintf("scenario claims the node shows NotReady, but node %s stayed Ready through its %s of %s (grace period %s)",
					d.node, d.kind, d.downtime, c.grace))
				return
			}
		}
		c.assert(AssertPrecondition, true, "NotReady seen for every disruption")
	default:
		var seen []string
		for _, d := range c.disrupted {
			seen = append(seen, fmt.Sprintf("%s %s %s: NotReady seen %v", d.node, d.kind, d.downtime, c.notReadySeen(d)))
		}
		c.assert(AssertPrecondition, true, "recorded, not required: "+strings.Join(seen, "; "))
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

// notReadySeen: Ready left True between the disruption's start and a
// little after its end; call with both locks held.
func (c *caseRun) notReadySeen(d *disruption) bool {
	until := d.end.Add(2 * time.Second)
	for _, t := range c.obs.state[d.node].notReadyAt {
		if !t.Before(d.start) && t.Before(until) {
			return true
		}
	}
	return false
}

// checkExtraWork: per (node, module, boot) at most one load more than the
// unloads in that boot, so no reload without a boot change.
func (c *caseRun) checkExtraWork() {
	c.obs.mu.Lock()
	defer c.obs.mu.Unlock()
	type key struct{ node, module, boot string }
	loads, unloads := map[key]int{}, map[key]int{}
	for _, l := range c.obs.loads {
		k := key{l.node, l.moduleName, l.boot}
		if l.action == "Load" {
			loads[k]++
		} else {
			unloads[k]++
		}
	}
	var bad []string
	for k, n := range loads {
		if n > 1+unloads[k] {
			bad = append(bad, fmt.Sprintf("module %s loaded %d times in boot %s of node %s (%d unloads)", k.module, n, short(k.boot), k.node, unloads[k]))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		c.assert(AssertNoExtraWork, false, strings.Join(bad, "; ")+": a load without a boot change")
		return
	}
	c.assert(AssertNoExtraWork, true, fmt.Sprintf("%d loads, none repeated within a boot", len(c.obs.loads)))
}

// checkConsistency: the final NMC status matches ground truth. With wait,
// it gives the subject SettleTimeout to write its last status. The boot
// part (each entry's bootId is the node's boot) is judged only where the
// subject's API has boot IDs; see bootApplicable.
func (c *caseRun) checkConsistency(ctx context.Context, wait bool) error {
	timeout := c.e.SettleTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	if !wait {
		timeout = time.Millisecond
	}
	bootOK, why := c.bootApplicable(ctx)
	check := func() error {
		var bad []string
		for _, n := range c.names {
			bad = append(bad, c.inconsistencies(n, bootOK)...)
		}
		if len(bad) > 0 {
			return errors.New(strings.Join(bad, "; "))
		}
		return nil
	}
	err := c.waitFor(ctx, timeout, check)
	if isFault(err) {
		return err
	}
	if err != nil {
		c.assert(AssertConsistency, false, check().Error()+why)
		return nil
	}
	c.assert(AssertConsistency, true, "NodeModulesConfig status matches the kernels"+why)
	return nil
}

// inconsistencies lists how node's NMC status differs from its kernel.
func (c *caseRun) inconsistencies(n string, bootOK bool) []string {
	var bad []string
	sn := c.obs.Snapshot(n)
	c.mu.Lock()
	spec := slices.Clone(c.spec[n])
	c.mu.Unlock()
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
	for _, m := range spec {
		if !slices.ContainsFunc(sn.Status, func(e StatusEntry) bool { return e.Name == m.Name }) {
			bad = append(bad, fmt.Sprintf("node %s: spec has %s but status has no entry", n, m.Name))
		}
	}
	for _, m := range c.s.Modules {
		inSpec := slices.ContainsFunc(spec, func(x Module) bool { return x.Name == m.Name })
		if !inSpec && slices.Contains(sn.TruthModules, m.ModuleName) {
			bad = append(bad, fmt.Sprintf("node %s: %s was removed from the spec but is loaded", n, m.ModuleName))
		}
		if !inSpec && slices.ContainsFunc(sn.Status, func(e StatusEntry) bool { return e.Name == m.Name }) {
			bad = append(bad, fmt.Sprintf("node %s: %s was removed from the spec but has a status entry", n, m.Name))
		}
	}
	return bad
}

// bootApplicable says whether the subject's NodeModulesConfig API has
// boot IDs: KMM before boot-ID support has no status.modules[].bootId,
// and must not be failed for a field it does not have. It has none when
// the CRD's schema lacks the field, or when no status entry of this case
// ever carried one. why is "" when the boot part applies, else the
// note for the assertion's message.
func (c *caseRun) bootApplicable(ctx context.Context) (ok bool, why string) {
	const na = " (boot part not applicable: "
	if has, known := c.schemaHasBootID(ctx); known && !has {
		return false, na + "the NodeModulesConfig CRD has no status.modules[].bootId, so only which modules are listed is compared)"
	}
	if !c.obs.StatusBootSeen() {
		return false, na + "no status entry of the subject ever carried a bootId, so only which modules are listed is compared)"
	}
	return true, ""
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
	crd, err := c.dyn.Resource(crdResource).Get(ctx, NMCResource.GroupResource().String(), metav1.GetOptions{})
	if err != nil {
		return false, false
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if name, _, _ := unstructured.NestedString(m, "name"); name != NMCResource.Version {
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
