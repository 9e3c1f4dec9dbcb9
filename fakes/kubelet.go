package fakes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// Defaults for the node the kubelet registers.
const (
	DefaultKubeletVersion = "v1.37.2-bootproof"
	DefaultOSImage        = "bootproof simulated node"
	DefaultRuntimeVersion = "bootproof://1.0"

	// NotReadyBlipMessage is what a kubelet starting after a reboot said
	// while its runtime check had not passed yet (Kubernetes before 1.x
	// posted Ready=False for a moment).
	NotReadyBlipMessage = "container runtime status check may not have completed yet"
)

// Config configures one lightweight kubelet.
type Config struct {
	// NodeName is the Node's name; required.
	NodeName string
	// Client acts for the node; give it the node's own identity
	// (system:node:<name>) so the API enforces what a kubelet may do.
	Client kubernetes.Interface
	// Kernel is the node's kernel; required.
	Kernel Kernel
	// Timing is the clockwork; zero means the kubelet-defaults profile.
	Timing Timing
	// Pods delivers the pods bound to this node. Nil: the kubelet watches
	// them itself through Client.
	Pods PodSource
	// Labels are added to the Node at registration.
	Labels map[string]string
	// Taints are set on the Node at registration.
	Taints []corev1.Taint
	// Capacity of the node; default 4 CPUs, 8Gi, 110 pods.
	Capacity corev1.ResourceList
	// Address is the InternalIP reported; default 192.0.2.1 (TEST-NET-1).
	Address string
	// KubeletVersion and OSImage go to status.nodeInfo.
	KubeletVersion string
	OSImage        string
	// Clock drives heartbeats and latencies; default the real clock.
	Clock clock.Clock
}

