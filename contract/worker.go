package contract

import "k8s.io/apimachinery/pkg/runtime/schema"

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
