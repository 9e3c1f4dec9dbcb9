package scenarios

import (
	"encoding/json"
	"testing"

	"github.com/bootproof/bootproof/contract"
)

// The builder writes every field upstream's schema requires, explicitly,
// and nothing the engine does not set.
func TestNMCBuilder(t *testing.T) {
	b := NMCBuilder{Namespace: "bp-abc123", KernelVersion: "6.1.0-28-amd64", Labels: map[string]string{contract.CaseLabel: "abc123"}}
	n := b.Build("n0", []Module{{Name: "dummy", ModuleName: "dummy"}, {Name: "with-order", ModuleName: "with_order", LoadingOrder: []string{"with_order", "dep"}}})
	b.Labels[contract.CaseLabel] = "changed" // the object keeps its own copy
	u, err := n.Unstructured()
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"kmm.sigs.x-k8s.io/v1beta1","kind":"NodeModulesConfig","metadata":{"labels":{"` + contract.CaseLabel + `":"abc123"},"name":"n0"},` +
		`"spec":{"modules":[` +
		`{"config":{"containerImage":"example.invalid/bootproof/dummy:6.1.0-28-amd64","imagePullPolicy":"IfNotPresent","insecurePull":false,"kernelVersion":"6.1.0-28-amd64","modprobe":{"moduleName":"dummy"}},` +
		`"name":"dummy","namespace":"bp-abc123","serviceAccountName":"default","tolerations":[{"effect":"NoSchedule","key":"bootproof.dev/simulated","operator":"Exists"},{"effect":"NoExecute","key":"bootproof.dev/simulated","operator":"Exists"}]},` +
		`{"config":{"containerImage":"example.invalid/bootproof/with-order:6.1.0-28-amd64","imagePullPolicy":"IfNotPresent","insecurePull":false,"kernelVersion":"6.1.0-28-amd64","modprobe":{"moduleName":"with_order","modulesLoadingOrder":["with_order","dep"]}},` +
		`"name":"with-order","namespace":"bp-abc123","serviceAccountName":"default","tolerations":[{"effect":"NoSchedule","key":"bootproof.dev/simulated","operator":"Exists"},{"effect":"NoExecute","key":"bootproof.dev/simulated","operator":"Exists"}]}]}}`
	if string(got) != want {
		t.Errorf("NodeModulesConfig\n got %s\nwant %s", got, want)
	}
	// No modules is an empty list, not a missing field.
	u, err = b.Build("n0", nil).Unstructured()
	if err != nil {
		t.Fatal(err)
	}
	if mods, ok := u.Object["spec"].(map[string]any)["modules"].([]any); !ok || mods == nil || len(mods) != 0 {
		t.Errorf("empty spec.modules: %v", u.Object["spec"])
	}
}
