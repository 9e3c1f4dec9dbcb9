package harness_test

import (
	"testing"

	"github.com/bootproof/bootproof/fakes"
	v1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
	"github.com/bootproof/bootproof/kmm/worker"
	"github.com/bootproof/bootproof/scenarios"
)

// TestContractConstants pins the names two sides of a contract must
// agree on but define separately, because the dependency rules keep them
// apart (kmm, the subject, knows nothing of the harness; the scenario
// engine knows no backend): the KMM worker-pod contract as the bundled
// reconciler writes it, the simulated kubelet runs it and the observer
// reads it; the NodeModulesConfig resource; the simulated-node taint.
func TestContractConstants(t *testing.T) {
	tests := []struct {
		name  string
		sides map[string]string
	}{
		{"worker action label", map[string]string{
			"kmm/worker.ActionLabel": worker.ActionLabel, "fakes.WorkerActionLabel": fakes.WorkerActionLabel,
			"scenarios.WorkerActionLabel": scenarios.WorkerActionLabel}},
		{"worker config annotation", map[string]string{
			"kmm/worker.ConfigAnnotation": worker.ConfigAnnotation, "fakes.WorkerConfigAnnotation": fakes.WorkerConfigAnnotation,
			"scenarios.WorkerConfigAnnotation": scenarios.WorkerConfigAnnotation}},
		{"worker container", map[string]string{
			"kmm/worker.ContainerName": worker.ContainerName, "fakes.WorkerContainerName": fakes.WorkerContainerName}},
		{"load action", map[string]string{
			"kmm/worker.ActionLoad": string(worker.ActionLoad), "fakes.ActionLoad": fakes.ActionLoad}},
		{"unload action", map[string]string{
			"kmm/worker.ActionUnload": string(worker.ActionUnload), "fakes.ActionUnload": fakes.ActionUnload}},
		{"NodeModulesConfig group", map[string]string{
			"kmm/api/v1beta1.GroupVersion.Group": v1beta1.GroupVersion.Group, "scenarios.NMCResource.Group": scenarios.NMCResource.Group}},
		{"NodeModulesConfig version", map[string]string{
			"kmm/api/v1beta1.GroupVersion.Version": v1beta1.GroupVersion.Version, "scenarios.NMCResource.Version": scenarios.NMCResource.Version}},
		{"simulated taint", map[string]string{
			"scenarios.SimulatedTaintKey": scenarios.SimulatedTaintKey, "fakes.SimulatedTaints()[0].Key": fakes.SimulatedTaints()[0].Key, "fakes.SimulatedTaints()[1].Key": fakes.SimulatedTaints()[1].Key}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var first, firstName string
			for name, v := range tt.sides {
				if v == "" {
					t.Errorf("%s is empty", name)
				}
				if first == "" {
					first, firstName = v, name
					continue
				}
				if v != first {
					t.Errorf("%s = %q but %s = %q: both sides of the contract must agree", name, v, firstName, first)
				}
			}
		})
	}
}
