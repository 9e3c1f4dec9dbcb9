package fakes

import (
	"fmt"
	"slices"

	"github.com/bootproof/bootproof/contract"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The KMM worker-pod contract's keys (upstream Kernel Module Management's,
// not package kmm's) are in package contract.

// ModuleConfig is the part of upstream KMM's ModuleConfig the worker uses.
// Unknown fields are ignored, as the upstream worker ignores what it does
// not need.
type ModuleConfig struct {
	KernelVersion  string         `json:"kernelVersion"`
	ContainerImage string         `json:"containerImage,omitempty"`
	Modprobe       ModprobeConfig `json:"modprobe"`
}

// ModprobeConfig names the module and its loading order.
type ModprobeConfig struct {
	ModuleName string `json:"moduleName"`
	// ModulesLoadingOrder, when set, starts with ModuleName and lists the
	// modules it needs after it: they are loaded last to first and
	// unloaded first to last.
	ModulesLoadingOrder []string `json:"modulesLoadingOrder,omitempty"`
}

// ParseModuleConfig decodes the worker-config annotation.
func ParseModuleConfig(s string) (*ModuleConfig, error) {
	var c ModuleConfig
	if err := yaml.Unmarshal([]byte(s), &c); err != nil {
		return nil, fmt.Errorf("parse %s: %w", contract.WorkerConfigAnnotation, err)
	}
	if c.Modprobe.ModuleName == "" {
		return nil, fmt.Errorf("parse %s: modprobe.moduleName is empty", contract.WorkerConfigAnnotation)
	}
	if o := c.Modprobe.ModulesLoadingOrder; len(o) > 0 && o[0] != c.Modprobe.ModuleName {
		return nil, fmt.Errorf("parse %s: modprobe.modulesLoadingOrder must start with moduleName %s, got %v", contract.WorkerConfigAnnotation, c.Modprobe.ModuleName, o)
	}
	return &c, nil
}

// Steps returns the modules in the order the action touches them.
func (c *ModuleConfig) Steps(action string) []string {
	order := c.Modprobe.ModulesLoadingOrder
	if len(order) == 0 {
		order = []string{c.Modprobe.ModuleName}
	}
	out := slices.Clone(order)
	if action == contract.ActionLoad {
		slices.Reverse(out)
	}
	return out
}

// isWorkerPod reports whether pod follows the worker contract and which
// action it asks for.
func isWorkerPod(pod *corev1.Pod) (action string, ok bool) {
	a, ok := pod.Labels[contract.WorkerActionLabel]
	return a, ok
}
