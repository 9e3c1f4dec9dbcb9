package fakes

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/bootproof/bootproof/contract"
	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// backoffSteps caps the restart backoff of a failing container, as the
// kubelet's CrashLoopBackOff does (5m at kubelet-defaults timing).
const backoffSteps = 5

// podRunner is the part of the kubelet that runs the pods bound to its
// node. Its lock guards the pods it knows, what ran of their containers,
// the workers running them, the deletions in flight and the count of
// worker actions.
type podRunner struct {
	*host
	// publish asks for a ground-truth publication (after a worker action).
	publish func()

	mu sync.Mutex
	// run and runWG are the kubelet lifetime the pod sync starts workers
	// in; nil while the kubelet is down (a start syncs anyway). The sync
	// runs in the caller of kick, so a node costs no goroutine for it.
	run        context.Context
	runWG      *sync.WaitGroup
	pods       map[types.UID]*corev1.Pod
	containers map[types.UID]*container
	workers    map[types.UID]context.CancelFunc
	deleting   map[types.UID]bool
	actions    int
	// rejections is how many more worker pods admission rejects
	// (Kubelet.RejectWorkerPods).
	rejections int
}

// container is what ran of a pod's container in which boot.
type container struct {
	bootID   string
	restarts int32
	started  time.Time
	finished time.Time
	exitCode int32
	reason   string
	message  string
	done     bool
	// running is when the kubelet published the container as Running:
	// a worker's action ends Timing.ActionLatency after it, so that the
	// API shows Running for that long before the action's effect
	// (zero: not published; the action counts from started).
	running time.Time
	// last is the previous run's termination, for lastState.
	last *corev1.ContainerStateTerminated
}

func newPodRunner(h *host, publish func()) *podRunner {
	return &podRunner{host: h, publish: publish,
		pods: map[types.UID]*corev1.Pod{}, containers: map[types.UID]*container{},
		workers: map[types.UID]context.CancelFunc{}, deleting: map[types.UID]bool{}}
}

// onPod records a pod event and nudges the pod sync.
func (r *podRunner) onPod(pod *corev1.Pod, deleted bool) {
	r.mu.Lock()
	if deleted {
		delete(r.pods, pod.UID)
		if cancel, ok := r.workers[pod.UID]; ok {
			cancel()
			delete(r.workers, pod.UID)
		}
		delete(r.containers, pod.UID)
		delete(r.deleting, pod.UID)
	} else {
		r.pods[pod.UID] = pod
	}
	r.mu.Unlock()
	r.kick()
}

// kick syncs the pods with the running kubelet lifetime, if any.
func (r *podRunner) kick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.run != nil {
		r.syncLocked(r.run, r.runWG)
	}
}

// attach makes the pod sync start workers in the lifetime ctx, wg, and
// syncs.
func (r *podRunner) attach(ctx context.Context, wg *sync.WaitGroup) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.run, r.runWG = ctx, wg
	r.syncLocked(ctx, wg)
}

// detach ends the pod sync in the current lifetime; it comes before the
// lifetime waits for its goroutines, so none joins it after that.
func (r *podRunner) detach() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.run, r.runWG = nil, nil
}

// forgetWorkers drops the workers and deletions in flight of a stopped
// kubelet lifetime, so the next one starts its own (a deletion the stop
// interrupted is made again).
func (r *podRunner) forgetWorkers() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid, cancel := range r.workers {
		cancel()
		delete(r.workers, uid)
	}
	clear(r.deleting)
}

func (r *podRunner) actionCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.actions
}

