package judging

import (
	"strings"
	"time"

	"github.com/bootproof/bootproof/nodeapi"
)

// Facts is the case's own side of a judgement: what the scenario claims
// and what the engine did. The engine copies it under its lock; nothing
// here changes while it is judged.
type Facts struct {
	// Claim is the scenario's precondition; Labels its labels.
	Claim  Precondition
	Labels []string
	// Declared are the scenario's modules.
	Declared []Module
	// Names are the case's nodes.
	Names []string
	// Start is the case's start: times in messages count from it.
	Start time.Time
	// BaseAt is when every node was Ready and publishing: the
	// precondition window opens.
	BaseAt time.Time
	// Now is the end of the judged window.
	Now   time.Time
	Grace time.Duration
	// Disrupted is every disruption the timeline made, in order.
	Disrupted []Disruption
	// Spec is the NodeModulesConfig spec the engine wrote, per node.
	Spec map[string][]Module
	// BaseBoot is each node's boot at BaseAt.
	BaseBoot map[string]string
	// SubjectAt is when the subject started; FirstLoad is the case's
	// measured first load (0: not measured).
	SubjectAt time.Time
	FirstLoad time.Duration
	// Waits is every wait of the case so far, in order.
	Waits []Wait
}

// Module is a kernel module of a NodeModulesConfig spec as judged: its
// entry name and modprobe's name.
type Module struct {
	Name, ModuleName string
	// KernelVersion and ContainerImage are the config the engine wrote
	// for it into a node's spec ("" in the scenario's declared modules).
	KernelVersion, ContainerImage string
}

// Disruption is a reboot, kubelet restart, network blip or pause of one
// node.
type Disruption struct {
	// Kind is the timeline action ("reboot", "restart-kubelet", ...);
	// Reboot says it is a reboot, whose outcome has a new boot.
	Kind   string
	Reboot bool
	Node   string
	// Start and End are when it was launched and when it was over (zero:
	// not yet).
	Start, End time.Time
	Downtime   time.Duration
	Outcome    nodeapi.RebootOutcome
	// Completed: it ended without an error.
	Completed bool
}

// WaitKind says what a wait waits for.
type WaitKind int

// Wait kinds.
const (
	// WaitReload: every module of each node's spec loaded in its current
	// boot.
	WaitReload WaitKind = iota
	// WaitWorker: a worker pod reaching a state.
	WaitWorker
)

// WorkerMatch is the worker pod a WaitWorker wait looks for: its action
// ("Load", "Unload"; "" any), module ("" any) and the state it reaches
// ("created", "running", "succeeded").
type WorkerMatch struct {
	Action, Module, State string
}

// Wait is one wait of a case: what it waited for and the window the
// subject had. The engine's poll only decides when to stop waiting;
// whether the wait held is judged afterwards, by JudgeWait, from the
// case's Facts and the Record like every other assertion.
type Wait struct {
	Kind WaitKind
	// What names it: "actions[2] wait-reloaded (line 14)", "the final
	// check".
	What  string
	Nodes []string
	// Spec is each node's modules (WaitReload).
	Spec map[string][]Module
	// Worker is which pod, in which state (WaitWorker).
	Worker  WorkerMatch
	Start   time.Time
	Timeout time.Duration
	// Why says how Timeout was chosen: "the scenario's deadline", "its
	// timeout".
	Why string
	// SLO (WaitReload) is the service level of the wait's reloads: one
	// that comes later than SLO after the window opened (Start, or the
	// new boot showing if later) is late (reload-slo); SLOWhy says how
	// it was chosen.
	SLO    time.Duration
	SLOWhy string
	// End is when the poll stopped (zero while it runs).
	End time.Time
	// Last is each node's observed state when the wait stopped, for
	// messages only.
	Last map[string]string
}

// Until is the end of the wait's window: when it stopped, or its
// timeout's end if it stopped later.
func (w Wait) Until() time.Time {
	d := w.Start.Add(w.Timeout)
	if !w.End.IsZero() && w.End.Before(d) {
		return w.End
	}
	return d
}

// lastOf is the last observed state of nodes, for messages.
func (w Wait) lastOf(nodes []string) string {
	var out []string
	for _, n := range nodes {
		if s, ok := w.Last[n]; ok {
			out = append(out, s)
		}
	}
	return strings.Join(out, "; ")
}

// NodeLoad is one node's part of a reload wait, as judged.
type NodeLoad struct {
	Node, Boot string
	// Missing are the modules not loaded in Boot while the Node showed
	// it, at any moment of the wait's window.
	Missing []string
	// Loaded is when they all were, with the Node in that boot (zero
	// when missing).
	Loaded time.Time
}

// WaitResult is a wait as judged.
type WaitResult struct {
	Held  bool
	Nodes []NodeLoad // WaitReload
	// WaitWorker: what was not seen, and on which nodes.
	Why      string
	NoWorker []string
}

// InitialWait: w is a reload wait that started before the case's first
// node disruption was launched (the case may have none): it waits for
// the subject's first load.
func (f Facts) InitialWait(w Wait) bool {
	if w.Kind != WaitReload {
		return false
	}
	for _, d := range f.Disrupted {
		if d.Start.IsZero() || d.Start.Before(w.Start) {
			return false
		}
	}
	return true
}
