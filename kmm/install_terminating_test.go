package kmm_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/kmm"
)

// TestInstallWaitsForATerminatingCRD: an Install that finds the CRD an
// earlier Install created still being deleted (the end of the last run
// removes it; its NodeModulesConfigs' finalizers hold it) waits until it
// is gone and creates it again, rather than taking the dying CRD for
// installed and leaving the case with no NodeModulesConfig API.
func TestInstallWaitsForATerminatingCRD(t *testing.T) {
	cptest.RequireBinaries(t)
	cp := cptest.Start(t, controlplane.Config{GracePeriod: 10 * time.Minute, MonitorPeriod: time.Second})
	ctx := context.Background()
	c, err := client.New(cp.RESTConfig(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"test.bootproof.dev/created": "true"}
	opts := kmm.InstallOptions{WorkerNamespaces: []string{"default"}, LeaderElectionNamespace: "default", CreatedLabels: labels}
	if err := kmm.Install(ctx, cp.RESTConfig(), opts); err != nil {
		t.Fatal(err)
	}
	crds, err := kmm.CRDObjects()
	if err != nil {
		t.Fatal(err)
	}
	crd := crds[0]
	// A NodeModulesConfig with a finalizer keeps the deleted CRD
	// terminating until the finalizer goes.
	nmc := &unstructured.Unstructured{}
	nmc.SetGroupVersionKind(schema.GroupVersionKind{Group: "kmm.sigs.x-k8s.io", Version: "v1beta1", Kind: "NodeModulesConfig"})
	nmc.SetName("held")
	nmc.SetFinalizers([]string{"test.bootproof.dev/hold"})
	if err := c.Create(ctx, nmc); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, crd.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	installed := make(chan error, 1)
	go func() { installed <- kmm.Install(ctx, cp.RESTConfig(), opts) }()
	select {
	case err := <-installed:
		t.Fatalf("Install returned (%v) while the CRD was still terminating", err)
	case <-time.After(3 * time.Second):
	}
	// Release the finalizer: the CRD goes, and Install creates it anew.
	if err := c.Get(ctx, client.ObjectKeyFromObject(nmc), nmc); err != nil {
		t.Fatal(err)
	}
	nmc.SetFinalizers(nil)
	if err := c.Update(ctx, nmc); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-installed:
		if err != nil {
			t.Fatalf("Install after the CRD was gone: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Install still waits two minutes after the CRD went")
	}
	got := crd.DeepCopy()
	if err := c.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
		t.Fatalf("the CRD after Install: %v", err)
	}
	if got.GetDeletionTimestamp() != nil {
		t.Fatalf("Install left the terminating CRD (deleted at %v)", got.GetDeletionTimestamp())
	}
	if err := kmm.WaitEstablished(ctx, c, got.GetName(), time.Minute); err != nil {
		t.Fatal(err)
	}
	// The API is served: a NodeModulesConfig can be created again.
	again := nmc.DeepCopy()
	again.SetResourceVersion("")
	again.SetUID("")
	again.SetFinalizers(nil)
	if err := c.Create(ctx, again); err != nil {
		t.Fatalf("create a NodeModulesConfig after Install: %v", err)
	}
}