func (c *Config) defaults() error {
	if c.NodeName == "" {
		return errors.New("kubelet: node name is empty")
	}
	if c.Client == nil {
		return fmt.Errorf("kubelet %s: no API client", c.NodeName)
	}
	if c.Kernel == nil {
		return fmt.Errorf("kubelet %s: no kernel", c.NodeName)
	}
	if c.Timing == (Timing{}) {
		c.Timing = TimingProfiles[TimingKubeletDefaults]
	}
	if err := c.Timing.Validate(); err != nil {
		return fmt.Errorf("kubelet %s: %w", c.NodeName, err)
	}
	if c.Capacity == nil {
		c.Capacity = corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("4"),
			corev1.ResourceMemory: resource.MustParse("8Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
	}
	if c.Address == "" {
		c.Address = "192.0.2.1"
	}
	if c.KubeletVersion == "" {
		c.KubeletVersion = DefaultKubeletVersion
	}
	if c.OSImage == "" {
		c.OSImage = DefaultOSImage
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return nil
}

// Startup is how the kubelet reports readiness when it starts.
type Startup struct {
	// NotReadyFor, when positive, posts Ready=False (KubeletNotReady,
	// NotReadyBlipMessage) for this long before Ready=True.
	NotReadyFor time.Duration
}

// RebootSpec describes one reboot.
type RebootSpec struct {
	// Downtime is from the last heartbeat to the new boot's kubelet start.
	Downtime time.Duration
	// AfterRenewal renews the Lease right before going down, so the
	// heartbeat gap is Downtime plus startup, not a random part of a
	// renew interval more.
	AfterRenewal bool
	// Startup is the kubelet's startup behaviour in the new boot.
	Startup Startup
	// KernelVersion, when set, boots a different kernel (an upgrade).
	KernelVersion string
}

// Kubelet is the lightweight kubelet of one node. See the package
// documentation for what it does and does not do.
type Kubelet struct {
	cfg Config
	log logr.Logger

	// life serializes starting and stopping the kubelet process, so a
	// reboot that arrives while the process is starting waits for it.
	life sync.Mutex
	// gen counts reboots and restarts; the one that started last owns
	// the next start (an older one that ends its downtime later does
	// not start a second process).
	gen uint64

	mu         sync.Mutex
	run        *lifetime       // the current kubelet process; nil while down
	base       context.Context // Start's context: every lifetime derives from it
	offline    chan struct{}
	online     chan struct{} // closed while online
	pods       map[types.UID]*corev1.Pod
	containers map[types.UID]*container
	workers    map[types.UID]context.CancelFunc
	deleting   map[types.UID]bool
	lease      *coordinationv1.Lease
	lastReport time.Time
	notReady   bool
	registered chan struct{}
	regOnce    sync.Once
	stats      Stats
}

// Stats count what the kubelet did, for tests and benchmarks.
type Stats struct {
	LeaseRenewals int
	LateRenewals  []time.Duration // lateness of each renewal vs its schedule
	StatusPosts   int
	Boots         int
	WorkerActions int
}

// lifetime is one run of the kubelet process (between starts and stops).
type lifetime struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	sync   chan struct{}
	truth  chan struct{}
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
	// last is the previous run's termination, for lastState.
	last *corev1.ContainerStateTerminated
}

// New returns a kubelet; Start runs it.
func New(cfg Config) (*Kubelet, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	k := &Kubelet{
		cfg: cfg, pods: map[types.UID]*corev1.Pod{}, containers: map[types.UID]*container{},
		workers: map[types.UID]context.CancelFunc{}, deleting: map[types.UID]bool{},
		online: make(chan struct{}), registered: make(chan struct{}),
	}
	close(k.online)
	return k, nil
}

// NodeName is the node's name.
func (k *Kubelet) NodeName() string { return k.cfg.NodeName }

// Kernel is the node's kernel.
func (k *Kubelet) Kernel() Kernel { return k.cfg.Kernel }

// Registered is closed once the Node has been registered and its first
// status posted.
func (k *Kubelet) Registered() <-chan struct{} { return k.registered }

// Stats returns a copy of the counters.
func (k *Kubelet) Stats() Stats {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := k.stats
	s.LateRenewals = append([]time.Duration(nil), k.stats.LateRenewals...)
	return s
}

// Start runs the kubelet until ctx ends: it registers the Node (or takes
// over an existing one), heartbeats, runs the node's pods and publishes
// kernel ground truth. It returns nil when ctx ends.
func (k *Kubelet) Start(ctx context.Context) error {
	k.log = logr.FromContextOrDiscard(ctx).WithValues("node", k.cfg.NodeName)
	k.mu.Lock()
	k.base = ctx
	k.mu.Unlock()
	pods := k.cfg.Pods
	if pods == nil {
		src, err := NewInformerPodSource(k.cfg.Client, k.cfg.NodeName)
		if err != nil {
			return err
		}
		if err := src.Start(ctx); err != nil {
			return fmt.Errorf("kubelet %s: %w", k.cfg.NodeName, err)
		}
		defer src.Shutdown()
		pods = src
	}
	unsubscribe := pods.Subscribe(k.cfg.NodeName, k.onPod)
	defer unsubscribe()
	k.life.Lock()
	err := k.startLifetime(ctx, Startup{})
	k.life.Unlock()
	if err != nil {
		return err
	}
	<-ctx.Done()
	k.life.Lock()
	k.stopLifetime()
	k.life.Unlock()
	return nil
}

// onPod records a pod event and nudges the pod sync.
func (k *Kubelet) onPod(pod *corev1.Pod, deleted bool) {
	k.mu.Lock()
	if deleted {
		delete(k.pods, pod.UID)
		if cancel, ok := k.workers[pod.UID]; ok {
			cancel()
			delete(k.workers, pod.UID)
		}
		delete(k.containers, pod.UID)
		delete(k.deleting, pod.UID)
	} else {
		k.pods[pod.UID] = pod
	}
	run := k.run
	k.mu.Unlock()
	if run != nil {
		nudge(run.sync)
	}
}

func nudge(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// startLifetime starts the kubelet process: registration, the first
// heartbeat and status, then the loops. The process runs until it is
// stopped or Start's context ends, not when caller's context ends (a
// reboot or restart requested by a short-lived request must not take
// the new process down with it); caller only bounds the start. The
// caller holds k.life.
func (k *Kubelet) startLifetime(caller context.Context, st Startup) error {
	k.mu.Lock()
	parent := k.base
	k.mu.Unlock()
	if parent == nil {
		parent = caller
	}
	ctx, cancel := context.WithCancel(parent)
	stopStart := context.AfterFunc(caller, cancel)
	defer stopStart()
	lt := &lifetime{ctx: ctx, cancel: cancel, sync: make(chan struct{}, 1), truth: make(chan struct{}, 1)}
	k.mu.Lock()
	k.notReady = st.NotReadyFor > 0
	k.stats.Boots++
	k.mu.Unlock()
	if err := k.register(ctx); err != nil {
		cancel()
		return err
	}
	if err := k.renewLease(ctx, true); err != nil {
		cancel()
		return err
	}
	k.mu.Lock()
	k.run = lt
	k.mu.Unlock()
	k.regOnce.Do(func() { close(k.registered) })
	k.log.V(1).Info("kubelet started", "bootID", k.cfg.Kernel.BootID(), "notReadyFor", st.NotReadyFor)

	lt.wg.Add(3)
	go func() { defer lt.wg.Done(); k.leaseLoop(lt) }()
	go func() { defer lt.wg.Done(); k.statusLoop(lt) }()
	go func() { defer lt.wg.Done(); k.podLoop(lt) }()
	if st.NotReadyFor > 0 {
		lt.wg.Add(1)
		go func() {
			defer lt.wg.Done()
			select {
			case <-ctx.Done():
				return
			case <-k.cfg.Clock.After(st.NotReadyFor):
			}
			k.mu.Lock()
			k.notReady = false
			k.mu.Unlock()
			if err := k.postStatus(ctx, true); err != nil && ctx.Err() == nil {
				k.log.Error(err, "post status after startup blip")
			}
		}()
	}
	nudge(lt.sync)
	return nil
}

// stopLifetime stops the kubelet process and waits for its goroutines.
// The caller holds k.life.
func (k *Kubelet) stopLifetime() {
	k.mu.Lock()
	lt := k.run
	k.run = nil
	for uid, cancel := range k.workers {
		cancel()
		delete(k.workers, uid)
	}
	k.mu.Unlock()
	if lt != nil {
		lt.cancel()
		lt.wg.Wait()
	}
}

// Reboot stops heartbeats at once (after one last renewal if asked),
// kills the containers, halts the kernel, waits Downtime, boots the kernel
// (a new boot ID) and starts the kubelet again. It returns when the
// kubelet has posted its first status in the new boot. Like a real
// machine, the node can be rebooted whatever its kubelet is doing: a
// kubelet that is starting finishes first, one that is down (a kubelet
// restart in progress) stays down until the new boot. A later reboot or
// restart supersedes this one: it then returns without booting.
func (k *Kubelet) Reboot(ctx context.Context, spec RebootSpec) error {
	rb, ok := k.cfg.Kernel.(Rebooter)
	if !ok {
		return fmt.Errorf("reboot node %s: its kernel (%T) cannot be rebooted by the kubelet", k.cfg.NodeName, k.cfg.Kernel)
	}
	if spec.Downtime < 0 {
		return fmt.Errorf("reboot node %s: negative downtime %s", k.cfg.NodeName, spec.Downtime)
	}
	k.life.Lock()
	k.mu.Lock()
	lt, started := k.run, k.base != nil
	k.gen++
	mine := k.gen
	k.mu.Unlock()
	if !started {
		k.life.Unlock()
		return fmt.Errorf("reboot node %s: the kubelet was never started", k.cfg.NodeName)
	}
	oldBoot := k.cfg.Kernel.BootID()
	if spec.AfterRenewal && lt != nil {
		// A real renewal (renewTime moves): a Lease write that does not
		// renew makes kube-controller-manager 1.37's lease circuit
		// breaker stop judging the node, and a slow reboot would then
		// never show NotReady.
		if err := k.renewLease(lt.ctx, true); err != nil {
			k.life.Unlock()
			return fmt.Errorf("reboot node %s: last renewal: %w", k.cfg.NodeName, err)
		}
	}
	k.stopLifetime()
	rb.Halt()
	k.life.Unlock()
	k.log.V(1).Info("node down for reboot", "oldBootID", oldBoot, "downtime", spec.Downtime)
	select {
	case <-ctx.Done():
		return fmt.Errorf("reboot node %s (boot %s): %w", k.cfg.NodeName, oldBoot, ctx.Err())
	case <-k.cfg.Clock.After(spec.Downtime):
	}
	k.life.Lock()
	defer k.life.Unlock()
	if k.superseded(mine) {
		k.log.V(1).Info("reboot superseded by a later one", "oldBootID", oldBoot)
		return nil
	}
	boot, err := rb.Boot(spec.KernelVersion)
	if err != nil {
		return fmt.Errorf("reboot node %s: boot: %w", k.cfg.NodeName, err)
	}
	k.log.V(1).Info("node booted", "bootID", boot, "oldBootID", oldBoot, "kernelVersion", k.cfg.Kernel.Version())
	return k.startLifetime(ctx, spec.Startup)
}

// RestartKubelet stops the kubelet process for downtime and starts it
// again in the same boot: a heartbeat gap, same boot ID, modules and
// containers kept. A reboot during the downtime supersedes the restart.
func (k *Kubelet) RestartKubelet(ctx context.Context, downtime time.Duration) error {
	k.life.Lock()
	k.mu.Lock()
	running := k.run != nil
	if running {
		k.gen++
	}
	mine := k.gen
	k.mu.Unlock()
	if !running {
		k.life.Unlock()
		return fmt.Errorf("restart kubelet on node %s: kubelet is not running", k.cfg.NodeName)
	}
	k.stopLifetime()
	k.life.Unlock()
	select {
	case <-ctx.Done():
		return fmt.Errorf("restart kubelet on node %s: %w", k.cfg.NodeName, ctx.Err())
	case <-k.cfg.Clock.After(downtime):
	}
	k.life.Lock()
	defer k.life.Unlock()
	if k.superseded(mine) {
		k.log.V(1).Info("kubelet restart superseded by a reboot")
		return nil
	}
	return k.startLifetime(ctx, Startup{})
}

// superseded reports whether a reboot or restart started after the one
// numbered gen.
func (k *Kubelet) superseded(gen uint64) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.gen != gen
}

// Pause cuts the node off the API without a reboot (a network blip):
// heartbeats and status posts stop, containers and modules stay.
func (k *Kubelet) Pause() {
	k.mu.Lock()
	defer k.mu.Unlock()
	select {
	case <-k.online:
		k.online = make(chan struct{})
	default:
	}
}

// Resume ends a Pause; the next heartbeat goes out at once.
func (k *Kubelet) Resume() {
	k.mu.Lock()
	select {
	case <-k.online:
	default:
		close(k.online)
	}
	lt := k.run
	k.mu.Unlock()
	if lt != nil {
		nudge(lt.truth)
	}
}

// waitOnline blocks while the node is paused.
func (k *Kubelet) waitOnline(ctx context.Context) error {
	k.mu.Lock()
	ch := k.online
	k.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (k *Kubelet) isOnline() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	select {
	case <-k.online:
		return true
	default:
		return false
	}
}

// ---- Node registration and status ----

func (k *Kubelet) nodeInfo() corev1.NodeSystemInfo {
	return corev1.NodeSystemInfo{
		MachineID: k.cfg.NodeName, SystemUUID: k.cfg.NodeName,
		BootID: k.cfg.Kernel.BootID(), KernelVersion: k.cfg.Kernel.Version(),
		OSImage: k.cfg.OSImage, ContainerRuntimeVersion: DefaultRuntimeVersion,
		KubeletVersion: k.cfg.KubeletVersion, OperatingSystem: "linux", Architecture: "amd64",
	}
}

// conditions returns the conditions the kubelet would post now, carrying
// over transition times from old when a status did not change.
func (k *Kubelet) conditions(old []corev1.NodeCondition, now metav1.Time) []corev1.NodeCondition {
	k.mu.Lock()
	notReady := k.notReady
	k.mu.Unlock()
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	if notReady {
		ready = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: NotReadyBlipMessage}
	}
	conds := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		ready,
	}
	for i := range conds {
		conds[i].LastHeartbeatTime = now
		conds[i].LastTransitionTime = now
		for _, o := range old {
			if o.Type == conds[i].Type && o.Status == conds[i].Status {
				conds[i].LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	return conds
}

func (k *Kubelet) newNode(now metav1.Time) *corev1.Node {
	labels := map[string]string{
		corev1.LabelHostname: k.cfg.NodeName, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
	}
	maps.Copy(labels, k.cfg.Labels)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: k.cfg.Taints},
		Status: corev1.NodeStatus{
			Capacity: k.cfg.Capacity, Allocatable: k.cfg.Capacity,
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: k.cfg.Address}, {Type: corev1.NodeHostName, Address: k.cfg.NodeName}},
			Conditions: k.conditions(nil, now),
			NodeInfo:   k.nodeInfo(),
		},
	}
}

