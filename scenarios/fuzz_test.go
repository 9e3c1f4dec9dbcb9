package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the scenario-file decoder (strict
// YAML, then validation): no input may panic, every error starts with
// the file's name, and an accepted scenario is valid.
func FuzzDecode(f *testing.F) {
	for _, glob := range []string{"testdata/*.yaml", "catalog/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, p := range files {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data)
			}
		}
	}
	// Both forms of the file (with apiVersion and kind, and the
	// deprecated one without), and the headers refused.
	for _, header := range []string{"apiVersion: bootproof.dev/v1alpha1\nkind: Scenario\n", "", "apiVersion: bootproof.dev/v9\nkind: Scenario\n",
		"apiVersion: bootproof.dev/v1alpha1\nkind: Subject\n", "kind: Scenario\n", "apiVersion: bootproof.dev/v1alpha1\n"} {
		f.Add([]byte(header + scenarioBody))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Decode("fuzz.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if s == nil || s.Name == "" {
			t.Fatalf("accepted a scenario without a name: %+v", s)
		}
		for _, w := range s.Warnings {
			if !strings.HasPrefix(w, "fuzz.yaml: ") {
				t.Fatalf("warning does not name the file: %s", w)
			}
		}
	})
}
