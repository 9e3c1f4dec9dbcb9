package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/internal/subject"
	"github.com/bootproof/bootproof/kmm/variant"
	"github.com/bootproof/bootproof/reports"
	"github.com/bootproof/bootproof/scenarios"
)

// DefaultCalibrationDir holds the calibration subject files.
const DefaultCalibrationDir = "examples/calibration"

// DefaultCalibrateParallel is how many cases 'calibrate' runs at once
// (most of a case is waiting, as in 'make run').
const DefaultCalibrateParallel = 16

type calibrateOptions struct {
	dir       string
	variants  []string
	scenarios []string
	parallel  int
	nodes     int
	repeat    int
	listed    bool
	reportDir string
	binDir    string
	verbose   bool
}

func newCalibrateCommand(s Streams) *cobra.Command {
	co := calibrateOptions{}
	cmd := &cobra.Command{
		Use:   "calibrate",
		Short: "Measure bootproof's sensitivity and specificity on reference operators whose truth is known",
		Long: `Runs the calibration variants of bootproof's reconciler (the subject files of
--dir, each the correct reconciler with one seeded defect or one injected
slowness, see 'bootproof kmm --variant') in this process against the
scenario catalog on the embedded cluster, and writes calibration.md and
calibration.json beside the usual reports: variant x scenario, then
sensitivity (each known-bad variant caught, through the assertion its file
names, in every scenario its file lists as able to see the defect) and
specificity (the known-good variants' cases that pass). A known-bad
variant caught in a scenario not listed is reported and counted in neither;
--listed-only runs known-bad variants only in their listed scenarios, which
measures both figures the same in fewer cases (.ci/run uses it).

Exit code 0: both are 100 %; 1: either is lower; 2: a usage error; 3: the
run was interrupted or could not start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			verbosity, _ := cmd.InheritedFlags().GetInt("verbosity")
			o, err := co.runOptions()
			if err != nil {
				return err
			}
			o.verbosity = verbosity
			return runRun(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&co.dir, "dir", DefaultCalibrationDir, "directory of the calibration subject files (*.yaml, each with a calibration section)")
	f.StringArrayVar(&co.variants, "variant", nil, "run only this variant (more than once for several; default all the directory's)")
	f.StringArrayVar(&co.scenarios, "scenario", nil, "scenario name or glob (default: the whole catalog)")
	f.IntVar(&co.parallel, "parallel", DefaultCalibrateParallel, "cases run at once")
	f.IntVar(&co.nodes, "max-parallel-nodes", DefaultNodeBudget, "nodes of the cases run at once, at most (0: no cap), as for 'run'")
	f.IntVar(&co.repeat, "repeat", 1, fmt.Sprintf("run every variant x scenario this many times (at most %d): a defect must be caught in every run", MaxRepeat))
	f.BoolVar(&co.listed, "listed-only", false, "run each known-bad variant only in the scenarios its file lists (both figures are measured the same; catches elsewhere are not looked for)")
	f.StringVar(&co.reportDir, "report-dir", "", "report directory: new or empty (default a new "+DefaultReportRoot+"/<timestamp>-<random>)")
	f.StringVar(&co.binDir, "bin-dir", "", binDirHelp)
	f.BoolVar(&co.verbose, "verbose", false, "show the logs on stderr too")
	return cmd
}

// runOptions maps the calibrate flags to a run on the embedded cluster
// of the directory's calibration files, in-process.
func (co calibrateOptions) runOptions() (runOptions, error) {
	for _, v := range co.variants {
		if _, ok := variant.Lookup(variant.Name(v)); !ok {
			return runOptions{}, withCode(ExitUsage, fmt.Errorf("invalid --variant %q: accepted: %s", v, strings.Join(variant.Names(), ", ")))
		}
	}
	files, err := filepath.Glob(filepath.Join(co.dir, "*.yaml"))
	if err != nil {
		return runOptions{}, withCode(ExitUsage, fmt.Errorf("--dir %s: %w", co.dir, err))
	}
	if st, err := os.Stat(co.dir); err != nil || !st.IsDir() {
		return runOptions{}, withCode(ExitUsage, fmt.Errorf("--dir %s: not a directory of calibration subject files (run from the repository, or give --dir)", co.dir))
	}
	if len(files) == 0 {
		return runOptions{}, withCode(ExitUsage, fmt.Errorf("--dir %s: no *.yaml calibration subject files", co.dir))
	}
	sort.Strings(files)
	return runOptions{
		cluster: string(clusterEmbedded), nodes: string(nodesFake), subjectFiles: files, scenarios: co.scenarios,
		monitor: DefaultRunMonitor, parallel: co.parallel, nodeBudget: co.nodes, repeat: co.repeat, reportDir: co.reportDir,
		binDir: co.binDir, certValidity: controlplane.DefaultCertValidity, nodeCreds: "shared",
		verbose: co.verbose, calibrate: &calibrateRun{variants: co.variants, dir: co.dir, listedOnly: co.listed},
	}, nil
}

// calibrateRun is what a run does differently for 'calibrate'.
type calibrateRun struct {
	// variants, when set, keeps only these variants' files.
	variants []string
	dir      string
	// listedOnly runs known-bad variants only in their listed scenarios.
	listedOnly bool
}

// include is the run's case filter: nil unless listedOnly, then a
// known-bad variant's case only in a scenario its file lists.
func (cr *calibrateRun) include(files []*subject.File) func(*scenarios.Scenario, scenarios.Subject) bool {
	if cr == nil || !cr.listedOnly {
		return nil
	}
	calib := map[string]*subject.Calibration{}
	for _, f := range files {
		calib[f.Name] = f.Calibration
	}
	return func(s *scenarios.Scenario, subj scenarios.Subject) bool {
		c := calib[subj.Name()]
		return c == nil || c.Kind() != variant.Defect || c.Listed(s.Name) != nil
	}
}

// selectFiles checks that every file is a calibration file and keeps the
// variants asked for.
func (cr *calibrateRun) selectFiles(files []*subject.File) ([]*subject.File, error) {
	var out []*subject.File
	for _, f := range files {
		if f.Calibration == nil {
			return nil, withCode(ExitUsage, fmt.Errorf("--dir %s: %s has no calibration section: not a calibration subject file", cr.dir, f.Path))
		}
		if len(cr.variants) == 0 || slices.Contains(cr.variants, f.Calibration.Variant) {
			out = append(out, f)
		}
	}
	for _, v := range cr.variants {
		if !slices.ContainsFunc(out, func(f *subject.File) bool { return f.Calibration.Variant == v }) {
			return nil, withCode(ExitUsage, fmt.Errorf("--variant %s: no file of %s describes it", v, cr.dir))
		}
	}
	return out, nil
}

// calibrationVariants describes the files for the report.
func calibrationVariants(files []*subject.File) []reports.CalibrationVariant {
	out := make([]reports.CalibrationVariant, 0, len(files))
	for _, f := range files {
		c := f.Calibration
		out = append(out, reports.CalibrationVariant{Subject: f.Name, Variant: c.Variant, Kind: string(c.Kind()),
			Summary: c.Summary(), File: f.Path, CaughtWhen: c.CaughtWhen,
			Listed: func(name string) (string, string, bool) {
				g := c.Listed(name)
				if g == nil {
					return "", "", false
				}
				return g.Expect.String(), g.Why, true
			}})
	}
	return out
}

// reportCalibration writes calibration.md and .json and says whether
// sensitivity and specificity are both 100 %.
func (rc *runContext) reportCalibration(ctx context.Context, dir string, res scenarios.Results) error {
	c := reports.Calibrate(res, calibrationVariants(rc.plan.subjectFiles))
	c.ListedOnly = rc.o.calibrate.listedOnly
	if err := reports.WriteCalibration(dir, c); err != nil {
		return failure(fmt.Errorf("reports: %w", err))
	}
	fmt.Fprintf(rc.s.Out, "calibration: %s\ncalibration report: %s\n", reports.CalibrationHeadline(c), filepath.Join(dir, reports.CalibrationMDFile))
	switch {
	case ctx.Err() != nil:
		return failure(fmt.Errorf("interrupted: %w", ctx.Err()))
	case !c.OK():
		return withCode(ExitFailed, fmt.Errorf("calibration: %s; see %s", reports.CalibrationHeadline(c), filepath.Join(dir, reports.CalibrationMDFile)))
	}
	return nil
}
