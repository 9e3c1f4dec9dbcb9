package kmm_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
