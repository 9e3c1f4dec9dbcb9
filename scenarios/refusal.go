package scenarios

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/bootproof/bootproof/contract"
)

// refuse-writes and allow-writes: for a while the API server refuses the
// writes an operator makes to do its work (creating and updating worker
// pods, writing NodeModulesConfig status), as it does under overload, a
// failing admission webhook or a quota, while reads and watches go on. A
// ValidatingAdmissionPolicy of the case, bound with Deny, refuses them:
// it matches only the case's worker pods (in its namespace, on its
// targeted nodes, with the worker-action label: their creates and
// updates, and a delete that would begin a pod's deletion), the status
// of the targeted nodes' NodeModulesConfigs and the create of the case's
// probe ConfigMap (refusalName), so the harness's own writes (the spec),
// the kubelets' (pod status, the delete that ends a pod already being
// deleted) and every other case go through. A subject must retry what
// was refused once writes are allowed again: a reconciler that drops an
// error is never asked again.

// refusalProbeTimeout bounds the wait for the API server to enforce, or
// stop enforcing, the policy (its admission plugin learns of policies by
// watching them).
const refusalProbeTimeout = 30 * time.Second

// What refuse-writes may refuse (Action.Writes).
const (
	// WritesPods: the worker pods' creates and updates (a finalizer's
	// removal is an update).
	WritesPods = "pods"
	// WritesPodDeletes: the delete that begins a worker pod's deletion
	// (the pod has no deletionTimestamp yet); the kubelet's delete of a
	// pod already being deleted goes through. It refuses the garbage
	// collector's delete of a worker pod too.
	WritesPodDeletes = "pod-deletes"
	// WritesStatus: the NodeModulesConfigs' status writes.
	WritesStatus = "status"
)

// RefusableWrites lists the values of refuse-writes' writes.
func RefusableWrites() []string { return []string{WritesPods, WritesPodDeletes, WritesStatus} }

// refusalName names the case's policy and binding, and the ConfigMap
// whose creation (dry run) probes whether the policy is in force: the
// policy refuses that one create too, so the probe depends on nothing
// else (a NodeModulesConfig may be gone, a namespace's service account
// not there yet).
func (c *caseRun) refusalName() string { return "bootproof-refuse-writes-" + c.id }

// refusalPolicy is the policy that refuses the subject's writes on
// nodes (writes: RefusableWrites, empty for all), and its binding.
func refusalPolicy(name, namespace string, nodes, writes []string, objLabels map[string]string) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	refuses := func(w string) string { return strconv.FormatBool(len(writes) == 0 || slices.Contains(writes, w)) }
	quoted := make([]string, len(nodes))
	for i, n := range nodes {
		quoted[i] = strconv.Quote(n)
	}
	list := "[" + strings.Join(quoted, ", ") + "]"
	label := strconv.Quote(contract.WorkerActionLabel)
	worker := func(o string) string {
		return fmt.Sprintf("(%[1]s != null && has(%[1]s.metadata.labels) && %[2]s in %[1]s.metadata.labels && has(%[1]s.spec.nodeName) && %[1]s.spec.nodeName in %[3]s)", o, label, list)
	}
	match := fmt.Sprintf(`(%[7]s && request.resource.resource == "pods" && request.operation != "DELETE" && request.namespace == %[1]s && (%[2]s || %[3]s)) || `+
		`(%[9]s && request.resource.resource == "pods" && request.operation == "DELETE" && request.namespace == %[1]s && %[3]s && !has(oldObject.metadata.deletionTimestamp)) || `+
		`(%[8]s && request.resource.resource == %[4]s && request.name in %[5]s) || `+
		`(request.resource.resource == "configmaps" && request.namespace == %[1]s && request.name == %[6]s)`,
		strconv.Quote(namespace), worker("object"), worker("oldObject"), strconv.Quote(contract.NMCResource.Resource), list, strconv.Quote(name),
		refuses(WritesPods), refuses(WritesStatus), refuses(WritesPodDeletes))
	fail := admissionv1.Fail
	reason := metav1.StatusReasonForbidden
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: objLabels},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{
				{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update, admissionv1.Delete},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}},
				{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
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
	policy, binding := refusalPolicy(c.refusalName(), c.ns, nodes, a.Writes, c.labels())
	adm := c.cs.AdmissionregistrationV1()
	if _, err := adm.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return infra("create ValidatingAdmissionPolicy %s: %w", policy.Name, err)
	}
	if _, err := adm.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return infra("create ValidatingAdmissionPolicyBinding %s: %w", binding.Name, err)
	}
	if err := c.probeRefusal(ctx, true); err != nil {
		return err
	}
	what := map[string]string{WritesPods: "its worker pods' creates and updates", WritesPodDeletes: "its worker pods' deletes",
		WritesStatus: "its NodeModulesConfig status writes"}
	var refused []string
	for _, w := range RefusableWrites() {
		if len(a.Writes) == 0 || slices.Contains(a.Writes, w) {
			refused = append(refused, what[w])
		}
	}
	for _, n := range nodes {
		c.obs.Action(n, a.Kind, "the API server refuses the subject's writes: "+strings.Join(refused, ", "))
	}
	return nil
}

// doAllowWrites deletes the case's policy and returns once the API
// server no longer enforces it.
func (c *caseRun) doAllowWrites(ctx context.Context, a Action) error {
	if err := c.deleteRefusal(ctx); err != nil {
		return infra("%w", err)
	}
	if err := c.probeRefusal(ctx, false); err != nil {
		return err
	}
	c.obs.Action("", a.Kind, "the API server takes the subject's writes again")
	return nil
}

// probeRefusal waits until the API server refuses (refused true) or
// takes a dry-run create of the case's probe ConfigMap.
func (c *caseRun) probeRefusal(ctx context.Context, refused bool) error {
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: c.refusalName(), Namespace: c.ns}}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, refusalProbeTimeout, true, func(ctx context.Context) (bool, error) {
		_, last = c.cs.CoreV1().ConfigMaps(c.ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return (refused && apierrors.IsForbidden(last)) || (!refused && last == nil), nil
	})
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if last != nil && !apierrors.IsForbidden(last) {
		return infra("probe the write refusal %s: %w", c.refusalName(), last)
	}
	state := "enforced"
	if !refused {
		state = "lifted"
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
