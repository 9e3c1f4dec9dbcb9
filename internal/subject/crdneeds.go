package subject

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// crdLack is what an existing CRD lacks of the one a subject file asks
// for: what its operator would miss on the cluster.
type crdLack struct {
	// Versions the file's CRD serves and the cluster's does not.
	Versions []string
	// Fields are schema fields ("v1beta1: status.modules[].bootId") the
	// file's CRD has and the cluster's prunes, status subresources
	// included ("v1beta1: the status subresource").
	Fields []string
	// Optional are the lacking fields the file says its operator can do
	// without (crdOptionalFields), apart from Fields.
	Optional []string
}

func (l crdLack) none() bool { return len(l.Versions) == 0 && len(l.Fields) == 0 }

// compareCRD says what cur, a CustomResourceDefinition on the cluster,
// lacks of want, the one a subject file asks for: every version want
// serves must be served, with want's status subresource and every field
// of want's schema (a field under one of cur's
// x-kubernetes-preserve-unknown-fields is kept). optional names fields
// the operator can do without ("status.modules[].lastTransitionTime");
// listed apart.
func compareCRD(cur, want *unstructured.Unstructured, optional []string) crdLack {
	var l crdLack
	curVersions := versionsByName(cur)
	for _, wv := range versionsByName(want) {
		name, _ := wv["name"].(string)
		if served, _ := wv["served"].(bool); !served || name == "" {
			continue
		}
		cv, ok := curVersions[name]
		if served, _ := cv["served"].(bool); !ok || !served {
			l.Versions = append(l.Versions, name)
			continue
		}
		if _, wantStatus, _ := unstructured.NestedMap(wv, "subresources", "status"); wantStatus {
			if _, has, _ := unstructured.NestedMap(cv, "subresources", "status"); !has {
				l.Fields = append(l.Fields, name+": the status subresource")
			}
		}
		ws, _, _ := unstructured.NestedMap(wv, "schema", "openAPIV3Schema")
		cs, _, _ := unstructured.NestedMap(cv, "schema", "openAPIV3Schema")
		for _, f := range lackingFields(ws, cs, "") {
			top := strings.SplitN(f, ".", 2)[0]
			if top == "metadata" || top == "apiVersion" || top == "kind" {
				continue // served for every object, whatever the schema says
			}
			if slices.Contains(optional, f) {
				l.Optional = append(l.Optional, name+": "+f)
				continue
			}
			l.Fields = append(l.Fields, name+": "+f)
		}
	}
	return l
}

// declares reports whether some served version of crd has field p.
func declares(crd *unstructured.Unstructured, p string) bool {
	for _, v := range versionsByName(crd) {
		if s, _, _ := unstructured.NestedMap(v, "schema", "openAPIV3Schema"); hasField(s, p) {
			return true
		}
	}
	return false
}

func versionsByName(u *unstructured.Unstructured) map[string]map[string]any {
	vs, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	out := map[string]map[string]any{}
	for _, v := range vs {
		m, _ := v.(map[string]any)
		if name, _ := m["name"].(string); name != "" {
			out[name] = m
		}
	}
	return out
}

// lackingFields lists the field paths of schema want that schema cur
// does not have, below path: a field missing from cur is listed, its
// children are not.
func lackingFields(want, cur map[string]any, path string) []string {
	if cur == nil || cur["x-kubernetes-preserve-unknown-fields"] == true {
		return nil
	}
	var out []string
	if wi, ok := want["items"].(map[string]any); ok {
		ci, _ := cur["items"].(map[string]any)
		if ci == nil {
			return []string{path + "[]"}
		}
		return lackingFields(wi, ci, path+"[]")
	}
	wp, _ := want["properties"].(map[string]any)
	cp, _ := cur["properties"].(map[string]any)
	names := make([]string, 0, len(wp))
	for k := range wp {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		p := k
		if path != "" {
			p = path + "." + k
		}
		cv, ok := cp[k].(map[string]any)
		if !ok {
			if ap, _ := cur["additionalProperties"].(map[string]any); ap != nil {
				cv = ap
			} else {
				out = append(out, p)
				continue
			}
		}
		wv, _ := wp[k].(map[string]any)
		out = append(out, lackingFields(wv, cv, p)...)
	}
	return out
}

// hasField reports whether schema s has field path p (a part ending in
// "[]" is a list's items).
func hasField(s map[string]any, p string) bool {
	for part := range strings.SplitSeq(p, ".") {
		name, items := strings.CutSuffix(part, "[]")
		props, _ := s["properties"].(map[string]any)
		if s, _ = props[name].(map[string]any); s == nil {
			return false
		}
		if items {
			if s, _ = s["items"].(map[string]any); s == nil {
				return false
			}
		}
	}
	return true
}

// describe says what the cluster's CRD lacks (not the optional fields).
func (l crdLack) describe() string {
	var parts []string
	if len(l.Versions) > 0 {
		parts = append(parts, "does not serve "+strings.Join(l.Versions, ", "))
	}
	if len(l.Fields) > 0 {
		parts = append(parts, "lacks "+strings.Join(l.Fields, "; "))
	}
	return strings.Join(parts, " and ")
}

// optionalSummary is for logs: the optional fields the cluster prunes.
func (l crdLack) optionalSummary() string { return strings.Join(l.Optional, "; ") }
