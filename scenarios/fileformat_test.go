package scenarios

import (
	"errors"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/scenarios/fileformat"
)

// scenarioBody is a valid scenario without apiVersion and kind.
const scenarioBody = "name: v\nnodes: 1\nmodules: [{name: dummy}]\nexpect: {bootid: pass}\nactions:\n  - wait-reloaded: {}\n"

// TestDecodeFormatVersion: a scenario file with apiVersion and kind loads
// without a warning; one with neither loads with exactly one deprecation
// warning naming the file and the lines to add; an unknown version, a
// subject file's kind, another kind, or only one of the two fields is a
// *fileformat.FieldError naming the file, the line and the field.
func TestDecodeFormatVersion(t *testing.T) {
	tests := []struct {
		name, data string
		// warning is the one warning expected; empty: none.
		warning string
		// err is the error expected (file:line: field f: message);
		// empty: the file loads.
		err string
		// line and field of the *fileformat.FieldError.
		line  int
		field string
	}{
		{name: "new form", data: "apiVersion: bootproof.dev/v1alpha1\nkind: Scenario\n" + scenarioBody},
		{name: "new form, fields last", data: scenarioBody + "kind: Scenario\napiVersion: bootproof.dev/v1alpha1\n"},
		{name: "new form, quoted", data: "apiVersion: \"bootproof.dev/v1alpha1\"\nkind: 'Scenario'\n" + scenarioBody},
		{
			name: "old form", data: scenarioBody,
			warning: `x.yaml: no apiVersion/kind: add "apiVersion: bootproof.dev/v1alpha1" and "kind: Scenario" at the top; files without them are deprecated`,
		},
		{
			name: "unknown version", data: "apiVersion: bootproof.dev/v1\nkind: Scenario\n" + scenarioBody,
			err: `x.yaml:1: field apiVersion: "bootproof.dev/v1": unknown version: accepted: bootproof.dev/v1alpha1`, line: 1, field: "apiVersion",
		},
		{
			name: "another group", data: "kind: Scenario\napiVersion: apps/v1\n" + scenarioBody,
			err: `x.yaml:2: field apiVersion: "apps/v1": unknown version: accepted: bootproof.dev/v1alpha1`, line: 2, field: "apiVersion",
		},
		{
			name: "empty version", data: "apiVersion:\nkind: Scenario\n" + scenarioBody,
			err: `x.yaml:1: field apiVersion: "": unknown version: accepted: bootproof.dev/v1alpha1`, line: 1, field: "apiVersion",
		},
		{
			name: "version not a string", data: "apiVersion: [bootproof.dev/v1alpha1]\nkind: Scenario\n" + scenarioBody,
			err: `x.yaml:1: field apiVersion: a list: unknown version: accepted: bootproof.dev/v1alpha1`, line: 1, field: "apiVersion",
		},
		{
			name: "a subject file's kind", data: "apiVersion: bootproof.dev/v1alpha1\nkind: Subject\nname: my-operator\nexec: {command: [sh]}\n",
			err: `x.yaml:2: field kind: "Subject": want kind Scenario in a scenario file (kind Subject is a subject file: give it as one)`, line: 2, field: "kind",
		},
		{
			name: "another kind", data: "apiVersion: bootproof.dev/v1alpha1\nkind: Pod\n" + scenarioBody,
			err: `x.yaml:2: field kind: "Pod": want kind Scenario in a scenario file`, line: 2, field: "kind",
		},
		{
			name: "kind in lower case", data: "apiVersion: bootproof.dev/v1alpha1\nkind: scenario\n" + scenarioBody,
			err: `x.yaml:2: field kind: "scenario": want kind Scenario in a scenario file`, line: 2, field: "kind",
		},
		{
			name: "only apiVersion", data: "apiVersion: bootproof.dev/v1alpha1\n" + scenarioBody,
			err: `x.yaml:1: field kind: missing: a file with apiVersion needs kind: add "kind: Scenario"`, line: 1, field: "kind",
		},
		{
			name: "only kind", data: "# a comment\nkind: Scenario\n" + scenarioBody,
			err: `x.yaml:2: field apiVersion: missing: a file with kind needs apiVersion: add "apiVersion: bootproof.dev/v1alpha1"`, line: 2, field: "apiVersion",
		},
		{
			// The header is checked before the rest: a wrong kind is
			// named, not the other format's fields.
			name: "header before fields", data: "apiVersion: bootproof.dev/v2\nkind: Scenario\nexec: {}\n",
			err: `x.yaml:1: field apiVersion: "bootproof.dev/v2": unknown version: accepted: bootproof.dev/v1alpha1`, line: 1, field: "apiVersion",
		},
		{
			name: "old form, invalid", data: "name: v\nnodes: 0\n",
			err: "x.yaml:2: field nodes: 0: accepted: 1 to 1000",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Decode("x.yaml", []byte(tc.data))
			if tc.err != "" {
				if err == nil {
					t.Fatalf("Decode accepted it: %+v", s)
				}
				if err.Error() != tc.err {
					t.Errorf("error:\n  got  %s\n  want %s", err, tc.err)
				}
				var fe *fileformat.FieldError
				if !errors.As(err, &fe) {
					t.Fatalf("error %T, want a *fileformat.FieldError", err)
				}
				if tc.field != "" && (fe.File != "x.yaml" || fe.Line != tc.line || fe.Field != tc.field) {
					t.Errorf("fileformat.FieldError file %q line %d field %q, want x.yaml, %d, %s", fe.File, fe.Line, fe.Field, tc.line, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			var want []string
			if tc.warning != "" {
				want = []string{tc.warning}
			}
			if strings.Join(s.Warnings, "\n") != strings.Join(want, "\n") || len(s.Warnings) != len(want) {
				t.Errorf("warnings %q, want %q", s.Warnings, want)
			}
			if s.Name != "v" || len(s.Actions) != 1 {
				t.Errorf("decoded %+v", s)
			}
		})
	}
}

// The deprecation warning asks for the current version and the kind, and
// every known version is accepted.
func TestFormatVocabulary(t *testing.T) {
	if !contract.KnownAPIVersion(contract.CurrentAPIVersion) {
		t.Errorf("the current version %s is not known", contract.CurrentAPIVersion)
	}
	for _, v := range contract.APIVersions() {
		if !strings.HasPrefix(v, contract.FormatGroup+"/") {
			t.Errorf("version %s is not of group %s", v, contract.FormatGroup)
		}
		data := "apiVersion: " + v + "\nkind: Scenario\n" + scenarioBody
		if s, err := Decode("x.yaml", []byte(data)); err != nil || len(s.Warnings) > 0 {
			t.Errorf("version %s: %v", v, err)
		}
	}
	for _, k := range contract.FileKinds() {
		if !k.Known() || k.FileType() == "" {
			t.Errorf("kind %s: known %v, file type %q", k, k.Known(), k.FileType())
		}
	}
	if got := fileformat.DeprecationWarning("d/f.yaml", contract.KindSubject); !strings.Contains(got, `"apiVersion: `+contract.CurrentAPIVersion+`" and "kind: Subject"`) || !strings.HasPrefix(got, "d/f.yaml: ") {
		t.Errorf("fileformat.DeprecationWarning = %s", got)
	}
}
