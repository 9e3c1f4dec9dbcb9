package kmm_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The CRD requires what upstream KMM's requires, so a writer (the
// engine, a test) that leaves one out fails here as it would against
// upstream's: in spec.modules[] name, namespace, serviceAccountName and
// config; in config containerImage, insecurePull, kernelVersion and
// modprobe; in status.modules[] name, namespace, serviceAccountName and
// config.
func TestCRDRequiresUpstreamFields(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	entry := func() map[string]any {
		return map[string]any{"name": "dummy", "namespace": workerNS, "serviceAccountName": "default",
			"config": map[string]any{"kernelVersion": "6.1.0", "containerImage": "example.invalid/dummy:6.1.0", "insecurePull": false,
				"modprobe": map[string]any{"moduleName": "dummy"}}}
	}
	nmc := func(modules ...any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "NodeModulesConfig",
			"metadata": map[string]any{"name": "crd-required-fields"}, "spec": map[string]any{"modules": modules}}}
		return u
	}
	if err := e.admin.Create(ctx, nmc(entry()), client.DryRunAll); err != nil {
		t.Fatalf("a complete entry is rejected: %v", err)
	}
	for _, path := range [][]string{{"name"}, {"namespace"}, {"serviceAccountName"}, {"config"},
		{"config", "containerImage"}, {"config", "insecurePull"}, {"config", "kernelVersion"}, {"config", "modprobe"}} {
		m := entry()
		unstructured.RemoveNestedField(m, path...)
		err := e.admin.Create(ctx, nmc(m), client.DryRunAll)
		field := path[len(path)-1]
		if err == nil || !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), "Required value") {
			t.Errorf("spec entry without %s: %v, want it required", strings.Join(path, "."), err)
		}
	}
	// Status entries: write one through the status subresource.
	obj := nmc(entry())
	obj.SetName("crd-required-status")
	if err := e.admin.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.admin.Delete(ctx, obj) }()
	for _, field := range []string{"name", "namespace", "serviceAccountName", "config"} {
		st := entry()
		delete(st, field)
		u := obj.DeepCopy()
		u.Object["status"] = map[string]any{"modules": []any{st}}
		err := e.admin.Status().Update(ctx, u, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), "Required value") {
			t.Errorf("status entry without %s: %v, want it required", field, err)
		}
	}
}
