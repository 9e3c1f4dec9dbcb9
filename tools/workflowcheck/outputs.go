package workflowcheck

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

var (
	// A rule's first line: "target: prerequisites" (not ":=").
	makeRule = regexp.MustCompile(`^([a-zA-Z0-9_-][a-zA-Z0-9_.-]*):([^=]|$)`)
	// An output of a recipe: $(REPORTS_DIR)/path.
	makeOutput = regexp.MustCompile(`\$\(REPORTS_DIR\)/([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*)`)
	// A hack script a recipe runs.
	makeScript = regexp.MustCompile(`\bhack/[A-Za-z0-9_.-]+\.sh\b`)
	// What a script writes next to the report directory it is given:
	// $(dirname "$report_dir")/name.
	scriptSibling = regexp.MustCompile(`\$\(dirname "\$\{?[A-Za-z_]+\}?"\)/([A-Za-z0-9_.-]+)`)
)

// MakeOutputs reads the Makefile at root and returns, by target, the run
// outputs its recipe writes under _output ($(REPORTS_DIR)): JUnit files,
// report directories, fault tables, as paths relative to _output. A hack
// script that a recipe runs with a directory under $(REPORTS_DIR) adds
// what it writes next to that directory ($(dirname "$dir")/NAME). A path
// inside another output of the same target is left out: the directory
// holds it.
func MakeOutputs(root string) (map[string][]string, error) {
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		return nil, err
	}
	recipes := map[string]string{}
	target := ""
	for _, l := range strings.Split(string(data), "\n") {
		switch m := makeRule.FindStringSubmatch(l); {
		case m != nil:
			target = m[1]
		case strings.HasPrefix(l, "\t") && target != "":
			recipes[target] += l + "\n"
		case strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "#"):
			target = "" // a variable, a directive
		}
	}
	out := map[string][]string{}
	for t, r := range recipes {
		set := map[string]bool{}
		for _, m := range makeOutput.FindAllStringSubmatch(r, -1) {
			set[m[1]] = true
		}
		if len(set) > 0 {
			for _, s := range makeScript.FindAllString(r, -1) {
				script, err := os.ReadFile(filepath.Join(root, s))
				if err != nil {
					return nil, err
				}
				for _, m := range scriptSibling.FindAllStringSubmatch(string(script), -1) {
					set[m[1]] = true
				}
			}
		}
		for p := range set {
			if !insideAny(p, set) {
				out[t] = append(out[t], p)
			}
		}
		sort.Strings(out[t])
	}
	return out, nil
}

// insideAny: p is inside another path of set.
func insideAny(p string, set map[string]bool) bool {
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if set[d] {
			return true
		}
	}
	return false
}

// Covers says whether a path list of an upload (or a JUnit report),
// one path or glob a line, takes p: p itself, a glob matching it, or a
// directory holding it.
func Covers(paths, p string) bool {
	for _, l := range strings.Split(paths, "\n") {
		l = strings.TrimSuffix(strings.TrimSpace(l), "/")
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if ok, _ := path.Match(l, p); ok || strings.HasPrefix(p, l+"/") {
			return true
		}
	}
	return false
}
