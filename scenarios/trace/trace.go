package trace

import (
	"fmt"
	"time"
)

// Event is one observation, its time relative to the case's start.
type Event struct {
	TMS    int64  `json:"t_ms"`
	Kind   Kind   `json:"kind"`
	Node   string `json:"node,omitempty"`
	Ready  string `json:"ready,omitempty"`
	BootID string `json:"boot_id,omitempty"`
	Module string `json:"module,omitempty"`
	Pod    string `json:"pod,omitempty"`
	// Action is the timeline action a KindAction event belongs to
	// (empty for the engine's own steps: NMCs created, a subject
	// started, a judging note).
	Action ActionKind `json:"action,omitempty"`
	// Phase is where the event is in its action or pod: a node
	// disruption's PhaseStart and PhaseDone; a worker pod's
	// PhaseCreated, PhaseDeleted or its pod phase (Pending, Running,
	// Succeeded, Failed).
	Phase Phase `json:"phase,omitempty"`
	// DowntimeMS is a disruption's downtime (reboot, kubelet restart) or
	// length (network blip, pause), at its PhaseStart.
	DowntimeMS int64 `json:"downtime_ms,omitempty"`
	// WorkerAction is a worker pod's action (contract.ActionLoad,
	// contract.ActionUnload), on KindPod and KindLoad events.
	WorkerAction string `json:"worker_action,omitempty"`
	// Modules are the modules loaded on the node, on KindTruth events
	// (none: nothing loaded).
	Modules []string `json:"modules,omitempty"`
	Detail  string   `json:"detail,omitempty"`
}

// Disruption reports whether e starts a node disruption (a reboot, a
// kubelet restart, a network blip, a node pause): the start of a window
// a report shades for the grace period.
func (e Event) Disruption() bool { return e.Kind == KindAction && e.Phase == PhaseStart }

// Kind is what a trace event observed.
type Kind string

// Trace kinds.
const (
	KindAction    Kind = "action"
	KindReady     Kind = "ready"
	KindBoot      Kind = "boot"
	KindHeartbeat Kind = "heartbeat"
	KindTruth     Kind = "truth"
	KindPod       Kind = "pod"
	KindLoad      Kind = "load"
	KindStatus    Kind = "status"
	// KindCluster is a cluster fault: a component down, then back.
	KindCluster Kind = "cluster"
	// KindWatch is a watch of the observer that failed and relisted.
	KindWatch Kind = "watch"
	// KindLeader is a holder change of the subject's leader Lease.
	KindLeader Kind = "leader"
)

// Phase is where an event is in its action or pod.
type Phase string

// Trace phases; a worker pod's events also carry its pod phase
// (corev1.PodPhase: Pending, Running, Succeeded, Failed).
const (
	PhaseStart   Phase = "start"
	PhaseDone    Phase = "done"
	PhaseCreated Phase = "created"
	PhaseDeleted Phase = "deleted"
	PhaseFailed  Phase = "Failed"
)

// ActionKind names a step of a scenario's timeline: the key of a one-key
// mapping under a scenario's actions (package scenarios defines them and
// their behaviour).
type ActionKind string

// DisruptionEvent is the event of a node disruption's start (PhaseStart,
// with its downtime or length) or end (PhaseDone), as the engine records
// it (its time aside).
func DisruptionEvent(node string, kind ActionKind, phase Phase, downtime time.Duration) Event {
	e := Event{Kind: KindAction, Node: node, Action: kind, Phase: phase, Detail: string(kind) + " " + string(phase)}
	if phase == PhaseStart {
		e.DowntimeMS = downtime.Milliseconds()
		e.Detail = fmt.Sprintf("%s (downtime %s)", kind, downtime)
	}
	return e
}
