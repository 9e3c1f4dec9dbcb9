package scenarios

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/bootproof/bootproof/contract"
)

// refuse-writes and allow-writes: for a while the API server refuses the
// writes an operator makes to do its work (creating and updating worker
// pods, writing NodeModulesConfig status), as it does under overload, a
// failing admission webhook or a quota, while reads and watches go on. A
// ValidatingAdmissionPolicy of the case, bound with Deny, refuses them:
// it matches only the case's worker pods (in its namespace, on its
// targeted nodes, with the worker-action label) and the status of the
// targeted nodes' NodeModulesConfigs, so the harness's own writes (the
// spec), the kubelets' (pod status, deletes) and every other case go
// through. A subject must retry what was refused once writes are allowed
// again: a reconciler that drops an error is never asked again.

// refusalProbeTimeout bounds the wait for the API server to enforce, or
// stop enforcing, the policy (its admission plugin learns of policies by
// watching them).
const refusalProbeTimeout = 30 * time.Second

// refusalProbeAnnotation is what the dry-run probe writes.
const refusalProbeAnnotation = "bootproof.dev/refusal-probe"

// refusalName names the case's policy and binding.
func (c *caseRun) refusalName() string { return "bootproof-refuse-writes-" + c.id }

// refusalPolicy is the policy that refuses the subject's writes on
// nodes, and its binding.
func refusalPolicy(name, namespace string, nodes []string, objLabels map[string]string) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	quoted := make([]string, len(nodes))
	for i, n := range nodes {
		quoted[i] = strconv.Quote(n)
	}
	list := "[" + strings.Join(quoted, ", ") + "]"
	label := strconv.Quote(contract.WorkerActionLabel)
	worker := func(o string) string {
		return fmt.Sprintf("(%[1]s != null && has(%[1]s.metadata.labels) && %[2]s in %[1]s.metadata.labels && has(%[1]s.spec.nodeName) && %[1]s.spec.nodeName in %[3]s)", o, label, list)
	}
	match := fmt.Sprintf(`(request.resource.resource == "pods" && request.namespace == %s && (%s || %s)) || (request.resource.resource == %s && request.name in %s)`,
		strconv.Quote(namespace), worker("object"), worker("oldObject"), strconv.Quote(contract.NMCResource.Resource), list)
	fail := admissionv1.Fail
	reason := metav1.StatusReasonForbidden
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: objLabels},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{
				{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}},
				{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule: admissionv1.Rule{APIGroups: []string{contract.NMCResource.Group}, APIVersions: []string{"*"},
						Resources: []string{contract.NMCResource.Resource + "/status"}},
				}},
			}},
			MatchConditions: []admissionv1.MatchCondition{{Name: "case-writes", Expression: match}},
			Validations: []admissionv1.Validation{{Expression: "false", Reason: &reason,
				Message: "bootproof refuse-writes: the API server refuses this write for a while (" + name + ")"}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: objLabels},
		Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	return policy, binding
}

// canRefuseWrites skips the case on a cluster that does not serve
// ValidatingAdmissionPolicy (Kubernetes before 1.30).
func (c *caseRun) canRefuseWrites(_ Action) error {
	if c.cs == nil {
		return nil // a test's engine without a cluster
	}
	list, err := c.cs.Discovery().ServerResourcesForGroupVersion(admissionv1.SchemeGroupVersion.String())
	if err != nil && !apierrors.IsNotFound(err) {
		return infra("discover %s: %w", admissionv1.SchemeGroupVersion, err)
	}
	if list != nil {
		for _, r := range list.APIResources {
			if r.Name == "validatingadmissionpolicies" {
				return nil
			}
		}
	}
	return &skipError{fmt.Sprintf("cluster %s cannot refuse writes: it does not serve validatingadmissionpolicies.%s (Kubernetes 1.30 or later does)",
		c.e.Cluster.Name(), admissionv1.SchemeGroupVersion)}
}

// doRefuseWrites creates the case's policy and returns once the API
// server enforces it.
func (c *caseRun) doRefuseWrites(ctx context.Context, a Action) error {
	nodes := c.targets(a.On)
	policy, binding := refusalPolicy(c.refusalName(), c.ns, nodes, c.labels())
	adm := c.cs.AdmissionregistrationV1()
	if _, err := adm.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return infra("create ValidatingAdmissionPolicy %s: %w", policy.Name, err)
	}
	if _, err := adm.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return infra("create ValidatingAdmissionPolicyBinding %s: %w", binding.Name, err)
	}
	if err := c.probeRefusal(ctx, nodes[0], true); err != nil {
		return err
	}
	for _, n := range nodes {
		c.obs.Action(n, a.Kind, "the API server refuses the subject's worker pod writes and NodeModulesConfig status writes")
	}
	return nil
}

// doAllowWrites deletes the case's policy and returns once the API
// server no longer enforces it.
func (c *caseRun) doAllowWrites(ctx context.Context, a Action) error {
	if err := c.deleteRefusal(ctx); err != nil {
		return infra("%w", err)
	}
	if err := c.probeRefusal(ctx, c.names[0], false); err != nil {
		return err
	}
	c.obs.Action("", a.Kind, "the API server takes the subject's writes again")
	return nil
}

// probeRefusal waits until a dry-run write of node's NodeModulesConfig
// status is refused (refused true) or taken.
func (c *caseRun) probeRefusal(ctx context.Context, node string, refused bool) error {
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, refusalProbeAnnotation, c.id))
	res := c.dyn.Resource(contract.NMCResource)
	var last error
	err := c.waitFor(ctx, refusalProbeTimeout, func() error {
		_, last = res.Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "status")
		switch {
		case refused && apierrors.IsForbidden(last), !refused && last == nil:
			return nil
		case last != nil && !apierrors.IsForbidden(last):
			return last
		}
		return errNotYet
	})
	if err == nil || ctx.Err() != nil || isFault(err) {
		return err
	}
	state := "enforced"
	if !refused {
		state = "lifted"
	}
	if last != nil && !apierrors.IsForbidden(last) {
		return infra("probe the write refusal on NodeModulesConfig %s: %w", node, last)
	}
	return infra("the API server had not %s the write refusal %s within %s", state, c.refusalName(), refusalProbeTimeout)
}

// deleteRefusal deletes the case's policy and binding, if any (allow-
// writes, and the teardown, which must remove them before it releases
// the worker pods' finalizers).
func (c *caseRun) deleteRefusal(ctx context.Context) error {
	adm := c.cs.AdmissionregistrationV1()
	sel := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(c.selector()).String()}
	var errs []error
	if err := adm.ValidatingAdmissionPolicyBindings().DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete ValidatingAdmissionPolicyBindings of case %s: %w", c.id, err))
	}
	if err := adm.ValidatingAdmissionPolicies().DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete ValidatingAdmissionPolicies of case %s: %w", c.id, err))
	}
	return errors.Join(errs...)
}