// syncLocked starts a worker for every pod of this node that needs one
// and finishes the deletion of pods being deleted; the goroutines it
// starts join wg. The caller holds r.mu.
func (r *podRunner) syncLocked(ctx context.Context, wg *sync.WaitGroup) {
	if ctx.Err() != nil {
		return
	}
	for uid, pod := range r.pods {
		switch {
		case r.deleting[uid]:
		case pod.DeletionTimestamp != nil:
			if cancel, ok := r.workers[uid]; ok {
				cancel()
				delete(r.workers, uid)
			}
			r.deleting[uid] = true
			wg.Add(1)
			go func() { defer wg.Done(); r.finishDeletion(ctx, pod) }()
		case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		case r.workers[uid] != nil:
		default:
			wctx, cancel := context.WithCancel(ctx)
			r.workers[uid] = cancel
			wg.Add(1)
			go func() { defer wg.Done(); r.runPod(wctx, pod) }()
		}
	}
}

// finishDeletion stops the pod's containers (already done) and removes
// the pod object with grace period 0, as the kubelet does once a pod being
// deleted has stopped. Finalizers, if any, keep the object until their
// owners remove them. A delete the API server did not take is made again
// (retryWrite).
func (r *podRunner) finishDeletion(ctx context.Context, pod *corev1.Pod) {
	r.retryWrite(ctx, "delete pod", pod, func() error {
		err := r.cfg.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil // gone, or another pod of the name
		}
		return err
	})
}

// retryWrite makes write until it succeeds or ctx (the kubelet's
// lifetime, or the pod's worker) ends, waiting for the link to the API
// server before each try and a status interval after a failed one, as the
// kubelet's status manager syncs again what the API server did not take.
// Relying on the next pod event instead would lose the write when none
// comes: a pod would stay Running, or being deleted, for good.
func (r *podRunner) retryWrite(ctx context.Context, what string, pod *corev1.Pod, write func() error) {
	for {
		if err := r.link.wait(ctx); err != nil {
			return
		}
		err := write()
		if err == nil || ctx.Err() != nil {
			return
		}
		r.log.Error(err, what, "pod", pod.Namespace+"/"+pod.Name, "retryIn", r.cfg.Timing.StatusInterval)
		if !r.sleep(ctx, r.cfg.Timing.StatusInterval) {
			return
		}
	}
}

// sleep waits d on the injected clock; false when ctx ended first.
func (r *podRunner) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-r.cfg.Clock.After(d):
		return true
	}
}

func (r *podRunner) container(uid types.UID) *container {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.containers[uid]; c != nil {
		cp := *c
		return &cp
	}
	return nil
}

func (r *podRunner) setContainer(uid types.UID, c *container) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.containers[uid] = c
}

// podRun is one pod running in one kubelet lifetime.
type podRun struct {
	r        *podRunner
	ctx      context.Context
	pod      *corev1.Pod
	log      logr.Logger
	action   string
	isWorker bool
	policy   corev1.RestartPolicy
}

// runPod runs one pod in the current kubelet lifetime. Worker pods apply
// their action to the kernel and terminate; any other pod is rejected
// (reject). Containers die with a reboot and restart by the pod's
// restartPolicy.
func (r *podRunner) runPod(ctx context.Context, pod *corev1.Pod) {
	p := &podRun{r: r, ctx: ctx, pod: pod, log: r.log.WithValues("pod", pod.Namespace+"/"+pod.Name),
		policy: pod.Spec.RestartPolicy}
	p.action, p.isWorker = isWorkerPod(pod)
	if !p.isWorker {
		r.reject(ctx, pod)
		return
	}
	if r.container(pod.UID) == nil && r.takeRejection() {
		p.log.Info("worker pod rejected at admission", "reason", AdmissionRejectedReason)
		r.failPod(ctx, pod, "reject a worker pod at admission", AdmissionRejectedReason,
			fmt.Sprintf("bootproof reject-pods: the kubelet of node %s rejected this pod at admission, as a kubelet does when a resource it needs is not there yet (a device plugin not registered again after a restart)", r.cfg.NodeName))
		return
	}
	if p.policy == "" {
		p.policy = corev1.RestartPolicyAlways
	}
	for ctx.Err() == nil {
		boot := r.cfg.Kernel.BootID()
		c := r.container(pod.UID)
		var more bool
		switch {
		case c == nil:
			more = p.start(&container{bootID: boot})
		case !c.done && c.bootID != boot:
			more = p.died(c, boot)
		case !c.done:
			more = p.finish(c)
		case c.exitCode == 0 || p.policy == corev1.RestartPolicyNever:
			// Terminal, even if it finished in an earlier boot: the
			// runtime keeps exited containers across reboots. The
			// terminal status is posted until the API server takes it
			// (retryWrite): dropped, it would leave the pod Running for
			// good (a write cut off by a paused VM, a timed-out request).
			p.r.retryWrite(p.ctx, "post pod status", p.pod, func() error {
				return p.r.postPodStatus(p.ctx, p.pod, c, p.isWorker)
			})
			more = false
		default:
			more = p.backOff(c, boot)
		}
		if !more {
			return
		}
	}
}

