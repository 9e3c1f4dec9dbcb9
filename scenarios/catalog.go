package scenarios

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/bootproof/bootproof/contract"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

//go:embed catalog/*.yaml
var catalogFS embed.FS

// Catalog returns the scenarios embedded in the binary, sorted by name.
func Catalog() ([]*Scenario, error) {
	files, err := fs.Glob(catalogFS, "catalog/*.yaml")
	if err != nil {
		return nil, err
	}
	var out []*Scenario
	for _, f := range files {
		data, err := catalogFS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		s, err := Decode(f, data)
		if err != nil {
			return nil, err
		}
		if want := strings.TrimSuffix(path.Base(f), ".yaml"); s.Name != want {
			return nil, fmt.Errorf("%s: scenario name %q differs from the file name", f, s.Name)
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *Scenario) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Select returns the scenarios whose name matches one of the globs (all
// when none) and that carry every label given. A glob that matches
// nothing is an error naming the catalog.
func Select(all []*Scenario, globs, labels []string) ([]*Scenario, error) {
	var out []*Scenario
	matched := map[string]bool{}
	for _, s := range all {
		ok := len(globs) == 0
		for _, g := range globs {
			if m, err := path.Match(g, s.Name); err != nil {
				return nil, &contract.InputError{Field: field.NewPath("Scenario"), Value: strconv.Quote(g), Err: err}
			} else if m {
				ok = true
				matched[g] = true
			}
		}
		for _, l := range labels {
			if !slices.Contains(s.Labels, l) {
				ok = false
			}
		}
		if ok {
			out = append(out, s)
		}
	}
	for _, g := range globs {
		if !matched[g] {
			var names []string
			for _, s := range all {
				names = append(names, s.Name)
			}
			return nil, &contract.InputError{Field: field.NewPath("Scenario"), Value: strconv.Quote(g), Reason: "matches no scenario: accepted: a name or glob of " + strings.Join(names, ", ")}
		}
	}
	return out, nil
}
