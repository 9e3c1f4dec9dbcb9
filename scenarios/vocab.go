package scenarios

import "slices"

// ActionKind names a step of a scenario's timeline: the key of a one-key
// mapping under actions. Each kind's parameters, checks and behaviour are
// one entry of the action table (actions.go).
type ActionKind string

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
	ActSleep          ActionKind = "sleep"
)

// RebootMode is how a node reboots. Every backend supports RebootReset; a
// NodeSet that supports more says so through the RebootModes capability.
type RebootMode string

// Reboot modes.
const (
	// RebootReset is a hard reset (the default).
	RebootReset RebootMode = "reset"
	// RebootGuest is a reboot the guest asks for (reboot(2)).
	RebootGuest RebootMode = "guest"
	// RebootPanic is a kernel panic that reboots (panic=1).
	RebootPanic RebootMode = "panic"
	// RebootPowerCycle is power off, stay off for the downtime, power on.
	RebootPowerCycle RebootMode = "power-cycle"
)

// AllRebootModes lists every reboot mode a scenario may ask for.
func AllRebootModes() []RebootMode {
	return []RebootMode{RebootReset, RebootGuest, RebootPanic, RebootPowerCycle}
}

// Valid reports whether m is a known mode; the empty mode means reset.
func (m RebootMode) Valid() bool { return m == "" || slices.Contains(AllRebootModes(), m) }

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
