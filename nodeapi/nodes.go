package nodeapi

import (
	"context"
	"time"
)

// NodeBackend provides nodes.
type NodeBackend interface {
	// Name is the backend's name: fake, libvirt.
	Name() string
	// Provision starts the nodes; they run until the NodeSet is closed.
	Provision(ctx context.Context, req ProvisionRequest) (NodeSet, error)
}

// ProvisionRequest says which nodes a case needs.
type ProvisionRequest struct {
	Names  []string
	Labels map[string]string
	// Timing is the kubelet timing profile.
	Timing TimingProfile
	// PodLatency, when positive, is the worker's Pending->Running and
	// Running->done latency.
	PodLatency time.Duration
}

// RebootRequest describes one reboot of one node.
type RebootRequest struct {
	Mode          RebootMode
	Downtime      time.Duration
	NotReadyFor   time.Duration
	KernelVersion string
}

// RebootOutcome is what a reboot did.
type RebootOutcome struct {
	OldBootID string
	NewBootID string
	// Downtime, when set, is how long the node was down as the backend
	// measured it (a VM's natural boot included); the engine reports it in
	// place of the requested downtime.
	Downtime time.Duration
}

// NodeSet is a case's running nodes.
type NodeSet interface {
	// Reboot reboots a node and returns once it is back (its kubelet
	// started in the new boot).
	Reboot(ctx context.Context, node string, r RebootRequest) (RebootOutcome, error)
	// Close stops every node and frees what they hold.
	Close() error
}

// RebootModes is the optional capability of a NodeSet that supports more
// than the "reset" reboot mode.
type RebootModes interface {
	RebootModes() []RebootMode
}

// RebootChecker is the optional capability of a NodeSet to refuse, before
// the timeline runs, a reboot it cannot do (a VM cannot boot another
// kernel version); the case is then skipped with the error as reason.
type RebootChecker interface {
	CheckReboot(r RebootRequest) error
}

// KubeletRestarter is the optional capability to restart a node's kubelet
// without a reboot.
type KubeletRestarter interface {
	RestartKubelet(ctx context.Context, node string, downtime time.Duration) error
}

// NetworkBlipper is the optional capability to cut a node off the API for
// a while without a reboot.
type NetworkBlipper interface {
	NetworkBlip(ctx context.Context, node string, d time.Duration) error
}

// PodRejecter is the optional capability to make a node's kubelet reject
// at admission the next n worker pods it is given to run: each one Failed
// at once (reason UnexpectedAdmissionError) before any container starts,
// as a kubelet fails a pod it cannot admit right after a restart, before
// its device plugins registered again. A worker pod that already ran is
// not rejected.
type PodRejecter interface {
	RejectPods(ctx context.Context, node string, n int) error
}

// NodePauser is the optional capability to freeze a whole node for a
// while without rebooting it (a paused VM; a simulated node whose
// heartbeats stop): a negative control, its boot ID must not change.
type NodePauser interface {
	PauseNode(ctx context.Context, node string, d time.Duration) error
}
