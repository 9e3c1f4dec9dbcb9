package scenarios

import (
	"context"
	"fmt"

	"github.com/bootproof/bootproof/nodeapi"
)

// rejectPodsAction is reject-pods: the targeted nodes' kubelets reject at
// admission the next count worker pods they are given (phase Failed,
// reason UnexpectedAdmissionError), as a kubelet does right after a
// restart before its device plugins registered again; the subject must
// record nothing for such a pod and run the work again.
func rejectPodsAction() actionSpec {
	return actionSpec{
		fields: []string{"on", "count"},
		check: func(_ *Scenario, a Action) string {
			if a.Count == 0 {
				return fmt.Sprintf("count is required: how many worker pods to reject, 1 to %d", MaxRejectedPods)
			}
			return ""
		},
		nodeNeeds: needNodes[nodeapi.PodRejecter]("reject worker pods at admission"),
		run:       (*caseRun).doRejectPods,
	}
}

// MaxRejectedPods bounds reject-pods' count: a subject that retries with
// backoff must still reload within a case's deadline.
const MaxRejectedPods = 5

// doRejectPods has each targeted node's kubelet reject its next a.Count
// worker pods at admission.
func (c *caseRun) doRejectPods(ctx context.Context, a Action) error {
	rej, ok := c.nodes.(nodeapi.PodRejecter)
	if !ok { // nodeNeeds skipped such a case
		return infra("backend %s cannot reject worker pods", c.e.Backend.Name())
	}
	for _, n := range c.targets(a.On) {
		c.obs.Action(n, a.Kind, fmt.Sprintf("the kubelet rejects its next %d worker pod(s) at admission", a.Count))
		if err := rej.RejectPods(ctx, n, a.Count); err != nil {
			return infra("reject worker pods on node %s: %w", n, err)
		}
	}
	return nil
}
