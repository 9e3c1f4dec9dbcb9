package subject

import (
	"errors"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/scenarios/fileformat"
)

// subjectBody is a valid subject file without apiVersion and kind.
const subjectBody = "name: my-operator\ndeployment: {namespace: ops, name: my-operator}\n"

// TestDecodeFileFormatVersion: a subject file with apiVersion and kind
// loads without a warning; one with neither loads with exactly one
// deprecation warning naming the file and the lines to add; an unknown
// version, a scenario file's kind, or only one of the two fields is a
// *fileformat.FieldError naming the file, the line and the field.
func TestDecodeFileFormatVersion(t *testing.T) {
	tests := []struct {
		name, data string
		warning    string
		err        string
		line       int
		field      string
	}{
		{name: "new form", data: "apiVersion: bootproof.dev/v1alpha1\nkind: Subject\n" + subjectBody},
		{name: "new form after a comment", data: "# my operator\napiVersion: bootproof.dev/v1alpha1\nkind: Subject\n" + subjectBody},
		{
			name: "old form", data: subjectBody,
			warning: `s.yaml: no apiVersion/kind: add "apiVersion: bootproof.dev/v1alpha1" and "kind: Subject" at the top; files without them are deprecated`,
		},
		{
			name: "unknown version", data: "apiVersion: bootproof.dev/v1beta1\nkind: Subject\n" + subjectBody,
			err: `s.yaml:1: field apiVersion: "bootproof.dev/v1beta1": unknown version: accepted: bootproof.dev/v1alpha1`, line: 1, field: "apiVersion",
		},
		{
			name: "a scenario file's kind", data: "apiVersion: bootproof.dev/v1alpha1\nkind: Scenario\nname: x\nnodes: 1\nactions: []\n",
			err: `s.yaml:2: field kind: "Scenario": want kind Subject in a subject file (kind Scenario is a scenario file: give it as one)`, line: 2, field: "kind",
		},
		{
			name: "a Kubernetes manifest", data: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
			err: `s.yaml:1: field apiVersion: "v1": unknown version: accepted: bootproof.dev/v1alpha1`, line: 1, field: "apiVersion",
		},
		{
			name: "only apiVersion", data: subjectBody + "apiVersion: bootproof.dev/v1alpha1\n",
			err: `s.yaml:3: field kind: missing: a file with apiVersion needs kind: add "kind: Subject"`, line: 3, field: "kind",
		},
		{
			name: "only kind", data: "kind: Subject\n" + subjectBody,
			err: `s.yaml:1: field apiVersion: missing: a file with kind needs apiVersion: add "apiVersion: bootproof.dev/v1alpha1"`, line: 1, field: "apiVersion",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := DecodeFile("s.yaml", []byte(tc.data), testLookup)
			if tc.err != "" {
				if err == nil {
					t.Fatalf("DecodeFile accepted it: %+v", f)
				}
				if err.Error() != tc.err {
					t.Errorf("error:\n  got  %s\n  want %s", err, tc.err)
				}
				var fe *fileformat.FieldError
				if !errors.As(err, &fe) || fe.File != "s.yaml" || fe.Line != tc.line || fe.Field != tc.field {
					t.Errorf("error %#v, want a *fileformat.FieldError of s.yaml, line %d, field %s", err, tc.line, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeFile: %v", err)
			}
			var want []string
			if tc.warning != "" {
				want = []string{tc.warning}
			}
			if len(f.Warnings) != len(want) || strings.Join(f.Warnings, "\n") != strings.Join(want, "\n") {
				t.Errorf("warnings %q, want %q", f.Warnings, want)
			}
			if f.Name != "my-operator" || f.Deployment == nil {
				t.Errorf("decoded %+v", f)
			}
		})
	}
}
