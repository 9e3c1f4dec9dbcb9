package cli

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/internal/kindimage"
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
	// cluster is embedded (in-process variants) or kind (Deployments).
	cluster     string
	kindImage   string
	kindCluster string
	// compareWith is a report directory of another calibration to put
	// beside this one.
	compareWith string
	changed     map[string]bool
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

A known-bad variant counts as caught in a listed scenario only when the case
fails through the assertion its file names there; an error never counts.
calibration.md, calibration.json and index.html give, per variant, in how
many of its listed scenarios it was caught (or a known-good one passed),
through which assertion, and whether a scenario that controls the
interleaving (it pauses, resumes or restarts the subject, or waits for a
worker pod) is among them; then the matrix of variant x scenario.

Every variant selected must be measured: a known-bad variant none of whose
listed scenarios is selected (--scenario, --variant) is a usage error,
named with the scenarios that would run it, and nothing runs.

Exit code 0: every variant as its truth says (both figures 100 %); 1: a
variant was missed or failed; 2: a usage error (bad flags, or a selected
variant that would run in no listed scenario); 3: the run was interrupted
or could not start, or a variant measured nothing (none of its listed
scenarios ran).

--cluster kind judges the variants where operators run: in each case a
Deployment in the case's namespace, running 'bootproof kmm --variant' from
an image of this executable (written here, as 'bootproof kind
build-operator-image' writes it, and loaded into the kind cluster's
nodes), scoped to the case as in-process, with leader election as
in-process (off unless the variant turns it on; the variant two-replicas
is two pods), paused by scaling it to 0 and back. Each case's manifest
and its pods' logs are kept under subjects/ in the report. The figures
and the report are the same; the headline says where the variants ran.

--compare-with DIR puts this calibration beside another one (the report
directory of an earlier 'bootproof calibrate', typically the other world:
'make calibrate' writes _output/calibration): calibration.md, .json and
index.html get a table of each variant's verdict in both, with the variants
whose verdict differs flagged and the scenarios whose outcome differs named.
A variant whose verdict differs exits 1, as a miss does; one measured in
only one of them is shown, not compared.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			verbosity, _ := cmd.InheritedFlags().GetInt("verbosity")
			co.changed = map[string]bool{}
			cmd.Flags().Visit(func(f *pflag.Flag) { co.changed[f.Name] = true })
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
	f.StringVar(&co.cluster, "cluster", string(clusterEmbedded), "where the variants run: embedded (in this process, on the embedded cluster) or kind (as Deployments, one per case, on a kind cluster)")
	f.StringVar(&co.kindImage, "kind-image", cluster.DefaultKindImage, "with --cluster kind: the node image (kind's published one, or one 'make kind-image' built here)")
	f.StringVar(&co.kindCluster, "kind-cluster", "", "with --cluster kind: reuse this existing kind cluster instead of creating one")
	f.StringVar(&co.compareWith, "compare-with", "", "report directory of another calibration (its "+reports.CalibrationJSONFile+") to put beside this one, variant by variant")
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
	deployments := false
	switch clusterName(co.cluster) {
	case clusterEmbedded:
		// A kind flag given with it: checkClusterFlags refuses it.
	case clusterKind:
		deployments = true
	default:
		return runOptions{}, withCode(ExitUsage, fmt.Errorf("invalid --cluster %q: accepted: %s (variants in-process) or %s (variants as Deployments)", co.cluster, clusterEmbedded, clusterKind))
	}
	var other *reports.CalibrationResult
	if co.compareWith != "" {
		c, err := reports.ReadCalibration(co.compareWith)
		if err != nil {
			return runOptions{}, withCode(ExitUsage, fmt.Errorf("--compare-with %s: %w (accepted: the report directory of an earlier 'bootproof calibrate', with its %s)",
				co.compareWith, err, reports.CalibrationJSONFile))
		}
		if len(c.Rows) == 0 {
			return runOptions{}, withCode(ExitUsage, fmt.Errorf("--compare-with %s: %s has no variants", co.compareWith, filepath.Join(co.compareWith, reports.CalibrationJSONFile)))
		}
		other = &c
	}
	changed := map[string]bool{"cluster": true}
	for _, flag := range []string{"kind-image", "kind-cluster"} {
		changed[flag] = co.changed[flag]
	}
	return runOptions{
		cluster: co.cluster, kindImage: co.kindImage, kindCluster: co.kindCluster, changed: changed, nodes: string(nodesFake), subjectFiles: files, scenarios: co.scenarios,
		monitor: DefaultRunMonitor, parallel: co.parallel, nodeBudget: co.nodes, repeat: co.repeat, reportDir: co.reportDir,
		binDir: co.binDir, certValidity: controlplane.DefaultCertValidity, nodeCreds: "shared",
		verbose: co.verbose, calibrate: &calibrateRun{variants: co.variants, dir: co.dir, listedOnly: co.listed, deployments: deployments,
			other: other, otherDir: co.compareWith},
	}, nil
}

