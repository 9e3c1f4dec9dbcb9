package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/bootproof/bootproof/harness/subject"
	"github.com/bootproof/bootproof/scenarios"
)

// selectScenarios returns the scenarios of the catalog and of the
// scenario files that the names or globs and the labels select. Without
// names or labels: the files' scenarios when files are given, else the
// whole catalog.
func selectScenarios(names, labels, files []string) ([]*scenarios.Scenario, error) {
	all, err := scenarios.Catalog()
	if err != nil {
		return nil, withCode(ExitInfra, fmt.Errorf("embedded catalog: %w", err))
	}
	fromFiles, err := readScenarioFiles(files, all)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 && len(labels) == 0 && len(fromFiles) > 0 {
		return fromFiles, nil
	}
	selected, err := scenarios.Select(append(all, fromFiles...), names, labels)
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	if len(selected) == 0 {
		return nil, withCode(ExitUsage, fmt.Errorf("--label %v selects no scenario; 'bootproof list' shows the labels", labels))
	}
	return selected, nil
}

// readScenarioFiles decodes --scenario-file files; a name that a catalog
// scenario or another file has already is an error.
func readScenarioFiles(paths []string, catalog []*scenarios.Scenario) ([]*scenarios.Scenario, error) {
	var out []*scenarios.Scenario
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("--scenario-file: %w", err))
		}
		sc, err := scenarios.Decode(path, data)
		if err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("--scenario-file: %w", err))
		}
		for _, other := range append(slices.Clone(catalog), out...) {
			if other.Name == sc.Name {
				return nil, withCode(ExitUsage, fmt.Errorf("--scenario-file %s: scenario name %q is taken by %s: rename it", path, sc.Name, other.Source))
			}
		}
		out = append(out, sc)
	}
	return out, nil
}

// readSubjectFiles decodes --subject-file files; their names must differ
// (from the built-in subjects' too, which decoding checks).
func readSubjectFiles(paths []string) ([]*subject.File, error) {
	var out []*subject.File
	for _, path := range paths {
		f, err := subject.ReadFile(path, subject.EnvLookup)
		if err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("--subject-file: %w", err))
		}
		for _, other := range out {
			if other.Name == f.Name {
				return nil, withCode(ExitUsage, fmt.Errorf("--subject-file %s: subject name %q is taken by %s: rename it", path, f.Name, other.Path))
			}
		}
		out = append(out, f)
	}
	return out, nil
}

func reportDir(flag string) (string, error) {
	dir := flag
	if dir == "" {
		dir = filepath.Join("reports", time.Now().Format("20060102-150405"))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("--report-dir %s: %w", dir, err)
	}
	return filepath.Abs(dir)
}
