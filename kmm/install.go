package kmm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
	"github.com/bootproof/bootproof/kmm/config"
)

// RBACGroup is the group the RBAC manifest binds; the reconciler must run
// as a member (or add a binding for its ServiceAccount).
const RBACGroup = config.RBACGroup

// fieldOwner is the server-side apply field manager of Install.
const fieldOwner = "bootproof-kmm-install"

// DefaultCRDTimeout bounds each wait for the CRD: for one an earlier
// install created to finish being deleted, and for it to be established.
const DefaultCRDTimeout = time.Minute

// InstallOptions say where the RBAC manifest grants permissions.
type InstallOptions struct {
	// WorkerNamespaces get the worker pod permissions; they must exist.
	// Empty grants them cluster-wide. Use the same list as
	// Options.WorkerNamespaces.
	WorkerNamespaces []string
	// LeaderElectionNamespace holds the leader-election Lease (default
	// DefaultLeaderElectionNamespace); it must exist.
	LeaderElectionNamespace string
	// CRDTimeout bounds each wait for the CRD, to finish an earlier
	// deletion and to be established (default
	// DefaultCRDTimeout).
	CRDTimeout time.Duration
	// CreatedLabels go on each object Install creates, not on one that
	// was there already (an installer's labels saying "mine, remove me
	// when done" must never land on somebody else's CRD); an object that
	// carries them from an earlier Install keeps them.
	CreatedLabels map[string]string
}

// CRDObjects returns the embedded NodeModulesConfig CRD.
func CRDObjects() ([]*unstructured.Unstructured, error) {
	return DecodeObjects(config.CRD(), "kmm/config/crd")
}

// RBACObjects renders the embedded RBAC manifest for the given worker and
// leader-election namespaces: each document in the placeholder namespace
// config.WorkerNamespace is repeated per worker namespace (and, with no
// worker namespaces, becomes a ClusterRoleBinding), and
// config.LeaderElectionNamespace is replaced.
func RBACObjects(workerNamespaces []string, leaderElectionNamespace string) ([]*unstructured.Unstructured, error) {
	if leaderElectionNamespace == "" {
		leaderElectionNamespace = DefaultLeaderElectionNamespace
	}
	docs, err := DecodeObjects(config.RBAC(), "kmm/config/rbac/rbac.yaml")
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	seen := map[string]bool{}
	add := func(u *unstructured.Unstructured) {
		key := u.GetAPIVersion() + "/" + u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
		if !seen[key] {
			seen[key] = true
			out = append(out, u)
		}
	}
	for _, u := range docs {
		switch u.GetNamespace() {
		case config.LeaderElectionNamespace:
			u.SetNamespace(leaderElectionNamespace)
			add(u)
		case config.WorkerNamespace:
			if len(workerNamespaces) == 0 {
				if u.GetKind() != "RoleBinding" {
					return nil, fmt.Errorf("kmm/config/rbac/rbac.yaml: %s %s in %s: only RoleBindings may use the worker namespace placeholder", u.GetKind(), u.GetName(), config.WorkerNamespace)
				}
				crb := u.DeepCopy()
				crb.SetKind("ClusterRoleBinding")
				crb.SetNamespace("")
				add(crb)
				continue
			}
			for _, ns := range workerNamespaces {
				c := u.DeepCopy()
				c.SetNamespace(ns)
				add(c)
			}
		default:
			add(u)
		}
	}
	for _, u := range out {
		if strings.Contains(fmt.Sprint(u.Object), "BOOTPROOF_") {
			return nil, fmt.Errorf("kmm/config/rbac/rbac.yaml: %s %s: placeholder left after rendering", u.GetKind(), u.GetName())
		}
	}
	return out, nil
}

// Install applies the NodeModulesConfig CRD, waits until it is
// established, and applies the RBAC manifest rendered for o, all with
// server-side apply. cfg needs the rights to do that (cluster-admin).
// It changes nothing it did not install: a NodeModulesConfig CRD that
// another installer made (upstream KMM's) is used as it is when it
// serves the versions bootproof's serves, and is an error otherwise;
// any other object that exists and is not Install's is a
// *ForeignObjectError.
func Install(ctx context.Context, cfg *rest.Config, o InstallOptions) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("install kmm: create client: %w", err)
	}
	crds, err := CRDObjects()
	if err != nil {
		return err
	}
	timeout := o.CRDTimeout
	if timeout == 0 {
		timeout = DefaultCRDTimeout
	}
	for _, crd := range crds {
		if err := waitNotTerminating(ctx, c, crd, timeout); err != nil {
			return fmt.Errorf("install kmm: %w", err)
		}
	}
	if err := apply(ctx, c, crds, o.CreatedLabels); err != nil {
		return err
	}
	for _, crd := range crds {
		if err := WaitEstablished(ctx, c, crd.GetName(), timeout); err != nil {
			return fmt.Errorf("install kmm: %w", err)
		}
	}
	rbac, err := RBACObjects(o.WorkerNamespaces, o.LeaderElectionNamespace)
	if err != nil {
		return err
	}
	return apply(ctx, c, rbac, o.CreatedLabels)
}

// waitNotTerminating waits until u's object is not being deleted: a CRD
// the end of an earlier run deletes stays, terminating, until its custom
// resources' finalizers are done, and applying it then would leave the
// case with no API once it goes. It returns when the object exists and
// is not terminating, or is gone.
func waitNotTerminating(ctx context.Context, c client.Client, u *unstructured.Unstructured, timeout time.Duration) error {
	var deleted *metav1.Time
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(u.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(u), cur); err != nil {
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		}
		deleted = cur.GetDeletionTimestamp()
		return deleted == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%s %s is being deleted (since %v) and was not gone within %s: %w", u.GetKind(), u.GetName(), deleted, timeout, err)
	}
	return nil
}

