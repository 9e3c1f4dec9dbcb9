package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/bootproof/bootproof/internal/subject"
	"github.com/bootproof/bootproof/scenarios"
	"github.com/bootproof/bootproof/scenarios/fileformat"
)

// selectScenarios returns the scenarios of the catalog and of the
// scenario files that the names or globs and the labels select. Without
// names or labels: the files' scenarios when files are given, else the
// whole catalog.
func selectScenarios(names, labels, files []string, warn *fileWarnings) ([]*scenarios.Scenario, error) {
	all, err := scenarios.Catalog()
	if err != nil {
		return nil, failure(fmt.Errorf("embedded catalog: %w", err))
	}
	fromFiles, err := readScenarioFiles(files, all, warn)
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

// fileWarnings prints the warnings of the scenario and subject files a
// command reads (a file without apiVersion and kind) on stderr, once per
// file: never on stdout, where they would break what a script reads.
type fileWarnings struct {
	w       io.Writer
	printed map[string]bool
}

func newFileWarnings(stderr io.Writer) *fileWarnings {
	return &fileWarnings{w: stderr, printed: map[string]bool{}}
}

// print writes the warnings of the file at path, unless they were
// printed already.
func (fw *fileWarnings) print(path string, warnings []string) {
	if len(warnings) == 0 || fw.printed[filepath.Clean(path)] {
		return
	}
	fw.printed[filepath.Clean(path)] = true
	for _, w := range warnings {
		fmt.Fprintf(fw.w, "%s: warning: %s\n", programName, w)
	}
}

// readScenarioFiles decodes --scenario-file files, printing their
// warnings; a name that a catalog scenario or another file has already is
// an error.
func readScenarioFiles(paths []string, catalog []*scenarios.Scenario, warn *fileWarnings) ([]*scenarios.Scenario, error) {
	var out []*scenarios.Scenario
	for _, path := range paths {
		data, err := fileformat.ReadInputFile(path, fileformat.MaxInputFileSize)
		if err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("--scenario-file: %w", err))
		}
		sc, err := scenarios.Decode(path, data)
		if err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("--scenario-file: %w", err))
		}
		warn.print(path, sc.Warnings)
		for _, other := range append(slices.Clone(catalog), out...) {
			if other.Name == sc.Name {
				return nil, withCode(ExitUsage, fmt.Errorf("--scenario-file %s: scenario name %q is taken by %s: rename it", path, sc.Name, other.Source))
			}
		}
		out = append(out, sc)
	}
	return out, nil
}

// readSubjectFiles decodes --subject-file files, printing their
// warnings; their names must differ (from the built-in subjects' too,
// which decoding checks).
func readSubjectFiles(paths []string, warn *fileWarnings) ([]*subject.File, error) {
	var out []*subject.File
	for _, path := range paths {
		f, err := subject.ReadFile(path, subject.EnvLookup)
		if err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("--subject-file: %w", err))
		}
		warn.print(path, f.Warnings)
		for _, other := range out {
			if other.Name == f.Name {
				return nil, withCode(ExitUsage, fmt.Errorf("--subject-file %s: subject name %q is taken by %s: rename it", path, f.Name, other.Path))
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// reportClaim is the file a run creates exclusively in its report
// directory to own it: of two runs given the same empty directory, the
// second cannot create it and stops.
const reportClaim = ".bootproof-run"

// checkReportDir refuses a --report-dir that exists and is not empty
// before anything starts: a run never mixes its reports with another's.
func checkReportDir(dir string) error {
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return withCode(ExitUsage, fmt.Errorf("--report-dir %s: %w", dir, err))
	case len(entries) > 0:
		return withCode(ExitUsage, fmt.Errorf("--report-dir %s exists and is not empty: give a new or an empty directory", dir))
	}
	return nil
}

// DefaultReportRoot holds the default report directories of runs
// (DefaultReportRoot/<timestamp>-<random>, and DefaultReportRoot/latest
// pointing to the last one), in the working directory.
const DefaultReportRoot = "_output"

// reportDir creates the report directory and claims it; the default is a
// new directory DefaultReportRoot/<timestamp>-<random>, so two runs
// started in the same second never share one. It returns the absolute
// path.
func reportDir(flag string) (string, error) {
	dir := flag
	if dir == "" {
		if err := os.MkdirAll(DefaultReportRoot, 0o755); err != nil {
			return "", failure(fmt.Errorf("report directory: %w", err))
		}
		d, err := os.MkdirTemp(DefaultReportRoot, time.Now().Format("20060102-150405")+"-*")
		if err == nil {
			err = os.Chmod(d, 0o755)
		}
		if err != nil {
			return "", failure(fmt.Errorf("report directory: %w", err))
		}
		dir = d
	} else {
		if err := checkReportDir(dir); err != nil {
			return "", err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", failure(fmt.Errorf("--report-dir %s: %w", dir, err))
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, reportClaim), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return "", withCode(ExitUsage, fmt.Errorf("--report-dir %s: another run has claimed it: give a new or an empty directory", dir))
	}
	if err == nil {
		_, err = fmt.Fprintf(f, "pid %d, started %s\n", os.Getpid(), time.Now().Format(time.RFC3339))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return "", failure(fmt.Errorf("--report-dir %s: %w", dir, err))
	}
	return filepath.Abs(dir)
}
