package scenarios

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/kmm"
)

// refuse-writes on a real API server refuses exactly the writes a subject
// makes for the targeted nodes of the case (worker pods' creates, updates
// and deletes, the NodeModulesConfig status) and nothing the harness, the
// kubelets or another case write, for each choice of writes;
// allow-writes lifts it.
func TestRefusalRefusesOnlyTheSubjectsWritesOfTheCase(t *testing.T) {
	cp := cptest.Start(t, controlplane.Config{})
	rc := cp.RESTConfig()
	cs := kubernetes.NewForConfigOrDie(rc)
	dyn := dynamic.NewForConfigOrDie(rc)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	crds, err := kmm.CRDObjects()
	if err != nil {
		t.Fatal(err)
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, u := range crds {
		if _, err := dyn.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	nmcs := dyn.Resource(contract.NMCResource)
	for _, n := range []string{"n0", "n1"} {
		nmc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": contract.NMCResource.GroupVersion().String(), "kind": contract.NMCKind,
			"metadata": map[string]any{"name": n}, "spec": map[string]any{}}}
		eventually(t, ctx, "create NodeModulesConfig "+n, func() error { _, err := nmcs.Create(ctx, nmc, metav1.CreateOptions{}); return err })
	}
	for _, ns := range []string{"case", "other"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, ctx, "service account "+ns+"/default", func() error {
			_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
			return err
		})
	}
	pod := func(ns, node string, worker bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "p-", Namespace: ns, Labels: map[string]string{}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}}}
		if worker {
			p.Labels[contract.WorkerActionLabel] = contract.ActionLoad
		}
		return p
	}
	// A worker pod from before the refusal, to update and delete, and one
	// being deleted (a finalizer keeps it), whose final delete is the
	// kubelet's.
	existing, err := cs.CoreV1().Pods("case").Create(ctx, pod("case", "n0", true), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held := pod("case", "n0", true)
	held.Finalizers = []string{"x.dev/f"}
	if held, err = cs.CoreV1().Pods("case").Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods("case").Delete(ctx, held.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.CoreV1().Pods("case").Patch(context.Background(), held.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})

	c := &caseRun{cs: cs, dyn: dyn, id: "t1", ns: "case", names: []string{"n0", "n1"}}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	dryPatch := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	dryDelete := metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	statusPatch := []byte(`{"status":{"modules":[]}}`)

	// Each write, and the value of writes that refuses it ("" none,
	// "probe" every refusal).
	writes := []struct {
		name  string
		write func() error
		by    string
	}{
		{"create a worker pod on a targeted node", func() error {
			_, err := cs.CoreV1().Pods("case").Create(ctx, pod("case", "n0", true), dry)
			return err
		}, WritesPods},
		{"update a worker pod (its finalizers)", func() error {
			_, err := cs.CoreV1().Pods("case").Patch(ctx, existing.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":["x.dev/f"]}}`), dryPatch)
			return err
		}, WritesPods},
		{"delete a worker pod (the subject's release)", func() error {
			return cs.CoreV1().Pods("case").Delete(ctx, existing.Name, dryDelete)
		}, WritesPodDeletes},
		{"write the status of a targeted node's NodeModulesConfig", func() error {
			_, err := nmcs.Patch(ctx, "n0", types.MergePatchType, statusPatch, dryPatch, "status")
			return err
		}, WritesStatus},
		{"create a worker pod on another node", func() error {
			_, err := cs.CoreV1().Pods("case").Create(ctx, pod("case", "n1", true), dry)
			return err
		}, ""},
		{"create a pod that is no worker", func() error {
			_, err := cs.CoreV1().Pods("case").Create(ctx, pod("case", "n0", false), dry)
			return err
		}, ""},
		{"create a worker pod in another namespace", func() error {
			_, err := cs.CoreV1().Pods("other").Create(ctx, pod("other", "n0", true), dry)
			return err
		}, ""},
		{"the kubelet writes the worker pod's status", func() error {
			_, err := cs.CoreV1().Pods("case").Patch(ctx, existing.Name, types.MergePatchType, []byte(`{"status":{"message":"m"}}`), dryPatch, "status")
			return err
		}, ""},
		{"the kubelet's final delete of a worker pod being deleted", func() error {
			return cs.CoreV1().Pods("case").Delete(ctx, held.Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}, GracePeriodSeconds: new(int64)})
		}, ""},
		{"the harness writes the NodeModulesConfig's spec", func() error {
			_, err := nmcs.Patch(ctx, "n0", types.MergePatchType, []byte(`{"metadata":{"annotations":{"a":"b"}}}`), dryPatch)
			return err
		}, ""},
		{"write another node's NodeModulesConfig status", func() error {
			_, err := nmcs.Patch(ctx, "n1", types.MergePatchType, statusPatch, dryPatch, "status")
			return err
		}, ""},
		{"create the probe ConfigMap", func() error {
			_, err := cs.CoreV1().ConfigMaps("case").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: c.refusalName()}}, dry)
			return err
		}, "probe"},
		{"create another ConfigMap", func() error {
			_, err := cs.CoreV1().ConfigMaps("case").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, dry)
			return err
		}, ""},
	}

	for _, refused := range [][]string{nil, {WritesPods}, {WritesPodDeletes}, {WritesStatus}, {WritesPods, WritesStatus}} {
		policy, binding := refusalPolicy(c.refusalName(), "case", []string{"n0"}, refused, c.selector())
		if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := c.probeRefusal(ctx, true); err != nil {
			t.Fatal(err)
		}
		for _, w := range writes {
			want := w.by == "probe" || (w.by != "" && (len(refused) == 0 || slices.Contains(refused, w.by)))
			err := w.write()
			switch {
			case want && !apierrors.IsForbidden(err):
				t.Errorf("writes %v: %s: got %v, want it refused (Forbidden)", refused, w.name, err)
			case !want && err != nil:
				t.Errorf("writes %v: %s: refused: %v", refused, w.name, err)
			}
		}
		if err := c.deleteRefusal(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.probeRefusal(ctx, false); err != nil {
			t.Fatal(err)
		}
		for _, w := range writes {
			if err := w.write(); err != nil {
				t.Errorf("writes %v: %s, once the refusal is lifted: %v", refused, w.name, err)
			}
		}
		if l, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
			t.Errorf("policies left after deleteRefusal: %v %v", l, err)
		}
	}
}

// eventually retries f every 100 ms until it succeeds or ctx ends.
func eventually(t *testing.T, ctx context.Context, what string, f func() error) {
	t.Helper()
	for {
		err := f()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
