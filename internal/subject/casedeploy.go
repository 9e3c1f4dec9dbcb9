package subject

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/bootproof/bootproof/kmm"
	"github.com/bootproof/bootproof/kmm/variant"
	"github.com/bootproof/bootproof/scenarios"
)

// Names of what InDeployment creates in each case's namespace.
const (
	// CaseOperatorName names the Deployment, its service account and
	// its leader-election Lease.
	CaseOperatorName = "bootproof-kmm"
	// caseOperatorLabel selects the Deployment's pods.
	caseOperatorLabel = "app.kubernetes.io/name"
)

// InDeployment runs a calibration file's variant as operators run: in
// every case a Deployment in the case's namespace, from image (the image
// 'bootproof kind build-operator-image' writes, which the cluster's nodes
// must have: imagePullPolicy Never), scoped to the case's nodes
// (--selector) and namespace as the in-process variant is, with its
// leader election (CaseDeploymentObjects), under a service account of its own bound to the roles of kmm's RBAC manifest
// (nothing more). A pause scales the Deployment to 0 (its pods really
// stop) and back; the reload window then opens once a new pod holds the
// Lease. The manifest each case applied, and its pods' logs, are kept in
// logDir/<subject>/<namespace>.yaml and .log.
func InDeployment(f *File, c scenarios.Cluster, image, logDir, runID string) (scenarios.Subject, error) {
	if f.Calibration == nil {
		return nil, fmt.Errorf("subject file %s: no calibration section: only bootproof's calibration variants are deployed per case", f.Path)
	}
	if logDir == "" {
		return nil, fmt.Errorf("subject file %s: a directory for the cases' manifests is required", f.Path)
	}
	return &caseDeployment{file: f, cluster: c, image: image, dir: filepath.Join(logDir, f.Name), runID: runID}, nil
}

// caseDeployment is a calibration variant deployed per case.
type caseDeployment struct {
	file    *File
	cluster scenarios.Cluster
	image   string
	dir     string
	runID   string
}

// Name implements scenarios.Subject.
func (d *caseDeployment) Name() string { return d.file.Name }

// Expectation implements scenarios.Expecter.
func (d *caseDeployment) Expectation(s *scenarios.Scenario) (scenarios.Expectation, bool) {
	return d.file.Expectation(s)
}

// CanPause implements scenarios.PauseChecker: it scales to 0 and back.
func (d *caseDeployment) CanPause() error { return nil }

// Prepare installs the CRD and the RBAC manifest's roles for the case's
// namespace, as the in-process variant's Prepare does.
func (d *caseDeployment) Prepare(ctx context.Context, req scenarios.SubjectRequest) error {
	return (&KMM{Cluster: d.cluster}).Prepare(ctx, req)
}

// Start writes the case's manifest, applies it and waits until the
// Deployment is available.
func (d *caseDeployment) Start(ctx context.Context, req scenarios.SubjectRequest) (scenarios.SubjectInstance, error) {
	objs, err := CaseDeploymentObjects(d.file.Calibration.Variant, d.image, req)
	if err != nil {
		return nil, fmt.Errorf("subject %s: %w", d.file.Name, err)
	}
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return nil, fmt.Errorf("subject %s: %w", d.file.Name, err)
	}
	manifest := filepath.Join(d.dir, req.Namespace+".yaml")
	if err := writeObjects(manifest, objs); err != nil {
		return nil, fmt.Errorf("subject %s: %w", d.file.Name, err)
	}
	lease := scenarios.LeaseRef{Namespace: req.Namespace, Name: CaseOperatorName}
	dep := &Deployment{
		File: &File{Name: d.file.Name, Path: d.file.Path, Manifests: []string{manifest}, LeaderElection: &lease,
			Deployment: &DeploymentSpec{Namespace: req.Namespace, Name: CaseOperatorName, timeout: DefaultDeploymentTimeout}},
		Cluster: d.cluster, RunID: d.runID, LogDir: d.dir, LogFile: req.Namespace + ".log",
	}
	if err := dep.Setup(ctx); err != nil {
		return nil, errorsJoinTeardown(err, dep)
	}
	in, err := dep.Start(ctx, req)
	if err != nil {
		return nil, errorsJoinTeardown(err, dep)
	}
	return &caseDeploymentInstance{deploymentInstance: in.(*deploymentInstance)}, nil
}

// errorsJoinTeardown removes what a failed start created.
func errorsJoinTeardown(err error, dep *Deployment) error {
	if terr := dep.Teardown(); terr != nil {
		return fmt.Errorf("%w (and removing what it created: %v)", err, terr)
	}
	return err
}

