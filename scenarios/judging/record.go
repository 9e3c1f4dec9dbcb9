package judging

import (
	"slices"
	"sort"
	"time"
)

// Record is an immutable copy of what the observer saw, taken once for a
// judgement. The assertions and the reboot metrics are pure functions of
// a Record and the case's Facts: they take no lock, read no informer,
// and are tested on records built by hand.
type Record struct {
	// Nodes is each case node's history.
	Nodes map[string]NodeRecord
	// Loads is every successful worker action, in the order seen.
	Loads []Load
	// Pods is every worker pod seen, in creation order.
	Pods []Pod
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

// ActionCount is how many times a module was loaded and unloaded in one
// boot.
type ActionCount struct {
	Loads, Unloads int
}

// Load is one successful worker action.
type Load struct {
	Node, ModuleName string
	// Action is "Load" or "Unload"; Boot is the boot it ran in.
	Action, Boot string
	At           time.Time
	// Modules are the modules the kernel had loaded after it.
	Modules []string
	// Image is the container image of the worker's config ("" when its
	// config names none).
	Image string
}

// Pod is what the observer saw of one worker pod.
type Pod struct {
	Name, Node, ModuleName string
	// Action is the pod's worker action, "Load" or "Unload".
	Action  string
	Created time.Time
	// RunningAt and SucceededAt are when the pod was first seen so (zero:
	// never).
	RunningAt, SucceededAt time.Time
}

// StatusEntry is one NodeModulesConfig status entry.
type StatusEntry struct {
	Name          string
	Namespace     string
	BootID        string
	KernelVersion string
	ModuleName    string
	// ContainerImage is the entry's config.containerImage.
	ContainerImage string
}

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

// UpdateClaims closes the claims of claims that status no longer makes
// and opens one for each entry of status that no open claim makes, as
// seen at now.
func UpdateClaims(claims []StatusClaim, status []StatusEntry, now time.Time) []StatusClaim {
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

// Boot is a boot ID and when it was first seen.
type Boot struct {
	ID string
	At time.Time
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
func (r NodeRecord) Boots() []Boot {
	var out []Boot
	for _, m := range []map[string]time.Time{r.BootSeen, r.TruthBootSeen} {
		for id := range m {
			if id != "" && !slices.ContainsFunc(out, func(b Boot) bool { return b.ID == id }) {
				out = append(out, Boot{ID: id, At: r.FirstSeen(id)})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// BootAt is the boot the node's Node showed at t: the boot first seen
// last at or before t ("" before any).
func (r NodeRecord) BootAt(t time.Time) string {
	boot, seen := "", time.Time{}
	for b, at := range r.BootSeen {
		if !at.After(t) && (boot == "" || at.After(seen)) {
			boot, seen = b, at
		}
	}
	return boot
}

// TruthAt is the ground truth the node's kernel showed at t (zero
// before any).
func (r NodeRecord) TruthAt(t time.Time) TruthSeen {
	var out TruthSeen
	for _, s := range r.Truths {
		if s.At.After(t) {
			break
		}
		out = s
	}
	return out
}

// bootUntil is when the Node stopped showing boot: the first sighting of
// a boot first seen after it (zero: it still shows it).
func (r NodeRecord) bootUntil(boot string) time.Time {
	from := r.BootSeen[boot]
	var until time.Time
	for b, at := range r.BootSeen {
		if b != boot && at.After(from) && (until.IsZero() || at.Before(until)) {
			until = at
		}
	}
	return until
}
