package backend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/fakes"
	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/internal/runs"
	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/scenarios"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Fake is the simulated-node backend: every case gets a fleet of
// lightweight kubelets over simulated kernels in this process. On a
// cluster that issues credentials each node acts as system:node:<name>
// and the fleet's pod informer as fakes.FleetUser with only
// fakes.FleetRBAC's rule; otherwise everything acts with the cluster's
// identity.
type Fake struct {
	Cluster scenarios.Cluster
	// Taints go on every simulated node besides contract.SimulatedTaints,
	// which every node carries on every cluster.
	Taints []corev1.Taint

	rbacOnce sync.Once
	rbacErr  error
}

// Name implements nodeapi.NodeBackend.
func (f *Fake) Name() string { return "fake" }

// ReadGroundTruth implements observe.GroundTruthReader (scenarios.Backend): the simulated
// kubelet publishes its kernel's state on its Lease.
func (f *Fake) ReadGroundTruth(l *coordinationv1.Lease) (*contract.GroundTruth, error) {
	return contract.ReadGroundTruth(l)
}

func (f *Fake) fleetClient(ctx context.Context) (kubernetes.Interface, error) {
	iss := cluster.IssuerOf(f.Cluster)
	if iss == nil {
		return kubernetes.NewForConfig(fakes.KubeletRESTConfig(f.Cluster.RESTConfig()))
	}
	f.rbacOnce.Do(func() {
		admin, err := kubernetes.NewForConfig(f.Cluster.RESTConfig())
		if err != nil {
			f.rbacErr = err
			return
		}
		role, binding := fakes.FleetRBAC(fakes.FleetUser)
		// Runs share them (fixed names): they go when no run is alive.
		role.Labels, binding.Labels = runs.SharedLabels(), runs.SharedLabels()
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			f.rbacErr = fmt.Errorf("fleet RBAC: %w", err)
			return
		}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			f.rbacErr = fmt.Errorf("fleet RBAC: %w", err)
		}
	})
	if f.rbacErr != nil {
		return nil, f.rbacErr
	}
	rc, err := iss.UserRESTConfig(fakes.FleetUser)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(fakes.KubeletRESTConfig(rc))
}

// Provision implements nodeapi.NodeBackend.
func (f *Fake) Provision(ctx context.Context, req nodeapi.ProvisionRequest) (nodeapi.NodeSet, error) {
	timing, err := fakes.TimingProfile(req.Timing)
	if err != nil {
		return nil, err
	}
	if req.PodLatency > 0 {
		timing.PodStartLatency, timing.ActionLatency = req.PodLatency, req.PodLatency
	}
	client, err := f.fleetClient(ctx)
	if err != nil {
		return nil, err
	}
	var nodeClient func(string) (kubernetes.Interface, error)
	if iss := cluster.IssuerOf(f.Cluster); iss != nil {
		nodeClient = func(name string) (kubernetes.Interface, error) {
			rc, err := iss.NodeRESTConfig(name)
			if err != nil {
				return nil, err
			}
			return kubernetes.NewForConfig(fakes.KubeletRESTConfig(rc))
		}
	} else {
		rc := fakes.KubeletRESTConfig(f.Cluster.RESTConfig())
		if rc.QPS < float32(10*len(req.Names)) {
			rc.QPS, rc.Burst = float32(10*len(req.Names)), 20*len(req.Names)
		}
		shared, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, err
		}
		nodeClient = func(string) (kubernetes.Interface, error) { return shared, nil }
	}
	fleet, err := fakes.NewFleet(fakes.FleetConfig{Names: req.Names, Timing: timing, Client: client, NodeClient: nodeClient, Labels: req.Labels, Taints: f.Taints})
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ns := &fakeNodes{fleet: fleet, cancel: cancel, done: make(chan error, 1)}
	go func() { ns.done <- fleet.Start(runCtx) }()
	wait, stop := context.WithTimeout(ctx, 2*time.Minute)
	defer stop()
	if err := fleet.WaitRegistered(wait); err != nil {
		_ = ns.Close()
		return nil, err
	}
	return ns, nil
}

