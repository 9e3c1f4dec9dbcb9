package contract

import (
	"encoding/json"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// GroundTruthAnnotation is the annotation on the node's own Lease (in
// kube-node-lease) where the lightweight kubelet (simulated, or in a VM)
// publishes its kernel's ground truth, a GroundTruth as JSON. The Lease
// is the one object a node may write besides its Node and its pods, so
// publishing needs no permission beyond the system:node:<name> identity,
// and no KMM operator reads Leases. Every publication is also a renewal
// (the kubelet is up when it publishes): kube-controller-manager 1.37
// treats a Lease write without a newer renewTime as a sign of a stale
// cache and stops judging the node.
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

// LoadedModule is a module the kernel has loaded, and since when.
type LoadedModule struct {
	Name     string    `json:"name"`
	LoadedAt time.Time `json:"loadedAt"`
}

// ModuleActions counts the worker actions on one module in one boot.
type ModuleActions struct {
	Module  string `json:"module"`
	Loads   int    `json:"loads"`
	Unloads int    `json:"unloads,omitempty"`
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
