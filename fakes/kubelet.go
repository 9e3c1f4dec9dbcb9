package fakes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/bootproof/bootproof/nodeapi"
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
	// Nodes reads the Node the status loop compares its status with, as
	// the kubelet's node lister does (kubelet 1.31 and later read it from
	// their Node informer every status interval, not from the API). Nil:
	// a GET from the API server's watch cache each status interval.
	Nodes NodeReader
	// Labels are added to the Node at registration, after
	// contract.SimulatedLabel; contract.RunLabel, when among them, also
	// goes on the Lease.
	Labels map[string]string
	// Taints are set on the Node at registration, after SimulatedTaints
	// (which every node carries).
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
		c.Timing = TimingProfiles[nodeapi.TimingKubeletDefaults]
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
//
// Like kwok's node simulator it is made of parts that each own their
// state under their own lock: the node status (status), the Lease
// (lease) and the pods (pods). The Kubelet itself owns only the
// lifecycle of the kubelet process: which lifetime runs, how many boots
// there were, and which reboot or restart is the newest. No lock is
// held while another part's lock is taken.
type Kubelet struct {
	*host
	status *nodeStatus
	lease  *leaseKeeper
	pods   *podRunner

	// life serializes starting and stopping the kubelet process, so a
	// reboot that arrives while the process is starting waits for it.
	life sync.Mutex

	// mu guards the lifecycle state below.
	mu sync.Mutex
	// gen counts reboots and restarts; the one that started last owns
	// the next start (an older one that ends its downtime later does
	// not start a second process).
	gen   uint64
	run   *lifetime       // the current kubelet process; nil while down
	base  context.Context // Start's context: every lifetime derives from it
	boots int             // kubelet process starts

	registered chan struct{}
	regOnce    sync.Once
}

// host is what every part of the kubelet shares: its configuration, its
// link to the API server and its logger. cfg and link never change after
// New; log is set once by Start, before any part runs.
type host struct {
	cfg  Config
	link *link
	log  logr.Logger
	// acts counts the worker actions run in the current boot, for the
	// ground truth.
	acts actionCounts
}

// Stats count what the kubelet did, for tests and benchmarks. Each part
// counts under its own lock, so a Stats is not one atomic snapshot.
type Stats struct {
	LeaseRenewals int
	LateRenewals  []time.Duration // lateness of each renewal vs its schedule
	StatusPosts   int
	Boots         int
	WorkerActions int
}

// New returns a kubelet; Start runs it.
func New(cfg Config) (*Kubelet, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	h := &host{cfg: cfg, link: newLink(), log: logr.Discard()}
	k := &Kubelet{host: h, status: &nodeStatus{host: h}, lease: &leaseKeeper{host: h},
		registered: make(chan struct{})}
	k.pods = newPodRunner(h, k.PublishGroundTruth)
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
	var s Stats
	s.LeaseRenewals, s.LateRenewals = k.lease.counts()
	s.StatusPosts = k.status.postCount()
	s.WorkerActions = k.pods.actionCount()
	k.mu.Lock()
	s.Boots = k.boots
	k.mu.Unlock()
	return s
}

// Start runs the kubelet until ctx ends: it registers the Node (or takes
// over one a bootproof kubelet created; any other existing Node is a
// *ForeignNodeError), heartbeats, runs the node's pods and publishes
// kernel ground truth. It returns nil when ctx ends.
func (k *Kubelet) Start(ctx context.Context) error {
	stop, err := k.start(ctx)
	if err != nil {
		return err
	}
	<-ctx.Done()
	stop()
	return nil
}

// start is Start without the wait: it returns once the kubelet runs, with
// the function that stops it. A fleet starts its kubelets this way, so a
// node costs no goroutine waiting for the end.
func (k *Kubelet) start(ctx context.Context) (stop func(), err error) {
	k.log = logr.FromContextOrDiscard(ctx).WithValues("node", k.cfg.NodeName)
	k.mu.Lock()
	k.base = ctx
	k.mu.Unlock()
	pods := k.cfg.Pods
	var own *InformerPodSource
	if pods == nil {
		// Its own informer starts with the registration, as a kubelet's
		// does: the first heartbeat of a boot does not wait for the pod
		// list. Subscribed before it runs, the kubelet gets every pod as
		// an event.
		if own, err = NewInformerPodSource(k.cfg.Client, k.cfg.NodeName); err != nil {
			return nil, err
		}
		pods = own
	}
	unsubscribe := pods.Subscribe(k.cfg.NodeName, k.pods.onPod)
	stopOwn := func() {}
	if own != nil {
		sctx, cancel := context.WithCancel(ctx)
		stopOwn = func() { cancel(); own.Shutdown() }
		own.Run(sctx)
	}
	k.life.Lock()
	err = k.startLifetime(ctx, Startup{})
	k.life.Unlock()
	if err != nil {
		stopOwn()
		unsubscribe()
		return nil, err
	}
	return func() {
		k.life.Lock()
		k.stopLifetime()
		k.life.Unlock()
		stopOwn()
		unsubscribe()
	}, nil
}
