package subject

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecodeFile feeds arbitrary bytes to the subject-file decoder
// (strict YAML, ${NAME} expansion, validation): no input may panic,
// every error names the file, and an accepted file has a name and
// exactly one way to run the subject.
func FuzzDecodeFile(f *testing.F) {
	for _, glob := range []string{"testdata/*.yaml", "../../examples/subjects/*.yaml", "../../examples/calibration/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, p := range files {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data)
			}
		}
	}
	// Both forms of the file (with apiVersion and kind, and the
	// deprecated one without), and the headers refused.
	for _, header := range []string{"apiVersion: bootproof.dev/v1alpha1\nkind: Subject\n", "", "apiVersion: bootproof.dev/v9\nkind: Subject\n",
		"apiVersion: bootproof.dev/v1alpha1\nkind: Scenario\n", "kind: Subject\n", "apiVersion: bootproof.dev/v1alpha1\n"} {
		f.Add([]byte(header + subjectBody))
	}
	dir := f.TempDir()
	p := filepath.Join(dir, "subject.yaml")
	lookup := func(name string) (string, bool) {
		switch name {
		case "BOOTPROOF":
			return "/bin/true", true
		case "KMM_REPO":
			return dir, true
		}
		return "", false
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := DecodeFile(p, data, lookup)
		if err != nil {
			if !strings.HasPrefix(err.Error(), p) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if file.Name == "" {
			t.Fatalf("accepted a subject without a name: %+v", file)
		}
		if file.Exec != nil && file.Deployment != nil {
			t.Fatalf("accepted a subject both exec and deployment: %+v", file)
		}
		for _, w := range file.Warnings {
			if !strings.HasPrefix(w, p+": ") {
				t.Fatalf("warning does not name the file: %s", w)
			}
		}
	})
}
