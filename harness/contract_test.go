package harness_test

import (
	"testing"

	"github.com/bootproof/bootproof/contract"
	v1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
	"github.com/bootproof/bootproof/kmm/worker"
)

// TestContractConstants pins the names the subject (kmm, which stands
// alone as an operator and imports nothing of the harness) defines on
// its own to the ones package contract gives the simulated kubelet and
// the engine's observer: the KMM worker-pod contract and the
// NodeModulesConfig resource.
func TestContractConstants(t *testing.T) {
	tests := []struct {
		name  string
		sides map[string]string
	}{
		{"worker action label", map[string]string{
			"kmm/worker.ActionLabel": worker.ActionLabel, "contract.WorkerActionLabel": contract.WorkerActionLabel}},
		{"worker config annotation", map[string]string{
			"kmm/worker.ConfigAnnotation": worker.ConfigAnnotation, "contract.WorkerConfigAnnotation": contract.WorkerConfigAnnotation}},
		{"start delay annotation", map[string]string{
			"kmm/worker.StartDelayAnnotation": worker.StartDelayAnnotation, "contract.StartDelayAnnotation": contract.StartDelayAnnotation}},
		{"worker container", map[string]string{
			"kmm/worker.ContainerName": worker.ContainerName, "contract.WorkerContainerName": contract.WorkerContainerName}},
		{"load action", map[string]string{
			"kmm/worker.ActionLoad": string(worker.ActionLoad), "contract.ActionLoad": contract.ActionLoad}},
		{"unload action", map[string]string{
			"kmm/worker.ActionUnload": string(worker.ActionUnload), "contract.ActionUnload": contract.ActionUnload}},
		{"NodeModulesConfig group", map[string]string{
			"kmm/api/v1beta1.GroupVersion.Group": v1beta1.GroupVersion.Group, "contract.NMCResource.Group": contract.NMCResource.Group}},
		{"NodeModulesConfig version", map[string]string{
			"kmm/api/v1beta1.GroupVersion.Version": v1beta1.GroupVersion.Version, "contract.NMCResource.Version": contract.NMCResource.Version}},
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
