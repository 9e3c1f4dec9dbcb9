package variant

import (
	"fmt"
	"slices"
	"strings"
)

// Name names a variant; the empty Name is the correct reconciler.
type Name string

// Kind says what a variant's truth is.
type Kind string

const (
	// Defect is a known-bad operator: bootproof must fail it.
	Defect Kind = "defect"
	// Slow is a known-good operator that is merely slow: bootproof must
	// pass it.
	Slow Kind = "slow"
)

// The variants.
const (
	// None is the correct reconciler.
	None Name = ""

	// BootFromNode records the node's boot ID when it syncs a finished
	// load, not the boot the worker ran in (upstream KMM's race at
	// de3f8c9): a load that ran in boot A and is synced in boot B counts
	// as loaded in B.
	BootFromNode Name = "boot-from-node"
	// LegacyDetector detects reboots by the Ready condition's transitions,
	// so a reboot inside the grace period is missed and a NotReady without
	// a reboot is taken for one.
	LegacyDetector Name = "legacy-detector"
	// NoReload loads a module once and never again after a reboot.
	NoReload Name = "no-reload"
	// NoBootRecord records no boot for a load, so every reconcile takes
	// the module for unloaded and loads it again.
	NoBootRecord Name = "no-boot-record"
	// IgnoreKernelChange does nothing when the kernel version of a module's
	// config changed (a kernel upgrade on reboot).
	IgnoreKernelChange Name = "ignore-kernel-change"
	// StatusOnCreate writes a module's status as loaded in the node's
	// current boot as soon as it has created the loader pod, before the
	// pod ran: for as long as the pod takes to start and load, the status
	// claims a load the kernel has not made.
	StatusOnCreate Name = "status-on-create"
	// NeverLoad never creates a loader pod.
	NeverLoad Name = "never-load"
	// IgnoreRemoved does nothing for a module removed from the spec: its
	// status entry stays, it is not unloaded.
	IgnoreRemoved Name = "ignore-removed"
	// UpdateEventsOnly notices a boot change only between the boots it saw
	// itself: it takes the boot a node shows when the reconciler first
	// sees it (at start-up) as the one its modules were loaded in, so a
	// reboot while it was down is missed.
	UpdateEventsOnly Name = "update-events-only"
	// TwoWorkers runs two loader pods for one load in one boot: the first
	// one's result is dropped and the load made again.
	TwoWorkers Name = "two-workers"
	// IgnoreImageChange does nothing when a module's config changes
	// without a kernel change (a new image: a new build of the driver):
	// the old build stays loaded.
	IgnoreImageChange Name = "ignore-image-change"
	// LoadWithoutUnload loads a changed config over the old one without
	// unloading it first.
	LoadWithoutUnload Name = "load-without-unload"
	// DropRemoved drops the status entry of a module removed from the
	// spec without unloading it, as if the node had rebooted.
	DropRemoved Name = "drop-removed"
	// KeepOrphanPods never releases its finalizer from the worker pods of
	// a deleted NodeModulesConfig: they stay, stuck in deletion.
	KeepOrphanPods Name = "keep-orphan-pods"
	// ReloadLoop loads a module again whenever its last load is over 1 s
	// old, whatever the boot.
	ReloadLoop Name = "reload-loop"
	// DropWriteErrors takes a write the API server refused for done: a
	// worker pod's create or release (its finalizer's removal, its
	// delete), a deleted NodeModulesConfig's pods' release, a status
	// write. It goes on as if the write was taken and asks for no retry.
	DropWriteErrors Name = "drop-write-errors"
	// StaleBootCache reads a node's boot ID from a cache of its own,
	// refreshed once an entry is 25 s old: it reloads after a reboot,
	// but up to 25 s late (past the reload service level, before the
	// deadline: late, not missed), for a reason of its own (not a Lease
	// it waits for, nor a restart).
	StaleBootCache Name = "stale-boot-cache"

	// SlowReconcile waits 2 s at the start of every reconcile.
	SlowReconcile Name = "slow-reconcile"
	// SlowPodStart asks for loader pods that take 3 s longer to start on
	// the node (contract.StartDelayAnnotation, which the lightweight
	// kubelet honours).
	SlowPodStart Name = "slow-pod-start"
	// SlowStart needs 8 s from its start to its first reconcile, with
	// leader election on (the Lease handed over on every restart).
	SlowStart Name = "slow-start"
	// SlowAfterRestart holds its reconciles back for 10 s from its first
	// one on every start but the first (a cache sync that is slow, once
	// it leads, when the cluster holds what it wrote: it finds a
	// NodeModulesConfig status then), leader election on.
	SlowAfterRestart Name = "slow-after-restart"
	// LeaseKept elects a leader and keeps the Lease when it stops
	// (controller-runtime's default, LeaderElectionReleaseOnCancel false,
	// and upstream KMM's): a restarted instance waits for the old Lease
	// to expire, 15 s, before it may reconcile.
	LeaseKept Name = "lease-kept"
	// TwoReplicas runs two instances that elect a leader (as a
	// Deployment with replicas: 2 would), the Lease kept when they stop:
	// the standby never reconciles while the leader runs, and a restarted
	// pair waits for the old Lease to expire before one of them leads.
	TwoReplicas Name = "two-replicas"
	// RefusedStatusPatches sees the API server refuse its first two status
	// patches of a node after each boot change (429 Too Many Requests),
	// and relies on controller-runtime's default exponential requeue.
	RefusedStatusPatches Name = "refused-status-patches"
)