// post writes the pod's status for c; false when that failed.
func (p *podRun) post(c *container) bool {
	if err := p.r.postPodStatus(p.ctx, p.pod, c, p.isWorker); err != nil {
		if p.ctx.Err() == nil {
			p.log.Error(err, "post pod status")
		}
		return false
	}
	return true
}

// start starts the container c after the pod start latency, and the
// pod's contract.StartDelayAnnotation on top of it; false when the
// lifetime ended first.
func (p *podRun) start(c *container) bool {
	if !p.r.sleep(p.ctx, p.r.cfg.Timing.PodStartLatency+startDelay(p.pod)) {
		return false
	}
	c.started = p.r.cfg.Clock.Now()
	p.r.setContainer(p.pod.UID, c)
	p.postRunning(c)
	return true
}

// postRunning publishes c as running, then records when it did. Under a
// loaded API server the write can take longer than a worker's action:
// counting the action from the container's start alone could finish it
// before anyone can see it Running, and a scenario that reboots a node
// "while the loader pod is running" would reboot after the load.
func (p *podRun) postRunning(c *container) {
	if !p.post(c) {
		return
	}
	published := *c
	published.running = p.r.cfg.Clock.Now()
	p.r.setContainer(p.pod.UID, &published)
}

// died handles a container that was running when the node rebooted: it
// ends with the pod (restartPolicy Never) or starts again in boot.
func (p *podRun) died(c *container, boot string) bool {
	died := &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Unknown",
		Message:   fmt.Sprintf("container was running in boot %s when the node rebooted", c.bootID),
		StartedAt: metav1.NewTime(c.started), FinishedAt: metav1.NewTime(p.r.cfg.Clock.Now())}
	if p.policy == corev1.RestartPolicyNever {
		c.done, c.exitCode, c.reason, c.message, c.finished = true, died.ExitCode, died.Reason, died.Message, died.FinishedAt.Time
		p.r.setContainer(p.pod.UID, c)
		return true
	}
	return p.start(&container{bootID: boot, restarts: c.restarts + 1, last: died})
}

// finish runs a started worker container to its end: it applies its
// action after the action latency.
func (p *podRun) finish(c *container) bool {
	from := c.started
	if !c.running.IsZero() {
		from = c.running
	}
	if !p.r.sleep(p.ctx, from.Add(p.r.cfg.Timing.ActionLatency).Sub(p.r.cfg.Clock.Now())) {
		return false
	}
	msg, err := p.r.doAction(p.pod, p.action)
	c.done, c.finished = true, p.r.cfg.Clock.Now()
	if err != nil {
		c.exitCode, c.reason, c.message = 1, "Error", err.Error()
		p.log.V(1).Info("worker action failed", "action", p.action, "bootID", c.bootID, "error", err.Error())
	} else {
		c.exitCode, c.reason, c.message = 0, "Completed", msg.String()
		p.log.V(1).Info("worker action done", "action", p.action, "bootID", msg.BootID, "modules", msg.Modules)
	}
	p.r.setContainer(p.pod.UID, c)
	p.r.mu.Lock()
	p.r.actions++
	p.r.mu.Unlock()
	p.r.publish()
	return true
}

