package fakes

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// maxBackoff caps the restart backoff of a failing container, as the
// kubelet's CrashLoopBackOff does (5m at kubelet-defaults timing).
const backoffSteps = 5

// podLoop starts a worker for every pod of this node that needs one and
// finishes the deletion of pods being deleted.
func (k *Kubelet) podLoop(lt *lifetime) {
	for {
		select {
		case <-lt.ctx.Done():
			return
		case <-lt.sync:
		}
		k.mu.Lock()
		for uid, pod := range k.pods {
			switch {
			case k.deleting[uid]:
			case pod.DeletionTimestamp != nil:
				if cancel, ok := k.workers[uid]; ok {
					cancel()
					delete(k.workers, uid)
				}
				k.deleting[uid] = true
				lt.wg.Add(1)
				go func() { defer lt.wg.Done(); k.finishDeletion(lt.ctx, pod) }()
			case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
			case k.workers[uid] != nil:
			default:
				ctx, cancel := context.WithCancel(lt.ctx)
				k.workers[uid] = cancel
				lt.wg.Add(1)
				go func() { defer lt.wg.Done(); k.runPod(ctx, pod) }()
			}
		}
		k.mu.Unlock()
	}
}

// finishDeletion stops the pod's containers (already done) and removes
// the pod object with grace period 0, as the kubelet does once a pod being
// deleted has stopped. Finalizers, if any, keep the object until their
// owners remove them.
func (k *Kubelet) finishDeletion(ctx context.Context, pod *corev1.Pod) {
	if err := k.waitOnline(ctx); err != nil {
		return
	}
	err := k.cfg.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
		k.log.Error(err, "delete pod", "pod", pod.Namespace+"/"+pod.Name)
		k.mu.Lock()
		delete(k.deleting, pod.UID) // try again on the next sync
		k.mu.Unlock()
	}
}

func (k *Kubelet) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-k.cfg.Clock.After(d):
		return true
	}
}

func (k *Kubelet) container(uid types.UID) *container {
	k.mu.Lock()
	defer k.mu.Unlock()
	if c := k.containers[uid]; c != nil {
		cp := *c
		return &cp
	}
	return nil
}

func (k *Kubelet) setContainer(uid types.UID, c *container) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.containers[uid] = c
}

// runPod runs one pod in the current kubelet lifetime. Worker pods apply
// their action to the kernel and terminate; other pods run until deleted.
// Containers die with a reboot and restart by the pod's restartPolicy.
func (k *Kubelet) runPod(ctx context.Context, pod *corev1.Pod) {
	log := k.log.WithValues("pod", pod.Namespace+"/"+pod.Name)
	action, isWorker := isWorkerPod(pod)
	policy := pod.Spec.RestartPolicy
	if policy == "" {
		policy = corev1.RestartPolicyAlways
	}
	post := func(c *container) bool {
		if err := k.postPodStatus(ctx, pod, c, isWorker); err != nil {
			if ctx.Err() == nil {
				log.Error(err, "post pod status")
			}
			return false
		}
		return true
	}
	for ctx.Err() == nil {
		boot := k.cfg.Kernel.BootID()
		c := k.container(pod.UID)
		switch {
		case c == nil:
			if !k.sleep(ctx, k.cfg.Timing.PodStartLatency) {
				return
			}
			c = &container{bootID: boot, started: k.cfg.Clock.Now()}
			k.setContainer(pod.UID, c)
			post(c)

		case !c.done && c.bootID != boot:
			// The container died with the reboot.
			died := &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Unknown",
				Message:   fmt.Sprintf("container was running in boot %s when the node rebooted", c.bootID),
				StartedAt: metav1.NewTime(c.started), FinishedAt: metav1.NewTime(k.cfg.Clock.Now())}
			if policy == corev1.RestartPolicyNever {
				c.done, c.exitCode, c.reason, c.message, c.finished = true, died.ExitCode, died.Reason, died.Message, died.FinishedAt.Time
				k.setContainer(pod.UID, c)
				continue
			}
			if !k.sleep(ctx, k.cfg.Timing.PodStartLatency) {
				return
			}
			c = &container{bootID: boot, restarts: c.restarts + 1, started: k.cfg.Clock.Now(), last: died}
			k.setContainer(pod.UID, c)
			post(c)

		case !c.done:
			if !isWorker {
				<-ctx.Done() // runs until deleted or the node goes down
				return
			}
			if !k.sleep(ctx, c.started.Add(k.cfg.Timing.ActionLatency).Sub(k.cfg.Clock.Now())) {
				return
			}
			msg, err := k.doAction(pod, action)
			c.done, c.finished = true, k.cfg.Clock.Now()
			if err != nil {
				c.exitCode, c.reason, c.message = 1, "Error", err.Error()
				log.V(1).Info("worker action failed", "action", action, "bootID", c.bootID, "error", err.Error())
			} else {
				c.exitCode, c.reason, c.message = 0, "Completed", msg.String()
				log.V(1).Info("worker action done", "action", action, "bootID", msg.BootID, "modules", msg.Modules)
			}
			k.setContainer(pod.UID, c)
			k.mu.Lock()
			k.stats.WorkerActions++
			k.mu.Unlock()
			k.PublishGroundTruth()

		case c.exitCode == 0 || policy == corev1.RestartPolicyNever:
			// Terminal, even if it finished in an earlier boot: the
			// runtime keeps exited containers across reboots.
			post(c)
			return

		default:
			// Failed with OnFailure/Always: CrashLoopBackOff.
			post(&container{bootID: c.bootID, restarts: c.restarts, started: c.started, last: terminatedState(c), reason: "CrashLoopBackOff"})
			backoff := min(10*k.cfg.Timing.PodStartLatency<<min(c.restarts, backoffSteps), 30*k.cfg.Timing.StatusInterval)
			if !k.sleep(ctx, backoff) {
				return
			}
			c = &container{bootID: boot, restarts: c.restarts + 1, started: k.cfg.Clock.Now(), last: terminatedState(c)}
			k.setContainer(pod.UID, c)
			post(c)
		}
	}
}