// ForeignObjectError says that an object Install would apply exists and
// was not installed by Install (it carries none of CreatedLabels and no
// field of Install's field manager): Install changes nothing it did not
// create.
type ForeignObjectError struct {
	Kind, Namespace, Name string
}

func (e *ForeignObjectError) Error() string {
	where := e.Name
	if e.Namespace != "" {
		where = e.Namespace + "/" + where
	}
	return fmt.Sprintf("install kmm: %s %s exists and was not installed by bootproof: bootproof does not change what it did not create; delete it or run against another cluster", e.Kind, where)
}

func apply(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, created map[string]string) error {
	for _, u := range objs {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(u.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKeyFromObject(u), cur)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("install kmm: get %s %s: %w", u.GetKind(), u.GetName(), err)
		case !installedByUs(cur, created) && u.GetKind() == "CustomResourceDefinition":
			// Somebody's NodeModulesConfig CRD (upstream KMM's, say):
			// never applied over, used as it is if it serves our versions.
			if err := servesVersions(cur, u); err != nil {
				return err
			}
			continue
		case !installedByUs(cur, created):
			return &ForeignObjectError{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
		}
		if err := labelCreated(ctx, c, u, created); err != nil {
			return err
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			where := u.GetName()
			if ns := u.GetNamespace(); ns != "" {
				where = ns + "/" + where
			}
			return fmt.Errorf("install kmm: apply %s %s: %w", u.GetKind(), where, err)
		}
	}
	return nil
}

// installedByUs: cur carries one of the labels an Install gives what it
// creates, or fields of Install's field manager.
func installedByUs(cur *unstructured.Unstructured, created map[string]string) bool {
	for k, v := range created {
		if cur.GetLabels()[k] == v {
			return true
		}
	}
	return slices.ContainsFunc(cur.GetManagedFields(), func(m metav1.ManagedFieldsEntry) bool { return m.Manager == fieldOwner })
}

// servesVersions checks that the existing CRD cur serves every version
// want serves.
func servesVersions(cur, want *unstructured.Unstructured) error {
	served := func(u *unstructured.Unstructured) []string {
		vs, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
		var out []string
		for _, v := range vs {
			m, _ := v.(map[string]any)
			if name, _ := m["name"].(string); name != "" && m["served"] == true {
				out = append(out, name)
			}
		}
		return out
	}
	have := served(cur)
	for _, v := range served(want) {
		if !slices.Contains(have, v) {
			return fmt.Errorf("install kmm: CustomResourceDefinition %s exists, was not installed by bootproof and does not serve %s (it serves %v): bootproof does not change it; install a KMM that serves %s or run against another cluster",
				cur.GetName(), v, have, v)
		}
	}
	return nil
}

// labelCreated sets labels on u when its object does not exist yet, and
// keeps those of them the existing object carries (server-side apply
// would remove a label this field manager set before and no longer
// applies).
func labelCreated(ctx context.Context, c client.Client, u *unstructured.Unstructured, labels map[string]string) error {
	if len(labels) == 0 {
		return nil
	}
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(u.GroupVersionKind())
	err := c.Get(ctx, client.ObjectKeyFromObject(u), cur)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("install kmm: get %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	l := u.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	for k, v := range labels {
		if err != nil { // not found: it is created now
			l[k] = v
		} else if have, ok := cur.GetLabels()[k]; ok {
			l[k] = have
		}
	}
	u.SetLabels(l)
	return nil
}

// WaitEstablished waits up to timeout until the CustomResourceDefinition
// name is established.
func WaitEstablished(ctx context.Context, c client.Client, name string, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		if err := c.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
			if apierrors.IsNotFound(err) {
				last = "not found"
				return false, nil
			}
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Established" {
				last = fmt.Sprintf("Established=%v (%v)", m["status"], m["message"])
				if m["status"] == "True" {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established within %s (last: %s): %w", name, timeout, last, err)
	}
	return nil
}

// DecodeObjects decodes the YAML or JSON documents of data (named source
// in errors); every document needs a kind and a name.
func DecodeObjects(data []byte, source string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for i := 0; ; i++ {
		obj := map[string]any{}
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("%s: document %d: %w", source, i+1, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("%s: document %d has no kind or name", source, i+1)
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no documents", source)
	}
	return slices.Clip(out), nil
}

// CRDMissingError says the cluster does not serve the NodeModulesConfig
// API.
type CRDMissingError struct{ Err error }

func (e *CRDMissingError) Error() string {
	return fmt.Sprintf("the cluster does not serve %s nodemodulesconfigs (%v): install the CRD first (kmm/config/crd, or Install)", kmmv1beta1.GroupVersion, e.Err)
}

func (e *CRDMissingError) Unwrap() error { return e.Err }

// CheckCRD returns a *CRDMissingError unless the cluster serves the
// NodeModulesConfig resource. It uses discovery, which every
// authenticated identity may read.
func CheckCRD(cfg *rest.Config) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	list, err := dc.ServerResourcesForGroupVersion(kmmv1beta1.GroupVersion.String())
	if err != nil {
		if apierrors.IsNotFound(err) {
			return &CRDMissingError{Err: err}
		}
		return fmt.Errorf("look up %s: %w", kmmv1beta1.GroupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == "nodemodulesconfigs" {
			return nil
		}
	}
	return &CRDMissingError{Err: fmt.Errorf("group %s serves no nodemodulesconfigs", kmmv1beta1.GroupVersion)}
}
