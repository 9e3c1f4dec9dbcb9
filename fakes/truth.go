package fakes

import (
	"encoding/json"
	"fmt"
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

func snapshot(node string, k Kernel, now time.Time) GroundTruth {
	mods := k.Loaded()
	if mods == nil {
		mods = []LoadedModule{}
	}
	return GroundTruth{Node: node, BootID: k.BootID(), KernelVersion: k.Version(), Modules: mods, PublishedAt: now}
}
