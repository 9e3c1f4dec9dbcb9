package fakes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
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
