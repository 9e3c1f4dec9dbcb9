package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"

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
// same way.

// nmcModule is one spec.modules[] entry (upstream's NodeModuleSpec).
type nmcModule struct {
	Name               string              `json:"name"`
	Namespace          string              `json:"namespace"`
	ServiceAccountName string              `json:"serviceAccountName"`
	Tolerations        []corev1.Toleration `json:"tolerations,omitempty"`
	Config             nmcConfig           `json:"config"`
}

// nmcConfig is upstream's ModuleConfig.
type nmcConfig struct {
	KernelVersion   string            `json:"kernelVersion"`
	ContainerImage  string            `json:"containerImage"`
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy"`
	InsecurePull    bool              `json:"insecurePull"`
	Modprobe        nmcModprobe       `json:"modprobe"`
}

// nmcModprobe is upstream's ModprobeSpec, the part the engine sets.
type nmcModprobe struct {
	ModuleName          string   `json:"moduleName"`
	ModulesLoadingOrder []string `json:"modulesLoadingOrder,omitempty"`
}

// WorkerServiceAccount runs the worker pods of the modules the engine
// writes: the case namespace's default ServiceAccount, named explicitly
// because upstream's schema requires the field.
const WorkerServiceAccount = "default"

// NMCSpecModules returns the spec.modules list for mods on a node
// running kernelVersion, with worker pods in namespace.
func NMCSpecModules(namespace, kernelVersion string, mods []Module) ([]any, error) {
	out := make([]any, 0, len(mods))
	for _, m := range mods {
		e := nmcModule{
			Name: m.Name, Namespace: namespace, ServiceAccountName: WorkerServiceAccount,
			// Simulated nodes are tainted NoSchedule and NoExecute; the
			// worker pods must still run there.
			Tolerations: SimulatedTolerations(),
			Config: nmcConfig{
				KernelVersion:   kernelVersion,
				ContainerImage:  "example.invalid/bootproof/" + m.Name + ":" + kernelVersion,
				ImagePullPolicy: corev1.PullIfNotPresent,
				InsecurePull:    false,
				Modprobe:        nmcModprobe{ModuleName: m.ModuleName, ModulesLoadingOrder: slices.Clone(m.LoadingOrder)},
			},
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&e)
		if err != nil {
			return nil, fmt.Errorf("module %s: %w", m.Name, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// NewNMC returns the NodeModulesConfig of node (its name is the node's)
// with spec.modules set and the labels given.
func NewNMC(node string, labels map[string]string, modules []any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": NMCResource.Group + "/" + NMCResource.Version, "kind": "NodeModulesConfig",
		"spec": map[string]any{"modules": modules},
	}}
	u.SetName(node)
	u.SetLabels(labels)
	return u
}

// ApplySpecAction returns the spec modules after a remove-module or
// add-module action (mods itself for any other action).
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
	}
	return mods
}

// writeNMC creates or updates node's NodeModulesConfig spec from c.spec.
func (c *caseRun) writeNMC(ctx context.Context, node string, create bool) error {
	c.mu.Lock()
	mods, err := NMCSpecModules(c.ns, c.kernel[node], c.spec[node])
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("NodeModulesConfig %s: %w", node, err)
	}
	res := c.dyn.Resource(NMCResource)
	if create {
		if _, err := res.Create(ctx, NewNMC(node, c.labels(), mods), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create NodeModulesConfig %s: %w", node, err)
		}
		return nil
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := res.Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedSlice(u.Object, mods, "spec", "modules"); err != nil {
			return err
		}
		_, err = res.Update(ctx, u, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("update NodeModulesConfig %s: %w", node, err)
	}
	return nil
}