// Variant describes one variant.
type Variant struct {
	Name Name
	Kind Kind
	// Summary says what it does, in one line.
	Summary string
}

// All lists the variants: the known-bad ones first, in the order of the
// calibration issue, then the slow ones.
var All = []Variant{
	{BootFromNode, Defect, "records the node's boot ID at status-sync time instead of the boot the worker ran in"},
	{LegacyDetector, Defect, "detects reboots by Ready transitions (the legacy detector)"},
	{NoReload, Defect, "never loads again after a reboot"},
	{NoBootRecord, Defect, "records no boot, so it loads again on every reconcile"},
	{IgnoreKernelChange, Defect, "ignores a kernel version change on reboot"},
	{StatusOnCreate, Defect, "writes the status as loaded when it creates the loader pod, before the load ran"},
	{NeverLoad, Defect, "never loads at all"},
	{IgnoreRemoved, Defect, "ignores a module removed from the spec"},
	{UpdateEventsOnly, Defect, "notices a boot change only between boots it saw, so a reboot while it was down is missed"},
	{TwoWorkers, Defect, "runs two loader pods for one load in one boot"},
	{IgnoreImageChange, Defect, "ignores a config change without a kernel change (a new image)"},
	{LoadWithoutUnload, Defect, "loads a changed config without unloading the old one first"},
	{DropRemoved, Defect, "drops a removed module's status without unloading it"},
	{KeepOrphanPods, Defect, "never releases the worker pods of a deleted NodeModulesConfig"},
	{ReloadLoop, Defect, "loads again every few seconds, whatever the boot"},
	{DropWriteErrors, Defect, "takes a write the API server refused for done and asks for no retry"},
	{StaleBootCache, Defect, "reads a node's boot ID from a cache refreshed every 25 s, so it reloads up to 25 s late"},
	{SlowReconcile, Slow, "waits 2 s in every reconcile"},
	{SlowPodStart, Slow, "its loader pods take 3 s longer to start on the node"},
	{SlowStart, Slow, "needs 8 s from start to its first reconcile, leader election on"},
	{SlowAfterRestart, Slow, "10 s more before it acts on every start but the first (once it leads), leader election on"},
	{LeaseKept, Slow, "leader election on, the Lease kept when it stops: a restarted instance waits up to 15 s for it"},
	{TwoReplicas, Slow, "two replicas electing a leader, the Lease kept when they stop: one reconciles, the other waits to take over"},
	{RefusedStatusPatches, Slow, "the API server refuses its first two status patches after each reboot; default requeue backoff"},
}

// Lookup returns the named variant; ok is false for None and unknown names.
func Lookup(n Name) (Variant, bool) {
	i := slices.IndexFunc(All, func(v Variant) bool { return v.Name == n })
	if i < 0 {
		return Variant{}, false
	}
	return All[i], true
}

// Names lists every variant's name, for messages.
func Names() []string {
	out := make([]string, len(All))
	for i, v := range All {
		out[i] = string(v.Name)
	}
	return out
}

// Parse reads a variant name; "" and "none" are None.
func Parse(s string) (Name, error) {
	if s == "" || s == "none" {
		return None, nil
	}
	if _, ok := Lookup(Name(s)); !ok {
		return None, fmt.Errorf("unknown variant %q: accepted: none, %s", s, strings.Join(Names(), ", "))
	}
	return Name(s), nil
}
