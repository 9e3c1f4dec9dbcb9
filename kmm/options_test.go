package kmm_test

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/bootproof/bootproof/kmm"
)

func TestOptionsDefault(t *testing.T) {
	o := kmm.Options{}.Default()
	if o.Detector != "bootid" || o.RecordBootFrom != "worker" || o.LeaderElectionNamespace != "default" ||
		o.LeaderElectionID != "bootproof-kmm" || o.MetricsBindAddress != "0" || o.Clock == nil || o.LeaderElection ||
		o.QPS != kmm.DefaultQPS || o.Burst != kmm.DefaultBurst || o.MaxConcurrentReconciles != kmm.DefaultMaxConcurrentReconciles || o.Replicas != 1 {
		t.Errorf("defaults = %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}

// The detector, boot-source and leader-election variants set those
// options; "none" is the correct reconciler.
func TestOptionsVariant(t *testing.T) {
	for _, tc := range []struct {
		variant, detector, bootFrom, wantVariant string
		leader, keepLease                        bool
		replicas                                 int
	}{
		{"none", "bootid", "worker", "", false, false, 1},
		{"legacy-detector", "legacy", "worker", "legacy-detector", false, false, 1},
		{"boot-from-node", "bootid", "node", "boot-from-node", false, false, 1},
		{"slow-start", "bootid", "worker", "slow-start", true, false, 1},
		{"lease-kept", "bootid", "worker", "lease-kept", true, true, 1},
		{"two-replicas", "bootid", "worker", "two-replicas", true, true, 2},
		{"no-reload", "bootid", "worker", "no-reload", false, false, 1},
	} {
		o := kmm.Options{Variant: tc.variant}.Default()
		if o.Detector != tc.detector || o.RecordBootFrom != tc.bootFrom || o.Variant != tc.wantVariant || o.LeaderElection != tc.leader ||
			o.KeepLeaderLease != tc.keepLease || o.Replicas != tc.replicas {
			t.Errorf("variant %s: detector %s, boot from %s, variant %q, leader election %v, Lease kept %v, %d replicas", tc.variant, o.Detector, o.RecordBootFrom,
				o.Variant, o.LeaderElection, o.KeepLeaderLease, o.Replicas)
		}
		if err := o.Validate(); err != nil {
			t.Errorf("variant %s: %v", tc.variant, err)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		o    kmm.Options
		want []string
	}{
		{"unknown detector", kmm.Options{Detector: "ready"}, []string{"Detector", `"ready"`, "bootid", "legacy"}},
		{"unknown boot source", kmm.Options{RecordBootFrom: "lease"}, []string{"RecordBootFrom", `"lease"`, "worker", "node"}},
		{"bad worker namespace", kmm.Options{WorkerNamespaces: []string{"Kmm_System"}}, []string{"WorkerNamespaces[0]", "Kmm_System"}},
		{"negative burst", kmm.Options{Burst: -1}, []string{"Burst", `"-1"`, "1 or more"}},
		{"bad leader election namespace", kmm.Options{LeaderElection: true, LeaderElectionNamespace: "a/b"}, []string{"LeaderElectionNamespace"}},
		{"a Lease kept without leader election", kmm.Options{KeepLeaderLease: true}, []string{"KeepLeaderLease", "without leader election"}},
		{"replicas without leader election", kmm.Options{Replicas: 2}, []string{"Replicas", `"2"`, "without leader election"}},
		{"too many replicas", kmm.Options{Replicas: 9, LeaderElection: true}, []string{"Replicas", `"9"`, "1 to 5"}},
		{"negative replicas", kmm.Options{Replicas: -1}, []string{"Replicas", `"-1"`, "1 to 5"}},
		{"unknown variant", kmm.Options{Variant: "slow"}, []string{"Variant", `"slow"`, "none", "no-reload", "slow-start"}},
		{"a variant with a second defect", kmm.Options{Variant: "no-reload", Detector: "legacy"}, []string{"Detector", `"legacy"`, "exactly one defect"}},
		{"a variant with the node boot source", kmm.Options{Variant: "two-workers", RecordBootFrom: "node"}, []string{"RecordBootFrom", "exactly one defect"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Default().Validate()
			var oe *kmm.OptionsError
			if !errors.As(err, &oe) {
				t.Fatalf("Validate = %v, want an *OptionsError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestRBACObjects(t *testing.T) {
	objs, err := kmm.RBACObjects([]string{"mods-a", "mods-b"}, "kmm-system")
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		byKey[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = u
		if strings.Contains(u.GetNamespace(), "BOOTPROOF") {
			t.Errorf("%s %s: placeholder namespace left", u.GetKind(), u.GetName())
		}
	}
	for _, k := range []string{
		"ClusterRole//bootproof-kmm", "ClusterRoleBinding//bootproof-kmm", "ClusterRole//bootproof-kmm-worker",
		"RoleBinding/mods-a/bootproof-kmm-worker", "RoleBinding/mods-b/bootproof-kmm-worker",
		"Role/kmm-system/bootproof-kmm-leader-election", "RoleBinding/kmm-system/bootproof-kmm-leader-election",
		"RoleBinding/default/bootproof-kmm-events", "RoleBinding/kmm-system/bootproof-kmm-events",
	} {
		if byKey[k] == nil {
			t.Errorf("missing %s", k)
		}
	}
	if byKey["ClusterRoleBinding//bootproof-kmm-worker"] != nil {
		t.Error("worker pod permissions bound cluster-wide although worker namespaces were given")
	}
	// No worker namespaces: the worker permissions are bound cluster-wide.
	objs, err = kmm.RBACObjects(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, u := range objs {
		if u.GetKind() == "ClusterRoleBinding" && u.GetName() == "bootproof-kmm-worker" {
			found = true
		}
		if u.GetKind() == "RoleBinding" && u.GetName() == "bootproof-kmm-worker" {
			t.Errorf("worker RoleBinding in %q without worker namespaces", u.GetNamespace())
		}
		if u.GetName() == "bootproof-kmm-leader-election" && u.GetNamespace() != "default" {
			t.Errorf("leader election %s in %q, want default", u.GetKind(), u.GetNamespace())
		}
	}
	if !found {
		t.Error("no cluster-wide binding of the worker pod permissions")
	}
}

func TestCRDObjects(t *testing.T) {
	objs, err := kmm.CRDObjects()
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 {
		t.Fatalf("%d CRDs, want 1", len(objs))
	}
	crd := objs[0]
	for path, want := range map[string]any{
		"metadata.name":       "nodemodulesconfigs.kmm.sigs.x-k8s.io",
		"spec.group":          "kmm.sigs.x-k8s.io",
		"spec.scope":          "Cluster",
		"spec.names.kind":     "NodeModulesConfig",
		"spec.names.plural":   "nodemodulesconfigs",
		"spec.names.listKind": "NodeModulesConfigList",
	} {
		got, _, _ := unstructured.NestedFieldNoCopy(crd.Object, strings.Split(path, ".")...)
		if got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	short, _, _ := unstructured.NestedStringSlice(crd.Object, "spec", "names", "shortNames")
	if len(short) != 1 || short[0] != "nmc" {
		t.Errorf("shortNames = %v, want [nmc]", short)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if len(versions) != 1 {
		t.Fatalf("versions = %v", versions)
	}
	v := versions[0].(map[string]any)
	if v["name"] != "v1beta1" {
		t.Errorf("version = %v", v["name"])
	}
	if _, ok, _ := unstructured.NestedMap(v, "subresources", "status"); !ok {
		t.Error("no status subresource")
	}
	for _, field := range []string{"bootId", "lastTransitionTime", "config"} {
		if _, ok, _ := unstructured.NestedMap(v, "schema", "openAPIV3Schema", "properties", "status", "properties", "modules", "items", "properties", field); !ok {
			t.Errorf("status.modules[] has no %s", field)
		}
	}
}