func terminatedState(c *container) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{ExitCode: c.exitCode, Reason: c.reason, Message: c.message,
		StartedAt: metav1.NewTime(c.started), FinishedAt: metav1.NewTime(c.finished)}
}

// doAction applies a worker pod's action to the kernel.
func (k *Kubelet) doAction(pod *corev1.Pod, action string) (*TerminationMessage, error) {
	if action != ActionLoad && action != ActionUnload {
		return nil, fmt.Errorf("unknown worker action %q in label %s: accepted: %s, %s", action, WorkerActionLabel, ActionLoad, ActionUnload)
	}
	cfg, err := ParseModuleConfig(pod.Annotations[WorkerConfigAnnotation])
	if err != nil {
		return nil, err
	}
	running := k.cfg.Kernel.Version()
	if cfg.KernelVersion != "" && cfg.KernelVersion != running {
		return nil, fmt.Errorf("kernel version mismatch: the worker is for kernel %s, node %s runs %s", cfg.KernelVersion, k.cfg.NodeName, running)
	}
	boot := k.cfg.Kernel.BootID()
	steps := cfg.Steps(action)
	for _, m := range steps {
		if action == ActionLoad {
			err = k.cfg.Kernel.Load(m)
		} else {
			err = k.cfg.Kernel.Unload(m)
		}
		if err != nil {
			return nil, fmt.Errorf("modprobe %s: %w", map[string]string{ActionLoad: "", ActionUnload: "-r "}[action]+m, err)
		}
	}
	return &TerminationMessage{BootID: boot, Action: action, Modules: steps, KernelVersion: running}, nil
}

// postPodStatus writes the pod's status from its container state.
func (k *Kubelet) postPodStatus(ctx context.Context, pod *corev1.Pod, c *container, isWorker bool) error {
	if err := k.waitOnline(ctx); err != nil {
		return err
	}
	now := metav1.NewTime(k.cfg.Clock.Now())
	var state corev1.ContainerState
	phase := corev1.PodRunning
	ready := corev1.ConditionTrue
	var podMessage string
	switch {
	case c.reason == "CrashLoopBackOff":
		state.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off restarting failed container " + WorkerContainerName}
		ready = corev1.ConditionFalse
	case c.done:
		state.Terminated = terminatedState(c)
		ready = corev1.ConditionFalse
		phase = corev1.PodSucceeded
		if c.exitCode != 0 {
			phase = corev1.PodFailed
			podMessage = c.message
		}
	default:
		state.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(c.started)}
	}
	var statuses []corev1.ContainerStatus
	for _, ctr := range pod.Spec.Containers {
		st := corev1.ContainerStatus{
			Name: ctr.Name, Image: ctr.Image, ImageID: "bootproof-sim://" + ctr.Image,
			ContainerID: fmt.Sprintf("bootproof://%s-%s-%d", pod.UID, ctr.Name, c.restarts),
			State:       state, Ready: ready == corev1.ConditionTrue, RestartCount: c.restarts,
			Started: ptr.To(state.Running != nil),
		}
		if c.last != nil {
			st.LastTerminationState = corev1.ContainerState{Terminated: c.last}
		}
		statuses = append(statuses, st)
	}
	status := map[string]any{
		"phase":             phase,
		"hostIP":            k.cfg.Address,
		"startTime":         metav1.NewTime(c.started),
		"containerStatuses": statuses,
		"conditions": []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: ready, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: ready, LastTransitionTime: now},
		},
	}
	if podMessage != "" {
		status["reason"] = "WorkerFailed"
		status["message"] = podMessage
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	_, err = k.cfg.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
