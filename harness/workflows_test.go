package harness

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestWorkflowsCallExistingTargets checks that every 'make X' in the
// GitHub Actions workflows and local actions names a Makefile target, and
// that every local action they use exists.
func TestWorkflowsCallExistingTargets(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-zA-Z0-9_.-]+):`).FindAllStringSubmatch(string(mk), -1) {
		targets[m[1]] = true
	}
	files, _ := filepath.Glob("../.github/workflows/*.yaml")
	actions, _ := filepath.Glob("../.github/actions/*/action.yaml")
	files = append(files, actions...)
	files = append(files, "../action.yml") // the reusable action
	if len(files) < 4 {
		t.Fatalf("workflows and actions found: %v", files)
	}
	makeRE := regexp.MustCompile(`\bmake\s+([a-zA-Z0-9_.-]+)`)
	calls := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		walk(doc, func(key string, v string) {
			switch key {
			case "run":
				for _, m := range makeRE.FindAllStringSubmatch(v, -1) {
					calls++
					if !targets[m[1]] {
						t.Errorf("%s runs 'make %s', which the Makefile lacks", f, m[1])
					}
				}
			case "uses":
				if strings.HasPrefix(v, "./") {
					_, errYAML := os.Stat(filepath.Join("..", v, "action.yaml"))
					_, errYML := os.Stat(filepath.Join("..", v, "action.yml"))
					if errYAML != nil && errYML != nil {
						t.Errorf("%s uses %s, which does not exist", f, v)
					}
				} else if !regexp.MustCompile(`@v\d+\.\d+\.\d+$`).MatchString(v) {
					t.Errorf("%s uses %s without a pinned version (want @vX.Y.Z)", f, v)
				}
			}
		})
	}
	if calls == 0 {
		t.Error("no workflow runs make")
	}
}

func walk(v any, f func(key, value string)) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if s, ok := c.(string); ok {
				f(k, s)
			}
			walk(c, f)
		}
	case []any:
		for _, c := range x {
			walk(c, f)
		}
	}
}
