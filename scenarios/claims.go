package scenarios

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// StatusClaimSlack is how long after a status claim was seen the kernel's
// ground truth may still not show the load: the observer watches the
// NodeModulesConfigs and the Leases on two streams, and a node publishes
// its kernel's state just after a load, beside the pod's status. A
// correct subject claims a load only after its worker pod finished, so
// its claims trail the kernel; one that claims when it creates the pod
// leads it by the pod's start and action (over 1 s on a
// kubelet-defaults node, 4 s with a podLatency of 2 s).
const StatusClaimSlack = time.Second

// StatusClaim is one NodeModulesConfig status entry with a bootId as the
// observer saw it stand: the subject's claim that Module is loaded in
// Boot, From when it was first seen until it changed or went (zero: it
// still stands). An entry without a bootId claims no boot (an API that
// predates boot IDs is not failed for it) and makes no claim here.
type StatusClaim struct {
	// Entry is the status entry's name; Module the kernel module its
	// config loads.
	Entry, Module, Boot string
	From, Until         time.Time
}

// updateClaims closes the claims of claims that status no longer makes
// and opens one for each entry of status that no open claim makes, as
// seen at now.
func updateClaims(claims []StatusClaim, status []StatusEntry, now time.Time) []StatusClaim {
	makes := func(e StatusEntry, c StatusClaim) bool {
		return c.Until.IsZero() && c.Entry == e.Name && c.Module == e.ModuleName && c.Boot == e.BootID
	}
	for i := range claims {
		if claims[i].Until.IsZero() && !slices.ContainsFunc(status, func(e StatusEntry) bool { return makes(e, claims[i]) }) {
			claims[i].Until = now
		}
	}
	for _, e := range status {
		if e.ModuleName == "" || e.BootID == "" || slices.ContainsFunc(claims, func(c StatusClaim) bool { return makes(e, c) }) {
			continue
		}
		claims = append(claims, StatusClaim{Entry: e.Name, Module: e.ModuleName, Boot: e.BootID, From: now})
	}
	return claims
}

// judgeStatusAfterLoad is the status-after-load assertion: no status
// claim (an entry with a bootId) leads the kernel. A claim that module M is loaded in boot B,
// first seen at t, is early when the kernel loaded M in B only later
// than t + StatusClaimSlack (both by the observer's first sighting of the
// load and by the kernel's own stamp of it), or never while, at t +
// StatusClaimSlack, it still showed B and the claim still stood. A
// stale claim (the node rebooted since, the module was unloaded since)
// is the consistency assertion's and the reload assertion's business.
// end is when the case was judged, for claims that still stand.
func judgeStatusAfterLoad(r Record, end time.Time) AssertionResult {
	var bad []string
	claims := 0
	for _, n := range sortedKeys(r.Nodes) {
		nr := r.Nodes[n]
		for _, c := range nr.Claims {
			claims++
			if why := earlyClaim(nr, c, end); why != "" {
				bad = append(bad, fmt.Sprintf("node %s: %s", n, why))
			}
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		return AssertionResult{Name: AssertStatusAfterLoad, Message: strings.Join(bad, "; ") + ": a status claimed a load before the kernel made it"}
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
	what := fmt.Sprintf("status entry %s claimed %s loaded in boot %s", c.Entry, c.Module, short(c.Boot))
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
