package contract_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/bootproof/bootproof/contract"
	"github.com/go-logr/logr"
)

// Every simulated node's taint is tolerated by the tolerations the
// engine gives worker pods, and only that taint.
func TestSimulatedTolerationsTolerateSimulatedTaints(t *testing.T) {
	tolerated := func(taint corev1.Taint) bool {
		for _, tol := range contract.SimulatedTolerations() {
			if tol.ToleratesTaint(logr.Discard(), &taint, false) {
				return true
			}
		}
		return false
	}
	taints := contract.SimulatedTaints()
	if len(taints) != 2 {
		t.Fatalf("SimulatedTaints = %v, want NoSchedule and NoExecute", taints)
	}
	for _, taint := range taints {
		if taint.Key != contract.SimulatedTaintKey || !tolerated(taint) {
			t.Errorf("taint %v is not tolerated", taint)
		}
	}
	if other := (corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute}); tolerated(other) {
		t.Errorf("the simulated tolerations also tolerate %v", other)
	}
}
