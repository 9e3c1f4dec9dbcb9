package scenarios

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// modelRow is one value of a dimension of docs/catalog-model.md.
type modelRow struct {
	line             int
	dimension, value string
	scenarios        []string
	reason           string // "n/a: ..." or "gap: ..." when no scenario
}

var modelName = regexp.MustCompile("`([a-z0-9][a-z0-9.-]*)`")

// readModel reads the tables of the catalog's model: under each "## "
// heading, the rows "| value | scenarios |" after the header.
func readModel(t *testing.T, path string) []modelRow {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []modelRow
	dimension := ""
	for i, l := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(l, "## "):
			dimension = strings.TrimPrefix(l, "## ")
		case strings.HasPrefix(l, "|") && dimension != "":
			cells := strings.Split(strings.Trim(l, "| "), "|")
			if len(cells) != 2 {
				t.Errorf("%s:%d: a row of %q has %d cells, want 2 (value | scenarios)", path, i+1, dimension, len(cells))
				continue
			}
			value, sc := strings.TrimSpace(cells[0]), strings.TrimSpace(cells[1])
			if value == "value" || strings.Trim(value, "-") == "" {
				continue // the header and its rule
			}
			r := modelRow{line: i + 1, dimension: dimension, value: value}
			if strings.HasPrefix(sc, "n/a:") || strings.HasPrefix(sc, "gap:") {
				r.reason = sc
			} else {
				for _, m := range modelName.FindAllStringSubmatch(sc, -1) {
					r.scenarios = append(r.scenarios, m[1])
				}
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// The model ties to the catalog: every scenario is named in some cell,
// every name is a scenario, and a cell without one says n/a or gap and
// why.
func TestCatalogModel(t *testing.T) {
	const path = "../docs/catalog-model.md"
	rows := readModel(t, path)
	all, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	inCatalog := map[string]bool{}
	for _, s := range all {
		inCatalog[s.Name] = true
	}
	named := map[string]bool{}
	dims := map[string]int{}
	var gaps []string
	for _, r := range rows {
		dims[r.dimension]++
		switch {
		case len(r.scenarios) > 0:
			for _, n := range r.scenarios {
				if !inCatalog[n] {
					t.Errorf("%s:%d: %s / %s names %q, which is not a catalog scenario", path, r.line, r.dimension, r.value, n)
				}
				named[n] = true
			}
		case len(strings.TrimSpace(r.reason[4:])) < 10:
			t.Errorf("%s:%d: %s / %s has no scenario and no reason: write `n/a: why` or `gap: what it needs`", path, r.line, r.dimension, r.value)
		case strings.HasPrefix(r.reason, "gap:"):
			gaps = append(gaps, r.dimension+" / "+r.value)
		}
	}
	for _, s := range all {
		if !named[s.Name] {
			t.Errorf("catalog scenario %s is in no cell of %s: add it where it belongs", s.Name, path)
		}
	}
	for _, d := range []string{"Modules on a node", "The loader's outcome", "The subject's lifecycle", "The API server's answers to the subject", "The node", "The cluster"} {
		if dims[d] < 2 {
			t.Errorf("%s: dimension %q has %d values, want at least 2", path, d, dims[d])
		}
	}
	t.Logf("%d cells in %d dimensions; %d gaps: %s", len(rows), len(dims), len(gaps), strings.Join(gaps, "; "))
}