// register creates the Node, or takes over an existing one: a changed
// boot ID there means the node rebooted, which the kubelet announces with
// a Rebooted event, as the real kubelet does.
func (k *Kubelet) register(ctx context.Context) error {
	if err := k.waitOnline(ctx); err != nil {
		return err
	}
	nodes := k.cfg.Client.CoreV1().Nodes()
	now := metav1.NewTime(k.cfg.Clock.Now())
	_, err := nodes.Create(ctx, k.newNode(now), metav1.CreateOptions{})
	switch {
	case err == nil:
		k.mu.Lock()
		k.lastReport = now.Time
		k.stats.StatusPosts++
		k.mu.Unlock()
		return nil
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("register node %s: %w", k.cfg.NodeName, err)
	}
	old, err := nodes.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("register node %s: %w", k.cfg.NodeName, err)
	}
	if prev, cur := old.Status.NodeInfo.BootID, k.cfg.Kernel.BootID(); prev != "" && prev != cur {
		k.event(ctx, old, corev1.EventTypeWarning, "Rebooted", fmt.Sprintf("Node %s has been rebooted, boot id: %s", k.cfg.NodeName, cur))
	}
	return k.patchStatus(ctx, old)
}

// postStatus computes status and posts it when it changed or when the
// report interval passed (always when force is set).
func (k *Kubelet) postStatus(ctx context.Context, force bool) error {
	if err := k.waitOnline(ctx); err != nil {
		return err
	}
	node, err := k.cfg.Client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return k.register(ctx)
	}
	if err != nil {
		return fmt.Errorf("get node %s: %w", k.cfg.NodeName, err)
	}
	k.mu.Lock()
	due := k.cfg.Clock.Since(k.lastReport) >= k.cfg.Timing.ReportInterval
	k.mu.Unlock()
	if !force && !due && !k.statusChanged(node) {
		return nil
	}
	return k.patchStatus(ctx, node)
}

