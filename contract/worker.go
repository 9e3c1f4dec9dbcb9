package contract

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The KMM worker-pod contract, written from upstream Kernel Module
// Management's worker: the operator creates a pod with these keys, the
// kubelet (simulated or in a VM) runs its action, and the engine's
// observer reads it.
const (
	// WorkerActionLabel selects a worker pod and says what it does.
	WorkerActionLabel = "kmm.node.kubernetes.io/worker-action"
	// WorkerConfigAnnotation holds the worker's ModuleConfig YAML.
	WorkerConfigAnnotation = "kmm.node.kubernetes.io/worker-config"
	// WorkerContainerName is the container that runs the action; its
	// termination message is JSON with the boot the action ran in
	// ({"bootID": ...}).
	WorkerContainerName = "worker"

	// ActionLoad and ActionUnload are the values of WorkerActionLabel.
	ActionLoad   = "Load"
	ActionUnload = "Unload"
)

// NMCResource is the NodeModulesConfig resource, as upstream KMM and
// package kmm serve it.
var NMCResource = schema.GroupVersionResource{Group: "kmm.sigs.x-k8s.io", Version: "v1beta1", Resource: "nodemodulesconfigs"}

// NMCKind is NMCResource's kind.
const NMCKind = "NodeModulesConfig"

// StartDelayAnnotation, on a pod, asks the lightweight kubelet (simulated
// nodes and VM guests) to start the pod's containers this much later than
// its pod start latency (a Go duration, "3s"), as kwok's stage delays are
// set per pod. bootproof's slow-pod-start calibration variant sets it on
// its loader pods, to be a correct operator whose pods start slowly; a
// real kubelet ignores it.
const StartDelayAnnotation = "bootproof.io/start-delay"

// WorkerTerminationMessage is what a worker writes into the worker
// container's state.terminated.message when its action is done, as one
// line of JSON:
//
//	{"bootID":"<boot id>","action":"Load","modules":["b","a"],"kernelVersion":"<uname -r>"}
//
// BootID is the boot in which the action ran: a reconciler reads it to
// record the boot a module was really loaded in, rather than the boot the
// node is in when the reconciler gets round to it. The lightweight
// kubelet writes it, the engine's observer reads it; kmm/worker.Result is
// the operator's own copy, pinned to this one by a round-trip test.
type WorkerTerminationMessage struct {
	BootID        string   `json:"bootID"`
	Action        string   `json:"action"`
	Modules       []string `json:"modules"`
	KernelVersion string   `json:"kernelVersion"`
}

// String encodes the message.
func (m WorkerTerminationMessage) String() string {
	b, _ := json.Marshal(m)
	return string(b)
}

// ParseWorkerTerminationMessage decodes a worker's termination message.
func ParseWorkerTerminationMessage(s string) (WorkerTerminationMessage, error) {
	var m WorkerTerminationMessage
	if err := json.Unmarshal([]byte(strings.TrimSpace(s)), &m); err != nil {
		return WorkerTerminationMessage{}, fmt.Errorf("parse worker termination message: %w", err)
	}
	return m, nil
}

// WorkerTerminated is the terminated state of a worker pod's worker
// container, or nil while it has not terminated.
func WorkerTerminated(p *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == WorkerContainerName {
			return s.State.Terminated
		}
	}
	return nil
}

// NodeReady is the status of a Node's Ready condition, "" when it has
// none (a Node the kubelet has not reported on yet).
func NodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}
