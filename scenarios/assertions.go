package scenarios

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/scenarios/judging"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The engine's side of the assertions: it copies the case's facts and
// the observer's Record and keeps what package judging decides.

// facts copies the case's facts, with now as the end of the window.
func (c *caseRun) facts(now time.Time) judging.Facts {
	subjectAt, firstLoad := c.reload.firstLoadFacts()
	c.mu.Lock()
	defer c.mu.Unlock()
	f := judging.Facts{Claim: c.s.Precondition, Labels: slices.Clone(c.s.Labels), Declared: judgedModules(c.s.Modules),
		Names: slices.Clone(c.names), Start: c.start, BaseAt: c.baseAt, Now: now, Grace: c.grace,
		Spec: make(map[string][]judging.Module, len(c.spec)), BaseBoot: maps.Clone(c.baseBoot),
		SubjectAt: subjectAt, FirstLoad: firstLoad, Disrupted: c.dis.all(), Waits: slices.Clone(c.waits)}
	for n, m := range c.spec {
		f.Spec[n] = specModules(m, c.kernel[n])
	}
	return f
}

// judgedModules is ms as judging compares them.
func judgedModules(ms []Module) []judging.Module {
	out := make([]judging.Module, 0, len(ms))
	for _, m := range ms {
		out = append(out, judging.Module{Name: m.Name, ModuleName: m.ModuleName})
	}
	return out
}

// isNMCGone reports whether node n's NodeModulesConfig was deleted.
func (c *caseRun) isNMCGone(n string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nmcGone[n]
}

// specModules is a node's spec as judging compares it: its modules with
// the config the engine wrote for kernel.
func specModules(ms []Module, kernel string) []judging.Module {
	out := judgedModules(ms)
	for i, m := range ms {
		out[i].KernelVersion, out[i].ContainerImage = kernel, m.ContainerImage(kernel)
	}
	return out
}

// checkPrecondition judges the precondition on what was seen so far.
func (c *caseRun) checkPrecondition() {
	c.results = append(c.results, judging.JudgePrecondition(c.facts(time.Now()), c.obs.Record()))
}

// checkReload judges every wait of the case: the initial load, the
// worker waits and the reloads.
func (c *caseRun) checkReload() {
	f, r := c.facts(time.Now()), c.obs.Record()
	c.results = append(c.results, judging.JudgeInitialLoad(f, r), judging.JudgeWorkerWaits(f, r), judging.JudgeReload(f, r), judging.JudgeReloadSLO(f, r))
}

// checkExtraWork judges the loads seen so far, and the status claims.
func (c *caseRun) checkExtraWork() {
	r := c.obs.Record()
	c.results = append(c.results, judging.JudgeExtraWork(r), judging.JudgeStatusAfterLoad(r, time.Now()))
}

// checkConsistency: the final NMC status matches ground truth. With wait,
// it gives the subject SettleTimeout to write its last status. The boot
// part (each entry's bootId is the node's boot) is judged only where the
// subject's API has boot IDs (see judging.BootApplicable), decided at each look,
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
	var res AssertionResult
	check := func() error {
		why = judging.BootApplicable(schemaHas, schemaKnown, c.obs.StatusBootSeen())
		f, rec := c.facts(time.Now()), c.obs.Record()
		var bad []judging.Detail
		for _, n := range f.Names {
			sn := c.obs.Snapshot(n)
			state := judging.NodeState{TruthBoot: sn.TruthBoot, TruthModules: sn.TruthModules, Status: sn.Status,
				LastLoadImage: judging.LastLoadImages(rec, n, sn.TruthBoot)}
			declared := f.Declared
			if c.isNMCGone(n) {
				declared = nil // nobody answers for what its spec no longer says
			}
			bad = append(bad, judging.Inconsistencies(n, state, f.Spec[n], declared, why == "")...)
		}
		if res = judging.JudgeConsistency(bad); !res.OK {
			return errors.New(res.Message)
		}
		return nil
	}
	err := c.waitFor(ctx, timeout, check)
	if isFault(err) {
		return AssertionResult{}, err
	}
	if err != nil {
		_ = check() // the state when the wait ended
	}
	if why != "" {
		res.NotJudged = "boot part not judged: " + why
		res.Message += " (" + res.NotJudged + ")"
	}
	return res, nil
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