type fakeNodes struct {
	fleet  *fakes.Fleet
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

func (n *fakeNodes) kubelet(node string) (*fakes.Kubelet, error) {
	k := n.fleet.Kubelet(node)
	if k == nil {
		return nil, fmt.Errorf("no simulated node %s", node)
	}
	return k, nil
}

// Reboot implements nodeapi.NodeSet.
func (n *fakeNodes) Reboot(ctx context.Context, node string, r nodeapi.RebootRequest) (nodeapi.RebootOutcome, error) {
	if err := nodeapi.CheckModeIn(FakeRebootModes, r.Mode); err != nil {
		return nodeapi.RebootOutcome{}, fmt.Errorf("simulated node %s: %w", node, err)
	}
	k, err := n.kubelet(node)
	if err != nil {
		return nodeapi.RebootOutcome{}, err
	}
	out := nodeapi.RebootOutcome{OldBootID: k.Kernel().BootID()}
	err = k.Reboot(ctx, fakes.RebootSpec{Downtime: r.Downtime, AfterRenewal: true,
		Startup: fakes.Startup{NotReadyFor: r.NotReadyFor}, KernelVersion: r.KernelVersion})
	out.NewBootID = k.Kernel().BootID()
	return out, err
}

// FakeRebootModes are the reboot modes a simulated node accepts, listed
// one by one: a mode added to nodeapi is refused here (and cases that ask
// for it skipped) until someone decides what a simulated node does for
// it. A simulated node has no firmware, panic path or power supply: each
// of these modes is the same simulated reboot (heartbeats stop, the
// kernel forgets its modules, a new boot ID after the downtime), so
// scenarios written for VM modes run on simulated nodes too.
var FakeRebootModes = []nodeapi.RebootMode{nodeapi.RebootReset, nodeapi.RebootGuest, nodeapi.RebootPanic, nodeapi.RebootPowerCycle}

// RebootModes implements nodeapi.RebootModes.
func (n *fakeNodes) RebootModes() []nodeapi.RebootMode { return slices.Clone(FakeRebootModes) }

// PauseNode implements nodeapi.NodePauser: the node's heartbeats and
// status updates stop for d; its kernel and boot stay as they were.
func (n *fakeNodes) PauseNode(ctx context.Context, node string, d time.Duration) error {
	return n.NetworkBlip(ctx, node, d)
}

// RestartKubelet implements nodeapi.KubeletRestarter.
func (n *fakeNodes) RestartKubelet(ctx context.Context, node string, downtime time.Duration) error {
	k, err := n.kubelet(node)
	if err != nil {
		return err
	}
	return k.RestartKubelet(ctx, downtime)
}

// NetworkBlip implements nodeapi.NetworkBlipper.
func (n *fakeNodes) NetworkBlip(ctx context.Context, node string, d time.Duration) error {
	k, err := n.kubelet(node)
	if err != nil {
		return err
	}
	k.Pause()
	defer k.Resume()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// RejectPods implements nodeapi.PodRejecter.
func (n *fakeNodes) RejectPods(_ context.Context, node string, count int) error {
	k, err := n.kubelet(node)
	if err != nil {
		return err
	}
	k.RejectWorkerPods(count)
	return nil
}

// Close implements nodeapi.NodeSet.
func (n *fakeNodes) Close() error {
	n.once.Do(func() {
		n.cancel()
		if err := <-n.done; err != nil && !errors.Is(err, context.Canceled) {
			n.err = err
		}
	})
	return n.err
}

var (
	_ nodeapi.NodeSet          = (*fakeNodes)(nil)
	_ nodeapi.KubeletRestarter = (*fakeNodes)(nil)
	_ nodeapi.NetworkBlipper   = (*fakeNodes)(nil)
	_ nodeapi.RebootModes      = (*fakeNodes)(nil)
	_ nodeapi.NodePauser       = (*fakeNodes)(nil)
	_ nodeapi.PodRejecter      = (*fakeNodes)(nil)
)