// caseDeploymentInstance is the case's Deployment: Stop deletes what
// the case's manifest created and waits until its pods are gone.
type caseDeploymentInstance struct {
	*deploymentInstance
}

func (in *caseDeploymentInstance) Stop() error { return in.d.Teardown() }

// CaseDeploymentObjects renders what InDeployment applies for a case: a
// service account, bindings of the kmm RBAC manifest's roles to it (each
// binding of the manifest, named with "-sa" in the case's namespace and
// after the namespace outside it), and the Deployment running
// 'bootproof kmm --variant=v' scoped to req. Leader election is as in-process (off, unless the
// variant turns it on: slow-start, slow-after-restart, lease-kept), so
// that the two worlds differ only in how the operator runs (a pod of an
// image, scheduled, restarted by scaling); the variant two-replicas is
// deployed as what it stands for: two pods that keep the Lease when they
// stop (in-process, one process runs both).
func CaseDeploymentObjects(v, image string, req scenarios.SubjectRequest) ([]*unstructured.Unstructured, error) {
	if _, ok := variant.Lookup(variant.Name(v)); !ok {
		return nil, fmt.Errorf("variant %q: accepted: %s", v, strings.Join(variant.Names(), ", "))
	}
	if req.Namespace == "" {
		return nil, fmt.Errorf("a case namespace is required")
	}
	ns := req.Namespace
	args, replicas := caseOperatorArgs(v, req)
	podLabels := map[string]string{caseOperatorLabel: CaseOperatorName}
	sa := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: CaseOperatorName, Namespace: ns}}
	dep := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: CaseOperatorName, Namespace: ns, Labels: podLabels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					ServiceAccountName: CaseOperatorName,
					// A stopped pod stops at once: a pause is a scale to 0.
					TerminationGracePeriodSeconds: ptr.To[int64](10),
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{
						Name: "manager", Image: image, ImagePullPolicy: corev1.PullNever, Args: args,
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
					}},
				},
			},
		},
	}
	u, err := toUnstructured(sa)
	if err != nil {
		return nil, err
	}
	out := []*unstructured.Unstructured{u}
	bindings, err := caseBindings(ns)
	if err != nil {
		return nil, err
	}
	out = append(out, bindings...)
	if u, err = toUnstructured(dep); err != nil {
		return nil, err
	}
	return append(out, u), nil
}

// caseOperatorArgs are the operator's arguments and replicas for a case.
func caseOperatorArgs(v string, req scenarios.SubjectRequest) ([]string, int32) {
	ns := req.Namespace
	args := []string{"kmm", "--variant=" + v, "--leader-elect=false"}
	replicas := int32(1)
	if variant.Name(v) == variant.TwoReplicas {
		args, replicas = []string{"kmm", "--leader-elect", "--leader-elect-keep-lease"}, 2
	}
	args = append(args, "--leader-election-namespace="+ns, "--leader-election-id="+CaseOperatorName, "--worker-namespace="+ns)
	if len(req.Selector) > 0 {
		keys := make([]string, 0, len(req.Selector))
		for k := range req.Selector {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		pairs := make([]string, 0, len(keys))
		for _, k := range keys {
			pairs = append(pairs, k+"="+req.Selector[k])
		}
		args = append(args, "--selector="+strings.Join(pairs, ","))
	}
	return args, replicas
}

// caseBindings binds the roles of the kmm RBAC manifest (rendered for
// namespace ns) to the case's service account.
func caseBindings(ns string) ([]*unstructured.Unstructured, error) {
	rbac, err := kmm.RBACObjects([]string{ns}, ns)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, u := range rbac {
		if u.GetKind() != "RoleBinding" && u.GetKind() != "ClusterRoleBinding" {
			continue // the roles: kmm.Install's (Prepare)
		}
		// kmm.Install binds the same roles to its group under these names
		// in the case's namespace: the service account's bindings are
		// named apart, and after the case outside it.
		b := u.DeepCopy()
		if b.GetNamespace() == ns {
			b.SetName(b.GetName() + "-sa")
		} else {
			b.SetName(b.GetName() + "-" + ns)
		}
		b.SetLabels(nil)
		if err := unstructured.SetNestedSlice(b.Object, []any{map[string]any{"kind": "ServiceAccount", "name": CaseOperatorName, "namespace": ns}}, "subjects"); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func toUnstructured(o any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	return u, nil
}

// writeObjects writes objs as one YAML stream.
func writeObjects(path string, objs []*unstructured.Unstructured) error {
	var buf bytes.Buffer
	buf.WriteString("# bootproof: the objects this case's operator Deployment was made of (bootproof calibrate --cluster kind)\n")
	for _, u := range objs {
		b, err := yaml.Marshal(u.Object)
		if err != nil {
			return err
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