// calibrateRun is what a run does differently for 'calibrate'.
type calibrateRun struct {
	// variants, when set, keeps only these variants' files.
	variants []string
	dir      string
	// listedOnly runs known-bad variants only in their listed scenarios.
	listedOnly bool
	// deployments runs the variants as Deployments, one per case
	// (subject.InDeployment), from an operator image of this executable.
	deployments bool
	// other, read from otherDir, is the calibration to compare with.
	other    *reports.CalibrationResult
	otherDir string
}

// world is where the variants run, for the report.
func (cr *calibrateRun) world() string {
	if cr.deployments {
		return reports.WorldDeployment
	}
	return reports.WorldInProcess
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

// checkSelection refuses a known-bad variant that would run in none of
// the scenarios its file lists (the selection of --scenario has none of
// them): it would measure nothing. The error names each such variant,
// its listed scenarios and what would make it run.
func (cr *calibrateRun) checkSelection(files []*subject.File, selected []*scenarios.Scenario, patterns []string) error {
	cat, err := scenarios.Catalog()
	if err != nil {
		return failure(fmt.Errorf("embedded catalog: %w", err))
	}
	var bad []string
	for _, f := range files {
		c := f.Calibration
		if c.Kind() != variant.Defect {
			continue
		}
		if slices.ContainsFunc(selected, func(s *scenarios.Scenario) bool { return c.Listed(s.Name) != nil }) {
			continue
		}
		var listed []string
		for _, s := range cat {
			if c.Listed(s.Name) != nil {
				listed = append(listed, s.Name)
			}
		}
		add := "run it in one of them"
		if len(listed) > 0 {
			add = "add --scenario " + listed[0]
		}
		bad = append(bad, fmt.Sprintf("variant %s (%s) would run in none of the scenarios its file lists (%s), so nothing of it would be measured: "+
			"%s, or leave the variant out (--variant names the ones to run)", c.Variant, f.Path, strings.Join(listed, ", "), add))
	}
	if len(bad) == 0 {
		return nil
	}
	given := "the catalog"
	if len(patterns) > 0 {
		given = "--scenario " + strings.Join(patterns, " --scenario ")
	}
	return withCode(ExitUsage, fmt.Errorf("%s selects scenarios in which %d calibration variant(s) cannot be measured:\n  %s",
		given, len(bad), strings.Join(bad, "\n  ")))
}

// calibrationVariants describes the files for the report: each
// known-bad variant's listed scenarios (from the whole catalog, run or
// not), whether each controls the interleaving, and what the defect
// must be caught through there.
func calibrationVariants(files []*subject.File) ([]reports.CalibrationVariant, error) {
	cat, err := scenarios.Catalog()
	if err != nil {
		return nil, fmt.Errorf("embedded catalog: %w", err)
	}
	out := make([]reports.CalibrationVariant, 0, len(files))
	for _, f := range files {
		c := f.Calibration
		v := reports.CalibrationVariant{Subject: f.Name, Variant: c.Variant, Kind: string(c.Kind()), Summary: c.Summary(), File: f.Path}
		for _, s := range cat {
			if g := c.Listed(s.Name); g != nil {
				v.Listed = append(v.Listed, reports.ListedScenario{Scenario: s.Name, Expect: g.Expect.String(), Assertions: slices.Clone(g.Expect.Assertions),
					Why: g.Why, ControlsInterleaving: s.ControlsInterleaving()})
			}
		}
		out = append(out, v)
	}
	// Known-bad variants first, then the known-good ones, each in the
	// files' order.
	slices.SortStableFunc(out, func(a, b reports.CalibrationVariant) int {
		return cmp.Compare(kindOrder(a.Kind), kindOrder(b.Kind))
	})
	return out, nil
}

// kindOrder ranks a variant kind for the report: known bad first.
func kindOrder(kind string) int {
	if kind == reports.KindDefect {
		return 0
	}
	return 1
}

// calibration judges res as the calibration of the run's files.
func (rc *runContext) calibration(res scenarios.Results) (reports.CalibrationResult, error) {
	variants, err := calibrationVariants(rc.plan.subjectFiles)
	if err != nil {
		return reports.CalibrationResult{}, failure(err)
	}
	c := reports.Calibrate(res, variants)
	c.ListedOnly, c.World = rc.o.calibrate.listedOnly, rc.o.calibrate.world()
	if cr := rc.o.calibrate; cr.other != nil {
		c.CompareWith(*cr.other, cr.otherDir)
	}
	return c, nil
}

// calibrationExit prints the calibration and returns the exit code's
// error: interrupted, or a variant measured nothing (ExitInfra); a
// variant missed or failed (ExitFailed).
func (rc *runContext) calibrationExit(ctx context.Context, dir string, c reports.CalibrationResult) error {
	md := filepath.Join(dir, reports.CalibrationMDFile)
	fmt.Fprintf(rc.s.Out, "calibration: %s\ncalibration report: %s (and %s)\n", reports.CalibrationHeadline(c), filepath.Join(dir, reports.HTMLFile), md)
	switch {
	case ctx.Err() != nil:
		return failure(fmt.Errorf("interrupted: %w", ctx.Err()))
	case len(c.NoCells) > 0:
		var why []string
		for _, r := range c.Rows {
			if !r.Counted() {
				why = append(why, fmt.Sprintf("variant %s: none of its listed scenarios ran (%s)", r.Variant, strings.Join(r.NotRun, ", ")))
			}
		}
		return failure(fmt.Errorf("calibration measured nothing of %d variant(s), an error of the calibration, not a zero: %s; run them in their listed scenarios (see %s)",
			len(c.NoCells), strings.Join(why, "; "), md))
	case !c.OK():
		return withCode(ExitFailed, fmt.Errorf("calibration: %s; see %s", reports.CalibrationHeadline(c), md))
	case c.Worlds != nil && len(c.Worlds.Differ) > 0:
		return withCode(ExitFailed, fmt.Errorf("calibration: %s; see %s", reports.WorldsLine(*c.Worlds), md))
	}
	return nil
}

// operatorImage writes, for a calibration of Deployments, the operator
// image of this executable into a temporary directory (removed at the
// end of the run) and has the kind cluster load it into its nodes.
func (rc *runContext) operatorImage() error {
	if rc.o.calibrate == nil || !rc.o.calibrate.deployments {
		return nil
	}
	tmp, err := os.MkdirTemp("", "bootproof-operator-image-")
	if err != nil {
		return failure(fmt.Errorf("operator image: %w", err))
	}
	rc.defer_(func() { _ = os.RemoveAll(tmp) })
	img := kindimage.OperatorImage{Out: filepath.Join(tmp, "bootproof-operator.tar")}
	if err := img.Validate(); err != nil {
		return withCode(ExitUsage, fmt.Errorf("--cluster kind runs the variants from an image of this executable: %w", fieldErrorsWithFlags(err, operatorImageFlags)))
	}
	if err := img.Write(); err != nil {
		return failure(fmt.Errorf("operator image: %w", err))
	}
	fmt.Fprintf(rc.s.Err, "operator image %s of this executable written, to load into the kind cluster's nodes\n", img.Ref)
	rc.o.kindArchives = append(rc.o.kindArchives, img.Out)
	return nil
}
