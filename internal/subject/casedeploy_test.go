package subject

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/bootproof/bootproof/kmm"
	"github.com/bootproof/bootproof/scenarios"
)

// TestCaseDeploymentObjects: what 'calibrate --cluster kind' deploys in a
// case is the variant scoped to the case (its namespace, its nodes'
// labels), under a service account bound to the RBAC manifest's roles
// only, with leader election as in-process (off unless the variant turns
// it on); two-replicas is two pods keeping the Lease. Golden files: testdata/casedeploy-<variant>.yaml (-update).
func TestCaseDeploymentObjects(t *testing.T) {
	req := scenarios.SubjectRequest{Namespace: "bp-case-1", Selector: map[string]string{"bootproof.dev/case": "c1", "a.example/z": "y"}}
	rbac, err := kmm.RBACObjects([]string{req.Namespace}, req.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	var bindings int
	for _, u := range rbac {
		if strings.HasSuffix(u.GetKind(), "Binding") {
			bindings++
		}
	}
	for _, tc := range []struct {
		variant  string
		replicas int64
		args     []string // beyond kmm and the scoping flags
	}{
		{"lease-kept", 1, []string{"--variant=lease-kept", "--leader-elect=false"}},
		{"no-reload", 1, []string{"--variant=no-reload", "--leader-elect=false"}},
		{"two-replicas", 2, []string{"--leader-elect", "--leader-elect-keep-lease"}},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			objs, err := CaseDeploymentObjects(tc.variant, "bootproof.local/bootproof:dev", req)
			if err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			var dep *unstructured.Unstructured
			var sas, bound int
			for _, u := range objs {
				b, err := yaml.Marshal(u.Object)
				if err != nil {
					t.Fatal(err)
				}
				got.WriteString("---\n")
				got.Write(b)
				switch u.GetKind() {
				case "Deployment":
					dep = u
				case "ServiceAccount":
					sas++
				case "RoleBinding", "ClusterRoleBinding":
					bound++
					subs, _, _ := unstructured.NestedSlice(u.Object, "subjects")
					want := map[string]any{"kind": "ServiceAccount", "name": CaseOperatorName, "namespace": req.Namespace}
					if len(subs) != 1 || !equalMaps(subs[0].(map[string]any), want) {
						t.Errorf("%s %s binds %v, want only the case's service account %v", u.GetKind(), u.GetName(), subs, want)
					}
					if u.GetNamespace() != req.Namespace && !strings.HasSuffix(u.GetName(), "-"+req.Namespace) {
						t.Errorf("%s %s/%s outside the case's namespace is not named after it: two cases would share it", u.GetKind(), u.GetNamespace(), u.GetName())
					}
					for _, r := range rbac {
						if r.GetKind() == u.GetKind() && r.GetNamespace() == u.GetNamespace() && r.GetName() == u.GetName() {
							t.Errorf("%s %s/%s has the name of kmm.Install's binding: applying it would meet an object bootproof did not create", u.GetKind(), u.GetNamespace(), u.GetName())
						}
					}
				default:
					t.Errorf("unexpected %s %s: the roles are kmm.Install's, nothing else belongs to a case", u.GetKind(), u.GetName())
				}
			}
			if sas != 1 || bound != bindings || dep == nil {
				t.Fatalf("service accounts %d (want 1), bindings %d (want the manifest's %d), deployment %v", sas, bound, bindings, dep != nil)
			}
			if r, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); r != tc.replicas {
				t.Errorf("replicas %d, want %d", r, tc.replicas)
			}
			cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
			var args []string
			for _, a := range cs[0].(map[string]any)["args"].([]any) {
				args = append(args, a.(string))
			}
			want := append([]string{"kmm"}, tc.args...)
			want = append(want, "--leader-election-namespace=bp-case-1", "--leader-election-id="+CaseOperatorName,
				"--worker-namespace=bp-case-1", "--selector=a.example/z=y,bootproof.dev/case=c1")
			if !slices.Equal(args, want) {
				t.Errorf("args\n  %q\nwant\n  %q", args, want)
			}
			golden := filepath.Join("testdata", "casedeploy-"+tc.variant+".yaml")
			if *update {
				if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			wantText, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run TestCaseDeploymentObjects -update writes it)", err)
			}
			if got.String() != string(wantText) {
				t.Errorf("objects differ from %s (-update rewrites it):\n%s", golden, got.String())
			}
		})
	}
	if _, err := CaseDeploymentObjects("slow", "img", req); err == nil || !strings.Contains(err.Error(), "lease-kept") {
		t.Errorf("unknown variant: error %v, want one listing the accepted variants", err)
	}
}

func equalMaps(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
