package subject

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/scenarios"
	"github.com/bootproof/bootproof/scenarios/fileformat"
	"go.yaml.in/yaml/v3"
)

// versionedLookup resolves the variables of the repository's subject
// files: ${KMM_REPO} to a directory holding what the upstream KMM
// examples point at.
func versionedLookup(t *testing.T) Lookup {
	kmmRepo := t.TempDir()
	for _, d := range []string{"bin", "config/crd/bases"} {
		if err := os.MkdirAll(filepath.Join(kmmRepo, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(kmmRepo, "bin", "manager"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	return func(name string) (string, bool) {
		if name == "KMM_REPO" {
			return kmmRepo, true
		}
		return testLookup(name)
	}
}

// formatOf says which of bootproof's formats a YAML document is, by its
// kind or, in a file without one, by the fields only that format has;
// "" for any other YAML (a Kubernetes manifest, a workflow).
func formatOf(doc *yaml.Node) contract.FileKind {
	if doc == nil || doc.Kind != yaml.MappingNode {
		return ""
	}
	keys := map[string]string{}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		keys[doc.Content[i].Value] = doc.Content[i+1].Value
	}
	if k := contract.FileKind(keys["kind"]); k.Known() {
		return k
	}
	ours := strings.HasPrefix(keys["apiVersion"], contract.FormatGroup+"/")
	if _, ok := keys["kind"]; ok && !ours {
		return ""
	}
	for _, f := range []string{"actions", "precondition", "reloadBound"} {
		if _, ok := keys[f]; ok {
			return contract.KindScenario
		}
	}
	for _, f := range []string{"exec", "deployment", "calibration", "crds", "manifests"} {
		if _, ok := keys[f]; ok {
			return contract.KindSubject
		}
	}
	if ours {
		return unknownKind
	}
	return ""
}

// unknownKind is a file of bootproof's group whose kind and fields say
// neither format: it fails every check.
const unknownKind contract.FileKind = "(unknown kind)"

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../.."

// repositoryYAML returns every YAML file of the repository (not under
// .git, .cache, _output or bin).
func repositoryYAML(t *testing.T) []string {
	var out []string
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".cache", "_output", "bin", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(p); ext == ".yaml" || ext == ".yml" {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkVersioned checks one scenario or subject file: its first document
// carries the current apiVersion and its kind, and the file, unless it is
// deliberately invalid (it does not decode), loads with no warning.
func checkVersioned(t *testing.T, p string, data []byte, doc *yaml.Node, kind contract.FileKind, lookup Lookup) {
	t.Helper()
	var h fileformat.Header
	for i := 0; i+1 < len(doc.Content); i += 2 {
		switch doc.Content[i].Value {
		case "apiVersion":
			h.APIVersion = doc.Content[i+1].Value
		case "kind":
			h.Kind = doc.Content[i+1].Value
		}
	}
	if h.APIVersion != contract.CurrentAPIVersion || h.Kind != string(kind) {
		t.Errorf("%s: apiVersion %q, kind %q: add \"apiVersion: %s\" and \"kind: %s\" at the top", p, h.APIVersion, h.Kind, contract.CurrentAPIVersion, kind)
	}
	var warnings []string
	switch kind {
	case contract.KindScenario:
		if s, err := scenarios.Decode(p, data); err == nil {
			warnings = s.Warnings
		}
	case contract.KindSubject:
		if f, err := DecodeFile(p, data, lookup); err == nil {
			warnings = f.Warnings
		}
	}
	for _, w := range warnings {
		t.Error(w)
	}
}

// TestRepositoryFilesVersioned walks every YAML file of the repository:
// each scenario or subject file (the catalog, the examples, testdata,
// valid or not) carries apiVersion: bootproof.dev/v1alpha1 and its kind,
// and each that decodes loads with no deprecation warning. A file added
// without them fails here.
func TestRepositoryFilesVersioned(t *testing.T) {
	lookup := versionedLookup(t)
	seen := map[contract.FileKind]int{}
	for _, p := range repositoryYAML(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var doc yaml.Node
		if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
			continue // not YAML a decoder could read: not of these formats
		}
		kind := formatOf(doc.Content[0])
		if kind == "" {
			continue
		}
		seen[kind]++
		checkVersioned(t, p, data, doc.Content[0], kind, lookup)
	}
	// The walk found the catalog and the examples.
	if seen[contract.KindScenario] < 21 || seen[contract.KindSubject] < 20 {
		t.Errorf("found %d scenario and %d subject files: the walk missed the catalog or the examples", seen[contract.KindScenario], seen[contract.KindSubject])
	}
}

var fencedYAML = regexp.MustCompile("(?s)```ya?ml\n(.*?)```")

// TestDocsSnippetsVersioned: every scenario or subject file shown in
// README.md or docs/*.md opens with apiVersion and carries its kind; a
// scenario shown decodes with no warning.
func TestDocsSnippetsVersioned(t *testing.T) {
	docs, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	docs = append(docs, filepath.Join(repoRoot, "README.md"))
	found := 0
	for _, p := range docs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range fencedYAML.FindAllSubmatchIndex(data, -1) {
			snippet := data[m[2]:m[3]]
			line := 1 + bytes.Count(data[:m[2]], []byte("\n"))
			var doc yaml.Node
			if err := yaml.Unmarshal(snippet, &doc); err != nil || len(doc.Content) == 0 {
				continue
			}
			kind := formatOf(doc.Content[0])
			if kind == "" {
				continue
			}
			found++
			first := ""
			if sc := bufio.NewScanner(bytes.NewReader(snippet)); sc.Scan() {
				first = sc.Text()
			}
			if !strings.HasPrefix(first, "apiVersion: "+contract.CurrentAPIVersion) {
				t.Errorf("%s:%d: a %s snippet does not open with \"apiVersion: %s\"", p, line, kind.FileType(), contract.CurrentAPIVersion)
			}
			if !bytes.Contains(snippet, []byte("\nkind: "+string(kind))) {
				t.Errorf("%s:%d: a %s snippet lacks \"kind: %s\"", p, line, kind.FileType(), kind)
			}
			// A scenario shown is one that runs (a subject file shown
			// names paths that exist only in the reader's project).
			if kind == contract.KindScenario {
				if s, err := scenarios.Decode(p, snippet); err != nil || len(s.Warnings) > 0 {
					t.Errorf("%s:%d: the scenario shown does not decode cleanly: %v", p, line, err)
				}
			}
		}
	}
	if found == 0 {
		t.Error("no subject or scenario file shown in README.md or docs/*.md")
	}
}
