package contract

import corev1 "k8s.io/api/core/v1"

// CaseLabel marks every object of one case (its namespace, Nodes and
// NodeModulesConfigs), with the case's ID as value; a subject scoped to
// one case reconciles only what carries it.
const CaseLabel = "bootproof.dev/case"

// RunLabel carries the run ID on every object a bootproof run creates
// (Nodes, their Leases, namespaces, NodeModulesConfigs, CSRs, RBAC), so
// the run deletes them at its end and 'bootproof cleanup' finds what a
// dead run left.
const RunLabel = "bootproof.dev/run"

// SimulatedLabel (value "true") marks every Node the lightweight kubelet
// created; a kubelet takes over an existing Node only when it carries it.
const SimulatedLabel = "bootproof.dev/simulated"

// SimulatedTaintKey is the taint every node the lightweight kubelet runs
// carries, with both effects NoSchedule and NoExecute, on every cluster:
// nothing of the cluster's own is scheduled there or stays there. Every
// NodeModulesConfig entry the engine writes tolerates both effects
// (SimulatedTolerations), so the subject's worker pods run there.
const SimulatedTaintKey = "bootproof.dev/simulated"

// SimulatedTaints are the taints of every simulated node: SimulatedTaintKey
// with NoSchedule (nothing is scheduled there) and NoExecute (a pod bound
// there that does not tolerate it is evicted).
func SimulatedTaints() []corev1.Taint {
	return []corev1.Taint{
		{Key: SimulatedTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule},
		{Key: SimulatedTaintKey, Value: "true", Effect: corev1.TaintEffectNoExecute},
	}
}

// SimulatedTolerations tolerate SimulatedTaints.
func SimulatedTolerations() []corev1.Toleration {
	return []corev1.Toleration{
		{Key: SimulatedTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: SimulatedTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	}
}