// backOff restarts a failed container (restartPolicy OnFailure or
// Always) after a CrashLoopBackOff.
func (p *podRun) backOff(c *container, boot string) bool {
	p.post(&container{bootID: c.bootID, restarts: c.restarts, started: c.started, last: terminatedState(c), reason: "CrashLoopBackOff"})
	t := p.r.cfg.Timing
	backoff := min(10*t.PodStartLatency<<min(c.restarts, backoffSteps), 30*t.StatusInterval)
	if !p.r.sleep(p.ctx, backoff) {
		return false
	}
	next := &container{bootID: boot, restarts: c.restarts + 1, started: p.r.cfg.Clock.Now(), last: terminatedState(c)}
	p.r.setContainer(p.pod.UID, next)
	p.postRunning(next)
	return true
}

func terminatedState(c *container) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{ExitCode: c.exitCode, Reason: c.reason, Message: c.message,
		StartedAt: metav1.NewTime(c.started), FinishedAt: metav1.NewTime(c.finished)}
}

// doAction applies a worker pod's action to the kernel.
func (r *podRunner) doAction(pod *corev1.Pod, action string) (*contract.WorkerTerminationMessage, error) {
	if action != contract.ActionLoad && action != contract.ActionUnload {
		return nil, fmt.Errorf("unknown worker action %q in label %s: accepted: %s, %s", action, contract.WorkerActionLabel, contract.ActionLoad, contract.ActionUnload)
	}
	cfg, err := ParseModuleConfig(pod.Annotations[contract.WorkerConfigAnnotation])
	if err != nil {
		return nil, err
	}
	running := r.cfg.Kernel.Version()
	if cfg.KernelVersion != "" && cfg.KernelVersion != running {
		return nil, fmt.Errorf("kernel version mismatch: the worker is for kernel %s, node %s runs %s", cfg.KernelVersion, r.cfg.NodeName, running)
	}
	boot := r.cfg.Kernel.BootID()
	steps := cfg.Steps(action)
	for _, m := range steps {
		if action == contract.ActionLoad {
			err = r.cfg.Kernel.Load(m)
		} else {
			err = r.cfg.Kernel.Unload(m)
		}
		if err != nil {
			return nil, fmt.Errorf("modprobe %s: %w", map[string]string{contract.ActionLoad: "", contract.ActionUnload: "-r "}[action]+m, err)
		}
		r.acts.add(boot, m, action == contract.ActionLoad)
	}
	return &contract.WorkerTerminationMessage{BootID: boot, Action: action, Modules: steps, KernelVersion: running}, nil
}

// postPodStatus writes the pod's status from its container state.
func (r *podRunner) postPodStatus(ctx context.Context, pod *corev1.Pod, c *container, isWorker bool) error {
	if err := r.link.wait(ctx); err != nil {
		return err
	}
	now := metav1.NewTime(r.cfg.Clock.Now())
	var state corev1.ContainerState
	phase := corev1.PodRunning
	ready := corev1.ConditionTrue
	var podMessage string
	switch {
	case c.reason == "CrashLoopBackOff":
		state.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off restarting failed container " + contract.WorkerContainerName}
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
		"hostIP":            r.cfg.Address,
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
	_, err = r.cfg.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// startDelay is the pod's contract.StartDelayAnnotation: a Go duration
// from 0 to maxStartDelay; anything else is no delay (the pod is not the
// kubelet's to reject).
func startDelay(pod *corev1.Pod) time.Duration {
	d, err := time.ParseDuration(pod.Annotations[contract.StartDelayAnnotation])
	if err != nil || d < 0 || d > maxStartDelay {
		return 0
	}
	return d
}

// maxStartDelay bounds contract.StartDelayAnnotation.
const maxStartDelay = 5 * time.Minute
