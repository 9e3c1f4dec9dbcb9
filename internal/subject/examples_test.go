package subject

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/bootproof/bootproof/kmm"
	"github.com/bootproof/bootproof/scenarios"
)

// grants lists every (group, resource, verb) the Roles and ClusterRoles
// among objs allow.
func grants(t *testing.T, data []byte, source string) []string {
	t.Helper()
	objs, err := kmm.DecodeObjects(data, source)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range objs {
		if u.GetKind() != "ClusterRole" && u.GetKind() != "Role" {
			continue
		}
		var role rbacv1.ClusterRole // a Role's rules have the same shape
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &role); err != nil {
			t.Fatalf("%s: %s %s: %v", source, u.GetKind(), u.GetName(), err)
		}
		for _, r := range role.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						out = append(out, g+"/"+res+":"+v)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestDeployExamplesGrantKMMRules: the Deployments in examples/deploy/ hold
// exactly the rules of the reconciler's least-privilege RBAC
// (kmm/config/rbac/rbac.yaml), no more and no fewer.
func TestDeployExamplesGrantKMMRules(t *testing.T) {
	want := grants(t, mustRead(t, "../../kmm/config/rbac/rbac.yaml"), "rbac.yaml")
	if len(want) < 10 {
		t.Fatalf("kmm's RBAC grants only %v", want)
	}
	files, _ := filepath.Glob("../../examples/deploy/*.yaml")
	if len(files) != 2 {
		t.Fatalf("examples/deploy holds %v, want the bootid and legacy Deployments", files)
	}
	for _, f := range files {
		got := grants(t, mustRead(t, f), f)
		if !slices.Equal(got, want) {
			t.Errorf("%s grants %v\nkmm/config/rbac/rbac.yaml grants %v", f, got, want)
		}
	}
}

// TestDeploymentSubjectFiles: the deployment subject files decode, name
// their Deployment, and expect of every catalog scenario what the process
// version of the same reconciler expects.
func TestDeploymentSubjectFiles(t *testing.T) {
	catalog, err := scenarios.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, detector := range []string{"bootid", "legacy"} {
		dep, err := ReadFile("../../examples/subjects/bootproof-"+detector+"-deployment.yaml", testLookup)
		if err != nil {
			t.Fatal(err)
		}
		exe, err := ReadFile("../../examples/subjects/bootproof-"+detector+".yaml", testLookup)
		if err != nil {
			t.Fatal(err)
		}
		if dep.Deployment == nil || dep.Deployment.Namespace != "bootproof-"+detector || dep.Deployment.Name != "bootproof-kmm" || len(dep.Manifests) != 1 {
			t.Errorf("%s: %+v", dep.Path, dep.Deployment)
		}
		for _, s := range catalog {
			de, _ := dep.Expectation(s)
			ee, _ := exe.Expectation(s)
			if de.String() != ee.String() {
				t.Errorf("%s: %s expects %s of the Deployment and %s of the process", detector, s.Name, de, ee)
			}
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
