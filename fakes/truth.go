package fakes

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// GroundTruthAnnotation is the annotation on the node's own Lease (in
// kube-node-lease) where the lightweight kubelet publishes its kernel's
// ground truth. The Lease is the one object a node may write besides its
// Node and its pods, so publishing needs no permission beyond the
// system:node:<name> identity, and no KMM operator reads Leases. Every
// publication is also a renewal (the kubelet is up when it publishes):
// kube-controller-manager 1.37 treats a Lease write without a newer
// renewTime as a sign of a stale cache and stops judging the node.
const GroundTruthAnnotation = "bootproof.dev/kernel"

// GroundTruth is the kernel's state as the node last published it.
type GroundTruth struct {
	Node          string         `json:"node"`
	BootID        string         `json:"bootID"`
	KernelVersion string         `json:"kernelVersion"`
	Modules       []LoadedModule `json:"modules"`
	// Actions counts, per module, the loads and unloads worker actions
	// made in this boot (every modprobe the kubelet ran, a load of a
	// module already loaded included), sorted by module: what the kernel
	// was asked to do, whichever operator or pod asked it.
	Actions []ModuleActions `json:"actions,omitempty"`
	// PublishedAt is when the kubelet read the kernel for this report.
	PublishedAt time.Time `json:"publishedAt"`
}

// Has reports whether module is loaded.
func (g *GroundTruth) Has(module string) (LoadedModule, bool) {
	for _, m := range g.Modules {
		if m.Name == module {
			return m, true
		}
	}
	return LoadedModule{}, false
}

// ReadGroundTruth returns the ground truth published on a node's Lease,
// or nil when none is there yet.
func ReadGroundTruth(lease *coordinationv1.Lease) (*GroundTruth, error) {
	s, ok := lease.Annotations[GroundTruthAnnotation]
	if !ok {
		return nil, nil
	}
	var g GroundTruth
	if err := json.Unmarshal([]byte(s), &g); err != nil {
		return nil, fmt.Errorf("lease %s/%s: annotation %s: %w", lease.Namespace, lease.Name, GroundTruthAnnotation, err)
	}
	return &g, nil
}

// ModuleActions counts the worker actions on one module in one boot.
type ModuleActions struct {
	Module  string `json:"module"`
	Loads   int    `json:"loads"`
	Unloads int    `json:"unloads,omitempty"`
}

func snapshot(node string, k Kernel, acts *actionCounts, now time.Time) GroundTruth {
	mods := k.Loaded()
	if mods == nil {
		mods = []LoadedModule{}
	}
	boot := k.BootID()
	return GroundTruth{Node: node, BootID: boot, KernelVersion: k.Version(), Modules: mods, Actions: acts.in(boot), PublishedAt: now}
}

// actionCounts counts worker actions per module in one boot: a count
// of another boot is dropped when the first action of a new boot is
// counted. It is safe for concurrent use.
type actionCounts struct {
	mu     sync.Mutex
	boot   string
	counts map[string]*ModuleActions
}

// add counts one load (or unload) of module in boot.
func (a *actionCounts) add(boot, module string, load bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.boot != boot || a.counts == nil {
		a.boot, a.counts = boot, map[string]*ModuleActions{}
	}
	c := a.counts[module]
	if c == nil {
		c = &ModuleActions{Module: module}
		a.counts[module] = c
	}
	if load {
		c.Loads++
	} else {
		c.Unloads++
	}
}

// in returns the counts of boot, sorted by module (nil: none).
func (a *actionCounts) in(boot string) []ModuleActions {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.boot != boot || len(a.counts) == 0 {
		return nil
	}
	out := make([]ModuleActions, 0, len(a.counts))
	for _, c := range a.counts {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(x, y ModuleActions) int { return strings.Compare(x.Module, y.Module) })
	return out
}
