package detect

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
)

// Strategy names, as accepted by ByName and the --detector flag.
const (
	BootID = "bootid"
	Legacy = "legacy"
)

// Names lists the strategies ByName accepts, the default first.
var Names = []string{BootID, Legacy}

// Verdict is a detector's answer for one module on one node.
type Verdict struct {
	// Rebooted is true when the node booted again since the module was
	// loaded, so the module must be loaded again.
	Rebooted bool
	// Reason says why, for logs and events.
	Reason string
	// Unrecorded: the status entry records no boot for the load, so
	// Rebooted only means "not known to be loaded in this boot" (a
	// detector that tracks boots says so; one that does not never
	// does).
	Unrecorded bool
}

// Detector decides whether node rebooted since the load recorded in
// status. Implementations are pure: no I/O, no clock.
type Detector interface {
	// Name is the strategy name (BootID or Legacy).
	Name() string
	// Rebooted judges one module. status is the module's entry in the
	// NodeModulesConfig status; it is never nil.
	Rebooted(node *corev1.Node, status *kmmv1beta1.NodeModuleStatus) Verdict
}

// ByName returns the detector named name.
func ByName(name string) (Detector, error) {
	switch name {
	case BootID:
		return BootIDDetector{}, nil
	case Legacy:
		return LegacyDetector{}, nil
	}
	return nil, fmt.Errorf("unknown reboot detector %q: accepted: %s", name, strings.Join(Names, ", "))
}

// Known reports whether name is a strategy ByName accepts.
func Known(name string) bool { return slices.Contains(Names, name) }

// BootIDDetector reports a reboot when the node is Ready and its
// status.nodeInfo.bootID differs from the boot recorded for the module.
// A status entry without a recorded boot (written by an older controller)
// counts as loaded in an unknown boot, so it is loaded again once.
type BootIDDetector struct{}

// Name implements Detector.
func (BootIDDetector) Name() string { return BootID }

// Rebooted implements Detector.
func (BootIDDetector) Rebooted(node *corev1.Node, status *kmmv1beta1.NodeModuleStatus) Verdict {
	if ready, why := isReady(node); !ready {
		return Verdict{Reason: why}
	}
	current := node.Status.NodeInfo.BootID
	switch {
	case current == "":
		return Verdict{Reason: "node reports no boot ID; cannot tell a reboot"}
	case status.BootID == "":
		return Verdict{Rebooted: true, Unrecorded: true, Reason: fmt.Sprintf("no boot recorded for the load; node is in boot %s", current)}
	case current != status.BootID:
		return Verdict{Rebooted: true, Reason: fmt.Sprintf("node boot ID changed from %s to %s", status.BootID, current)}
	}
	return Verdict{Reason: fmt.Sprintf("node is still in boot %s", current)}
}

// LegacyDetector reports a reboot when the node's Ready condition is True
// and became True after the module's recorded lastTransitionTime. It
// misses reboots during which Ready never changed.
type LegacyDetector struct{}

// Name implements Detector.
func (LegacyDetector) Name() string { return Legacy }

// Rebooted implements Detector.
func (LegacyDetector) Rebooted(node *corev1.Node, status *kmmv1beta1.NodeModuleStatus) Verdict {
	if ready, why := isReady(node); !ready {
		return Verdict{Reason: why}
	}
	cond := ReadyCondition(node)
	if status.LastTransitionTime.Before(&cond.LastTransitionTime) {
		return Verdict{Rebooted: true, Reason: fmt.Sprintf("node became Ready at %s, after the load at %s",
			cond.LastTransitionTime.UTC().Format("2006-01-02T15:04:05Z"), status.LastTransitionTime.UTC().Format("2006-01-02T15:04:05Z"))}
	}
	return Verdict{Reason: "node has not become Ready since the load"}
}

// ReadyCondition is a Node's Ready condition, nil when it has none yet.
// (kmm stands alone as an operator and keeps its own copy of this lookup;
// the harness's is contract.NodeReady.)
func ReadyCondition(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

func isReady(node *corev1.Node) (bool, string) {
	c := ReadyCondition(node)
	if c == nil {
		return false, "node has no Ready condition yet"
	}
	if c.Status != corev1.ConditionTrue {
		return false, fmt.Sprintf("node is not Ready (Ready=%s)", c.Status)
	}
	return true, ""
}

// IsReady reports whether node's Ready condition is True.
func IsReady(node *corev1.Node) bool {
	ok, _ := isReady(node)
	return ok
}
