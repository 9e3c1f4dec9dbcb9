package runner_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/internal/subject"
	"github.com/bootproof/bootproof/scenarios"
)

// TestCatalogObjectsUnderUpstreamSchema installs a NodeModulesConfig CRD
// shaped like upstream KMM's (insecurePull, serviceAccountName and the
// rest required) and has the API server validate (dry run) every
// NodeModulesConfig the engine writes for every catalog scenario: at the
// start and after each action that changes the spec. It also checks that
// this CRD rejects an entry without insecurePull, so the check can fail.
func TestCatalogObjectsUnderUpstreamSchema(t *testing.T) {
	cp := cptest.Start(t, controlplane.Config{GracePeriod: 10 * time.Second, MonitorPeriod: time.Second})
	ctx := context.Background()
	if _, err := subject.ApplyFiles(ctx, cp.RESTConfig(), subject.ApplyOptions{CRDs: []string{"../testdata/crds/upstream"}}); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	create := func(u *unstructured.Unstructured) error {
		_, err := dyn.Resource(contract.NMCResource).Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	all, err := scenarios.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, s := range all {
		kernel := "6.1.0-28-amd64"
		mods := s.Modules
		check := func(when string) {
			b := scenarios.NMCBuilder{Namespace: "bp-abc123", KernelVersion: kernel, Labels: map[string]string{contract.CaseLabel: "abc123"}}
			u, err := b.Build("bp-abc123-n0", mods).Unstructured()
			if err != nil {
				t.Fatalf("%s %s: %v", s.Name, when, err)
			}
			if err := create(u); err != nil {
				t.Errorf("%s, %s: the upstream-shaped CRD rejects the NodeModulesConfig: %v", s.Name, when, err)
			}
			checked++
		}
		check("at the start")
		for i, a := range s.Actions {
			switch a.Kind {
			case scenarios.ActAddModule, scenarios.ActRemoveModule:
				mods = scenarios.ApplySpecAction(mods, a)
			case scenarios.ActUpdateKernel:
				kernel = "6.1.0-29-amd64"
			default:
				continue
			}
			check(fmt.Sprintf("after actions[%d] %s", i, a.Kind))
		}
	}
	t.Logf("%d NodeModulesConfigs of %d scenarios accepted", checked, len(all))

	b := scenarios.NMCBuilder{Namespace: "bp-abc123", KernelVersion: "6.1.0-28-amd64"}
	u, err := b.Build("bp-abc123-n0", []scenarios.Module{{Name: "dummy", ModuleName: "dummy"}}).Unstructured()
	if err != nil {
		t.Fatal(err)
	}
	entries, _, _ := unstructured.NestedSlice(u.Object, "spec", "modules")
	unstructured.RemoveNestedField(entries[0].(map[string]any), "config", "insecurePull")
	if err := unstructured.SetNestedSlice(u.Object, entries, "spec", "modules"); err != nil {
		t.Fatal(err)
	}
	err = create(u)
	if err == nil || !strings.Contains(err.Error(), "insecurePull") || !strings.Contains(err.Error(), "Required value") {
		t.Errorf("an entry without insecurePull: %v, want the API server to require it", err)
	}
}
