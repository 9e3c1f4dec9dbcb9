package fakes

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bootproof/bootproof/contract"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Admission: the pods the kubelet fails before any container runs (a pod
// that is not a worker; the worker pods RejectWorkerPods asks it to
// reject).

// SimulatedNodeReason is the status.reason of a pod that is not a KMM
// worker and was bound to a node of the lightweight kubelet: it is
// Failed, never Running, because the node runs no containers.
const SimulatedNodeReason = "SimulatedNode"

// AdmissionRejectedReason is the status.reason of a worker pod the
// kubelet rejected at admission (Kubelet.RejectWorkerPods): the reason a
// real kubelet gives a pod whose admission failed unexpectedly, as after
// a restart before its device plugins registered again.
const AdmissionRejectedReason = "UnexpectedAdmissionError"

// RejectWorkerPods makes the kubelet reject at admission the next n
// worker pods it is given to run (n <= 0 rejects none from now on): each
// one is Failed at once with reason AdmissionRejectedReason, before any
// container starts, so nothing touches the kernel. A worker pod that
// already ran a container is not admitted again and is not rejected. The
// count outlives reboots and kubelet restarts: it is the kubelet's next
// admissions, whenever they come.
func (k *Kubelet) RejectWorkerPods(n int) {
	k.pods.mu.Lock()
	k.pods.rejections = max(n, 0)
	k.pods.mu.Unlock()
}

// takeRejection reports whether the next admission is to be rejected,
// and counts it.
func (r *podRunner) takeRejection() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rejections <= 0 {
		return false
	}
	r.rejections--
	return true
}

// reject fails a pod that is not a worker, as a real kubelet fails a pod
// its admission rejects: phase Failed, reason SimulatedNodeReason and a
// message that says the node is simulated. Reporting it Running would
// tell its owner something that is not so.
func (r *podRunner) reject(ctx context.Context, pod *corev1.Pod) {
	r.failPod(ctx, pod, "fail pod on a simulated node", SimulatedNodeReason,
		fmt.Sprintf("node %s is simulated by bootproof: it runs no containers, only KMM worker pods (label %s)",
			r.cfg.NodeName, contract.WorkerActionLabel))
}

// failPod sets pod's phase Failed with reason and message, as a kubelet
// does for a pod its admission rejects. A post the API server did not
// take is made again (retryWrite); a pod already gone is left alone.
func (r *podRunner) failPod(ctx context.Context, pod *corev1.Pod, what, reason, message string) {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{
		"phase": corev1.PodFailed, "reason": reason, "message": message,
	}})
	if err != nil {
		r.log.Error(err, what, "pod", pod.Namespace+"/"+pod.Name)
		return
	}
	r.retryWrite(ctx, what, pod, func() error {
		_, err := r.cfg.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}
