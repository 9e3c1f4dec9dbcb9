package subject

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func readCRD(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	objs, err := readManifests([]string{path})
	if err != nil || len(objs) != 1 {
		t.Fatalf("%s: %d objects, %v", path, len(objs), err)
	}
	return objs[0].obj
}

// TestCompareCRD: what a cluster's NodeModulesConfig CRD lacks of
// bootproof's is named field by field; fields the file marks optional are
// listed apart; a CRD compared with itself lacks nothing.
func TestCompareCRD(t *testing.T) {
	own := readCRD(t, "../../kmm/config/crd")
	upstream := readCRD(t, "../testdata/crds/upstream")
	preBoot := readCRD(t, "../testdata/crds/upstream-pre-bootid")
	noStatus := upstream.DeepCopy()
	vs, _, _ := unstructured.NestedSlice(noStatus.Object, "spec", "versions")
	delete(vs[0].(map[string]any), "subresources")
	_ = unstructured.SetNestedSlice(noStatus.Object, vs, "spec", "versions")
	otherVersion := upstream.DeepCopy()
	vs, _, _ = unstructured.NestedSlice(otherVersion.Object, "spec", "versions")
	vs[0].(map[string]any)["name"] = "v1"
	_ = unstructured.SetNestedSlice(otherVersion.Object, vs, "spec", "versions")
	const ltt = "status.modules[].lastTransitionTime"
	for _, tc := range []struct {
		name        string
		cur         *unstructured.Unstructured
		optional    []string
		fields, opt []string
		versions    []string
		wantNone    bool
	}{
		{name: "itself", cur: own, wantNone: true},
		{name: "upstream", cur: upstream, fields: []string{"v1beta1: " + ltt}},
		{name: "upstream, time optional", cur: upstream, optional: []string{ltt}, opt: []string{"v1beta1: " + ltt}, wantNone: true},
		{name: "before boot IDs, time optional", cur: preBoot, optional: []string{ltt}, fields: []string{"v1beta1: status.modules[].bootId"}},
		{name: "no status subresource", cur: noStatus, optional: []string{ltt}, fields: []string{"v1beta1: the status subresource"}, opt: []string{"v1beta1: " + ltt}},
		{name: "another version", cur: otherVersion, versions: []string{"v1beta1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := compareCRD(tc.cur, own, tc.optional)
			if !slices.Equal(l.Fields, tc.fields) || !slices.Equal(l.Optional, tc.opt) || !slices.Equal(l.Versions, tc.versions) || l.none() != tc.wantNone {
				t.Errorf("lacks %+v (none %v), want fields %v, optional %v, versions %v", l, l.none(), tc.fields, tc.opt, tc.versions)
			}
		})
	}
	if !declares(own, ltt) || !declares(own, "spec.modules[].config.modprobe.moduleName") || declares(upstream, ltt) || declares(own, "status.modules[].nope") {
		t.Error("declares: wrong about bootproof's or upstream's CRD")
	}
}