func (k *Kubelet) statusChanged(node *corev1.Node) bool {
	want := k.conditions(node.Status.Conditions, metav1.Now())
	for _, w := range want {
		found := false
		for _, o := range node.Status.Conditions {
			if o.Type == w.Type {
				found = true
				if o.Status != w.Status || o.Reason != w.Reason || o.Message != w.Message {
					return true
				}
			}
		}
		if !found {
			return true
		}
	}
	info := k.nodeInfo()
	return node.Status.NodeInfo.BootID != info.BootID || node.Status.NodeInfo.KernelVersion != info.KernelVersion
}

// patchStatus posts the status with a strategic merge patch, as the
// kubelet does; an update of the whole Node would race the controller
// manager's taints, which NodeRestriction forbids a node to touch.
func (k *Kubelet) patchStatus(ctx context.Context, node *corev1.Node) error {
	now := metav1.NewTime(k.cfg.Clock.Now())
	status := map[string]any{
		"conditions": k.conditions(node.Status.Conditions, now),
		"nodeInfo":   k.nodeInfo(),
		"capacity":   k.cfg.Capacity, "allocatable": k.cfg.Capacity,
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	if _, err := k.cfg.Client.CoreV1().Nodes().PatchStatus(ctx, k.cfg.NodeName, patch); err != nil {
		return fmt.Errorf("post status of node %s: %w", k.cfg.NodeName, err)
	}
	k.mu.Lock()
	k.lastReport = now.Time
	k.stats.StatusPosts++
	k.mu.Unlock()
	return nil
}

func (k *Kubelet) statusLoop(lt *lifetime) {
	for {
		select {
		case <-lt.ctx.Done():
			return
		case <-k.cfg.Clock.After(k.cfg.Timing.StatusInterval):
		}
		if !k.isOnline() {
			continue
		}
		if err := k.postStatus(lt.ctx, false); err != nil && lt.ctx.Err() == nil {
			k.log.Error(err, "post node status")
		}
	}
}

// ---- Lease and ground truth ----

func (k *Kubelet) jittered(d time.Duration) time.Duration {
	return d + time.Duration(rand.Float64()*k.cfg.Timing.RenewJitter*float64(d))
}

func (k *Kubelet) leaseLoop(lt *lifetime) {
	next := k.cfg.Clock.Now().Add(k.jittered(k.cfg.Timing.RenewInterval))
	for {
		timer := k.cfg.Clock.NewTimer(next.Sub(k.cfg.Clock.Now()))
		select {
		case <-lt.ctx.Done():
			timer.Stop()
			return
		case <-lt.truth:
			timer.Stop()
			if !k.isOnline() {
				continue
			}
			// Publishing rides on a renewal: a real kubelet writes its
			// Lease only to renew it, and kube-controller-manager (1.37,
			// NodeControllerLeaseCircuitBreaker) takes a Lease whose
			// resourceVersion moved without a newer renewTime for a stale
			// cache and then never marks the node Unknown.
			if err := k.renewLease(lt.ctx, true); err != nil && lt.ctx.Err() == nil {
				k.log.Error(err, "publish ground truth")
			}
			next = k.cfg.Clock.Now().Add(k.jittered(k.cfg.Timing.RenewInterval))
		case <-timer.C():
			if !k.isOnline() {
				// Paused: the renewal is due the moment the node is back.
				continue
			}
			err := k.renewLease(lt.ctx, true)
			// Lateness: from the scheduled renewal to the API's answer.
			late := k.cfg.Clock.Since(next)
			if err != nil && lt.ctx.Err() == nil {
				k.log.Error(err, "renew lease")
			} else if err == nil {
				k.mu.Lock()
				k.stats.LateRenewals = append(k.stats.LateRenewals, late)
				k.mu.Unlock()
			}
			next = k.cfg.Clock.Now().Add(k.jittered(k.cfg.Timing.RenewInterval))
		}
	}
}

// renewLease writes the node's Lease with the current ground truth; with
// renew it also moves renewTime (a heartbeat).
func (k *Kubelet) renewLease(ctx context.Context, renew bool) error {
	if err := k.waitOnline(ctx); err != nil {
		return err
	}
	now := k.cfg.Clock.Now()
	truth, err := json.Marshal(snapshot(k.cfg.NodeName, k.cfg.Kernel, now))
	if err != nil {
		return err
	}
	leases := k.cfg.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	k.mu.Lock()
	cur := k.lease
	k.mu.Unlock()
	for attempt := 0; attempt < 3; attempt++ {
		if cur == nil {
			got, err := leases.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				l := &coordinationv1.Lease{
					ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Namespace: corev1.NamespaceNodeLease,
						Annotations: map[string]string{GroundTruthAnnotation: string(truth)}},
					Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(k.cfg.NodeName),
						LeaseDurationSeconds: ptr.To(int32(k.cfg.Timing.LeaseDuration / time.Second)),
						RenewTime:            &metav1.MicroTime{Time: now}},
				}
				if n, err := k.cfg.Client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{}); err == nil {
					l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}}
				}
				created, err := leases.Create(ctx, l, metav1.CreateOptions{})
				if err != nil {
					return fmt.Errorf("create lease of node %s: %w", k.cfg.NodeName, err)
				}
				k.leaseWritten(created, true)
				return nil
			case err != nil:
				return fmt.Errorf("get lease of node %s: %w", k.cfg.NodeName, err)
			}
			cur = got
		}
		l := cur.DeepCopy()
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[GroundTruthAnnotation] = string(truth)
		if renew {
			l.Spec.RenewTime = &metav1.MicroTime{Time: now}
			l.Spec.HolderIdentity = ptr.To(k.cfg.NodeName)
			l.Spec.LeaseDurationSeconds = ptr.To(int32(k.cfg.Timing.LeaseDuration / time.Second))
		}
		updated, err := leases.Update(ctx, l, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			cur = nil
			continue
		}
		if err != nil {
			return fmt.Errorf("update lease of node %s: %w", k.cfg.NodeName, err)
		}
		k.leaseWritten(updated, renew)
		return nil
	}
	return fmt.Errorf("update lease of node %s: conflicts persisted", k.cfg.NodeName)
}

func (k *Kubelet) leaseWritten(l *coordinationv1.Lease, renew bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lease = l
	if renew {
		k.stats.LeaseRenewals++
	}
}

// PublishGroundTruth asks the kubelet to publish the kernel's state now.
func (k *Kubelet) PublishGroundTruth() {
	k.mu.Lock()
	lt := k.run
	k.mu.Unlock()
	if lt != nil {
		nudge(lt.truth)
	}
}

// event records a core/v1 Event about the node, as the kubelet does.
func (k *Kubelet) event(ctx context.Context, node *corev1.Node, typ, reason, msg string) {
	now := metav1.NewTime(k.cfg.Clock.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: k.cfg.NodeName + ".", Namespace: metav1.NamespaceDefault},
		// The kubelet refers to its node with UID = node name.
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: node.Name, UID: types.UID(node.Name)},
		Reason:         reason, Message: msg, Type: typ,
		Source:         corev1.EventSource{Component: "kubelet", Host: k.cfg.NodeName},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "kubelet", ReportingInstance: k.cfg.NodeName,
	}
	if _, err := k.cfg.Client.CoreV1().Events(metav1.NamespaceDefault).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		k.log.Error(err, "record event", "reason", reason)
	}
}
