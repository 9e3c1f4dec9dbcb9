package harness_test

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// TestWorkerTerminationMessageRoundTrip pins kmm's own copy of the worker's
// termination message (kmm/worker.Result) to the contract's: what the
// lightweight kubelet writes, the operator reads field for field, and what
// the operator's copy encodes, the contract decodes.
func TestWorkerTerminationMessageRoundTrip(t *testing.T) {
	sent := contract.WorkerTerminationMessage{BootID: "boot-1", Action: contract.ActionLoad, Modules: []string{"b", "a"}, KernelVersion: "6.1.0-bootproof"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{contract.WorkerActionLabel: contract.ActionLoad}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: contract.WorkerContainerName,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: sent.String()}}}}}}
	got, ok := worker.ParseResult(pod)
	if !ok {
		t.Fatalf("kmm/worker.ParseResult refused the contract's message %s", sent)
	}
	if got.BootID != sent.BootID || string(got.Action) != sent.Action || !slices.Equal(got.Modules, sent.Modules) || got.KernelVersion != sent.KernelVersion {
		t.Errorf("kmm read %+v from %s", got, sent)
	}
	if term := contract.WorkerTerminated(pod); term == nil || term.Message != sent.String() {
		t.Errorf("contract.WorkerTerminated: %v", term)
	}
	data, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	back, err := contract.ParseWorkerTerminationMessage(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, sent) {
		t.Errorf("kmm's encoding %s decodes to %+v, want %+v", data, back, sent)
	}
	// The same JSON fields on both sides.
	fields := func(v any) []string {
		var m map[string]any
		b, _ := json.Marshal(v)
		_ = json.Unmarshal(b, &m)
		return slices.Sorted(maps.Keys(m))
	}
	if a, b := fields(sent), fields(got); !slices.Equal(a, b) {
		t.Errorf("JSON fields: contract %v, kmm %v", a, b)
	}
}
