package kmm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/kmm"
)

// TestInstallLabelsOnlyWhatItCreates: CreatedLabels go on the objects an
// Install creates (the Role and RoleBindings of a new namespace), never
// on one that was there before (the CRD and cluster roles the shared
// environment installed), and survive a second Install.
func TestInstallLabelsOnlyWhatItCreates(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	const ns = "install-labels"
	if err := e.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"example.com/installed-by": "test"}
	for range 2 {
		if err := kmm.Install(ctx, e.cp.RESTConfig(), kmm.InstallOptions{WorkerNamespaces: []string{ns}, LeaderElectionNamespace: ns, CreatedLabels: labels}); err != nil {
			t.Fatal(err)
		}
	}
	crds, err := kmm.CRDObjects()
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crds[0].GroupVersionKind())
	if err := e.admin.Get(ctx, client.ObjectKey{Name: crds[0].GetName()}, crd); err != nil {
		t.Fatal(err)
	}
	if _, ok := crd.GetLabels()["example.com/installed-by"]; ok {
		t.Errorf("CRD %s that was there before got the label: %v", crd.GetName(), crd.GetLabels())
	}
	rbac, err := kmm.RBACObjects([]string{ns}, ns)
	if err != nil {
		t.Fatal(err)
	}
	created := 0
	for _, u := range rbac {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(u.GroupVersionKind())
		if err := e.admin.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
			t.Fatal(err)
		}
		_, has := got.GetLabels()["example.com/installed-by"]
		if u.GetNamespace() == ns {
			created++
			if !has {
				t.Errorf("%s %s/%s created by the Install lacks the label: %v", u.GetKind(), ns, u.GetName(), got.GetLabels())
			}
		} else if has && u.GetKind() == "ClusterRole" {
			t.Errorf("ClusterRole %s that was there before got the label", u.GetName())
		}
	}
	if created == 0 {
		t.Fatal("the manifest has no objects in the worker namespace")
	}
}

// TestInstallLeavesForeignObjects: on a cluster where another installer
// made the NodeModulesConfig CRD (upstream KMM's) Install never applies
// over it: it uses it unchanged when it serves bootproof's versions, and
// refuses, naming it, when it does not; an RBAC object of the same name
// that Install did not make is refused, unchanged.
func TestInstallLeavesForeignObjects(t *testing.T) {
	cptest.RequireBinaries(t)
	cp := cptest.Start(t, controlplane.Config{GracePeriod: 10 * time.Minute, MonitorPeriod: time.Second})
	ctx := context.Background()
	c, err := client.New(cp.RESTConfig(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	crds, err := kmm.CRDObjects()
	if err != nil {
		t.Fatal(err)
	}
	// Upstream's CRD: same name and version, its own label and a printer
	// column bootproof's does not have, created by another field manager.
	foreign := crds[0].DeepCopy()
	foreign.SetLabels(map[string]string{"app.kubernetes.io/part-of": "kmm"})
	versions, _, _ := unstructured.NestedSlice(foreign.Object, "spec", "versions")
	v0 := versions[0].(map[string]any)
	v0["additionalPrinterColumns"] = []any{map[string]any{"name": "Upstream", "type": "string", "jsonPath": ".metadata.name"}}
	if err := unstructured.SetNestedSlice(foreign.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, foreign, client.FieldOwner("upstream-kmm")); err != nil {
		t.Fatal(err)
	}
	if err := kmm.WaitEstablished(ctx, c, foreign.GetName(), time.Minute); err != nil {
		t.Fatal(err)
	}
	get := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(u.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	before := get(foreign)
	const ns = "foreign"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"example.com/installed-by": "test"}
	if err := kmm.Install(ctx, cp.RESTConfig(), kmm.InstallOptions{WorkerNamespaces: []string{ns}, LeaderElectionNamespace: ns, CreatedLabels: labels}); err != nil {
		t.Fatalf("Install beside upstream's CRD: %v", err)
	}
	if after := get(foreign); after.GetResourceVersion() != before.GetResourceVersion() {
		t.Errorf("upstream's CRD changed: resourceVersion %s -> %s, labels %v", before.GetResourceVersion(), after.GetResourceVersion(), after.GetLabels())
	}

	// A ClusterRole of the manifest's name that somebody else made.
	rbac, err := kmm.RBACObjects([]string{ns}, ns)
	if err != nil {
		t.Fatal(err)
	}
	var role *unstructured.Unstructured
	for _, u := range rbac {
		if u.GetKind() == "ClusterRole" {
			role = u
			break
		}
	}
	if role == nil {
		t.Fatal("the RBAC manifest has no ClusterRole")
	}
	if err := c.Delete(ctx, role.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	theirs := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role.GetName()}}
	if err := c.Create(ctx, theirs, client.FieldOwner("someone")); err != nil {
		t.Fatal(err)
	}
	err = kmm.Install(ctx, cp.RESTConfig(), kmm.InstallOptions{WorkerNamespaces: []string{ns}, LeaderElectionNamespace: ns, CreatedLabels: labels})
	var fe *kmm.ForeignObjectError
	if !errors.As(err, &fe) || fe.Name != role.GetName() {
		t.Errorf("Install over somebody's ClusterRole %s: %v, want a ForeignObjectError naming it", role.GetName(), err)
	}
	if got := get(role); len(got.GetLabels()) != 0 {
		t.Errorf("somebody's ClusterRole got labels %v", got.GetLabels())
	}

	// A CRD of that name that does not serve bootproof's version.
	if err := c.Delete(ctx, foreign.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(foreign), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"}})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatal(err)
	}
	old := crds[0].DeepCopy()
	old.SetResourceVersion("")
	versions, _, _ = unstructured.NestedSlice(old.Object, "spec", "versions")
	versions[0].(map[string]any)["name"] = "v1alpha1"
	if err := unstructured.SetNestedSlice(old.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, old, client.FieldOwner("upstream-kmm")); err != nil {
		t.Fatal(err)
	}
	err = kmm.Install(ctx, cp.RESTConfig(), kmm.InstallOptions{WorkerNamespaces: []string{ns}, LeaderElectionNamespace: ns, CreatedLabels: labels})
	if err == nil || !strings.Contains(err.Error(), old.GetName()) || !strings.Contains(err.Error(), "v1beta1") {
		t.Errorf("Install beside a CRD that does not serve v1beta1: %v, want an error naming it and the version", err)
	}
}
