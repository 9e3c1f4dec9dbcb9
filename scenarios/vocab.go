package scenarios

import (
	"strings"

	"github.com/bootproof/bootproof/scenarios/trace"
)

// ActionKind names a step of a scenario's timeline: the key of a one-key
// mapping under actions. Each kind's parameters, checks and behaviour are
// one entry of the action table (actions.go). The type is the trace's
// (trace.Event.Action), which records the action an event belongs to.
type ActionKind = trace.ActionKind

// Action kinds.
const (
	ActReboot         ActionKind = "reboot"
	ActRestartKubelet ActionKind = "restart-kubelet"
	ActNetworkBlip    ActionKind = "network-blip"
	ActPauseNode      ActionKind = "pause-node"
	ActPauseSubject   ActionKind = "pause-subject"
	ActResumeSubject  ActionKind = "resume-subject"
	ActRestartSubject ActionKind = "restart-subject"
	ActWaitReloaded   ActionKind = "wait-reloaded"
	ActWaitWorker     ActionKind = "wait-worker"
	ActRemoveModule   ActionKind = "remove-module"
	ActAddModule      ActionKind = "add-module"
	ActUpdateKernel   ActionKind = "update-kernel-version"
	ActUpdateImage    ActionKind = "update-module-image"
	ActDeleteNMC      ActionKind = "delete-nmc"
	ActRefuseWrites   ActionKind = "refuse-writes"
	ActAllowWrites    ActionKind = "allow-writes"
	ActRejectPods     ActionKind = "reject-pods"
	ActSleep          ActionKind = "sleep"
)

func joinPreconditions() string {
	out := make([]string, 0, 3)
	for _, p := range Preconditions() {
		out = append(out, string(p))
	}
	return strings.Join(out, ", ")
}

// Names of the subjects bootproof ships. A scenario's expect map may name
// them; a subject file names itself and states its own expectations.
const (
	// SubjectBootID is the bundled reconciler that tracks boot IDs.
	SubjectBootID = "bootid"
	// SubjectLegacy is the bundled reconciler that only sees Ready
	// transitions: it must fail fast reboots.
	SubjectLegacy = "legacy"
	// SubjectExternal is an operator the harness does not run (deployed
	// by its owner); it is always expected to pass.
	SubjectExternal = "external"
)

// KnownSubjects lists the subject names a scenario's expect map accepts.
func KnownSubjects() []string { return []string{SubjectBootID, SubjectLegacy, SubjectExternal} }
