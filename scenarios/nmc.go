package scenarios

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/bootproof/bootproof/contract"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
)

// The NodeModulesConfig objects the engine writes are valid under
// upstream KMM's kmm.sigs.x-k8s.io/v1beta1 schema, which requires
// name, namespace, serviceAccountName and config in every
// spec.modules[] entry, and containerImage, insecurePull, kernelVersion
// and modprobe in every config: each of them is written explicitly. The
// types below are the engine's own, written from that schema; the
// engine does not depend on package kmm, so it judges any operator the
// same way. They are built by NMCBuilder and converted to unstructured
// only at the API call.

// NodeModulesConfig is the part of upstream's object the engine writes.
type NodeModulesConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              NMCSpec `json:"spec"`
}

// NMCSpec is upstream's NodeModulesConfigSpec.
type NMCSpec struct {
	Modules []NMCModule `json:"modules"`
}

// NMCModule is one spec.modules[] entry (upstream's NodeModuleSpec).
type NMCModule struct {
	Name               string              `json:"name"`
	Namespace          string              `json:"namespace"`
	ServiceAccountName string              `json:"serviceAccountName"`
	Tolerations        []corev1.Toleration `json:"tolerations,omitempty"`
	Config             NMCModuleConfig     `json:"config"`
}

// NMCModuleConfig is upstream's ModuleConfig.
type NMCModuleConfig struct {
	KernelVersion   string            `json:"kernelVersion"`
	ContainerImage  string            `json:"containerImage"`
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy"`
	InsecurePull    bool              `json:"insecurePull"`
	Modprobe        NMCModprobe       `json:"modprobe"`
}

// NMCModprobe is upstream's ModprobeSpec, the part the engine sets.
type NMCModprobe struct {
	ModuleName          string   `json:"moduleName"`
	ModulesLoadingOrder []string `json:"modulesLoadingOrder,omitempty"`
}

// WorkerServiceAccount runs the worker pods of the modules the engine
// writes: the case namespace's default ServiceAccount, named explicitly
// because upstream's schema requires the field.
const WorkerServiceAccount = "default"

// NMCBuilder builds the NodeModulesConfigs of one case.
type NMCBuilder struct {
	// Namespace runs the worker pods (the case's namespace).
	Namespace string
	// KernelVersion is the node's kernel, for every entry's config.
	KernelVersion string
	// Labels go on the object: the case's selector and the run's label.
	Labels map[string]string
}

// Entries returns the spec.modules entries for mods.
func (b NMCBuilder) Entries(mods []Module) []NMCModule {
	out := make([]NMCModule, 0, len(mods))
	for _, m := range mods {
		out = append(out, NMCModule{
			Name: m.Name, Namespace: b.Namespace, ServiceAccountName: WorkerServiceAccount,
			// Simulated nodes are tainted NoSchedule and NoExecute; the
			// worker pods must still run there.
			Tolerations: contract.SimulatedTolerations(),
			Config: NMCModuleConfig{
				KernelVersion:   b.KernelVersion,
				ContainerImage:  m.ContainerImage(b.KernelVersion),
				ImagePullPolicy: corev1.PullIfNotPresent,
				InsecurePull:    false,
				Modprobe:        NMCModprobe{ModuleName: m.ModuleName, ModulesLoadingOrder: slices.Clone(m.LoadingOrder)},
			},
		})
	}
	return out
}

// Build returns node's NodeModulesConfig (named after the node) with the
// entries for mods.
func (b NMCBuilder) Build(node string, mods []Module) *NodeModulesConfig {
	return &NodeModulesConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: contract.NMCResource.GroupVersion().String(), Kind: "NodeModulesConfig"},
		ObjectMeta: metav1.ObjectMeta{Name: node, Labels: maps.Clone(b.Labels)},
		Spec:       NMCSpec{Modules: b.Entries(mods)},
	}
}

// Unstructured converts n for the dynamic client.
func (n *NodeModulesConfig) Unstructured() (*unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(n)
	if err != nil {
		return nil, fmt.Errorf("NodeModulesConfig %s: %w", n.Name, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

// ApplySpecAction returns the spec modules after a remove-module,
// add-module or update-module-image action (mods itself for any other
// action).
func ApplySpecAction(mods []Module, a Action) []Module {
	switch a.Kind {
	case ActRemoveModule:
		return slices.DeleteFunc(slices.Clone(mods), func(m Module) bool { return m.Name == a.Module })
	case ActAddModule:
		mn := a.ModuleName
		if mn == "" {
			mn = strings.ReplaceAll(a.Module, "-", "_")
		}
		return append(slices.Clone(mods), Module{Name: a.Module, ModuleName: mn, LoadingOrder: a.LoadingOrder})
	case ActUpdateImage:
		out := slices.Clone(mods)
		for i := range out {
			if out[i].Name == a.Module {
				out[i].imageRevision++
			}
		}
		return out
	}
	return mods
}

// writeNMC creates node's NodeModulesConfig from c.spec, or updates its
// spec.modules (keeping whatever else the subject wrote).
func (c *caseRun) writeNMC(ctx context.Context, node string, create bool) error {
	c.mu.Lock()
	b := NMCBuilder{Namespace: c.ns, KernelVersion: c.kernel[node], Labels: c.labels()}
	u, err := b.Build(node, c.spec[node]).Unstructured()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	res := c.dyn.Resource(contract.NMCResource)
	c.mu.Lock()
	if c.nmcGone[node] {
		delete(c.nmcGone, node) // deleted by delete-nmc: written anew
		create = true
	}
	c.mu.Unlock()
	if create {
		if _, err := res.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create NodeModulesConfig %s: %w", node, err)
		}
		return nil
	}
	mods, _, err := unstructured.NestedSlice(u.Object, "spec", "modules")
	if err != nil {
		return fmt.Errorf("NodeModulesConfig %s: %w", node, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := res.Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedSlice(cur.Object, mods, "spec", "modules"); err != nil {
			return err
		}
		_, err = res.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("update NodeModulesConfig %s: %w", node, err)
	}
	return nil
}
