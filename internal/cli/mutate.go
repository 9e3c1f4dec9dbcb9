package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/internal/mutate"
	"github.com/bootproof/bootproof/internal/shutdown"
	"github.com/bootproof/bootproof/internal/subject"
	"github.com/bootproof/bootproof/ownership"
)

type mutateOptions struct {
	dir       string
	packages  []string
	triage    string
	list      bool
	sel       mutate.Selection
	scenarios []string
	parallel  int
	nodes     int
	minScore  float64
	survivors bool
	reportDir string
	binDir    string
	verbose   bool
}

// DefaultMinScore is the mutation score 'mutate' requires.
const DefaultMinScore = 90

func newMutateCommand(s Streams) *cobra.Command {
	mo := mutateOptions{}
	cmd := &cobra.Command{
		Use:   "mutate",
		Short: "Measure what the scenario catalog catches: mutation testing of bootproof's reconciler (needs a checkout)",
		Long: `Generates mutants of bootproof's reconciler (kmm/controller, kmm/detect and
kmm/worker of the checkout --dir: conditions negated or replaced by true or
false, boundaries shifted, && and || swapped, statements removed, break or
return inserted in loops, break and continue swapped, arithmetic and
constants changed, arguments swapped), builds bootproof with each (go build
-overlay: the checkout is not written) and judges each by the scenario
catalog on the embedded cluster with simulated nodes, its 'bootproof kmm'
a process per case. The unmutated reconciler must pass every scenario first.
A mutant is killed by a case whose verdict is fail through a judged
assertion; the scenarios that killed most so far run first, and a mutant
stops at its first kill. A survivor must be explained by the triage file
(--triage), which says why it is equivalent. Writes mutate.md and
mutate.json to --report-dir.

Exit code 0: no survivor without a triage entry (with --allow-survivors:
they are listed, not counted against the run), nothing mislabelled, no
triage entry contradicted by a kill, and, when every mutant was judged, a
score of at least --min-score; 1: otherwise; 2: a usage error; 3: the
unmutated reconciler fails the catalog, the run was interrupted or could
not start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			verbosity, _ := cmd.InheritedFlags().GetInt("verbosity")
			return runMutate(cmd.Context(), s, mo, verbosity)
		},
	}
	f := cmd.Flags()
	f.StringVar(&mo.dir, "dir", "", "the bootproof checkout whose reconciler is mutated (default: the checkout holding the working directory)")
	f.StringArrayVar(&mo.packages, "package", mutate.DefaultPackages, "package to mutate, relative to --dir (more than once for several)")
	f.StringVar(&mo.triage, "triage", "", "the triage file of equivalent mutants (default: "+mutate.DefaultTriageFile+" in --dir)")
	f.BoolVar(&mo.list, "list", false, "list the mutants (ID, place, operator, change, and why one is unobservable or does not compile) and exit")
	f.StringArrayVar(&mo.sel.Mutants, "mutant", nil, "judge only this mutant (its ID or key; more than once for several)")
	f.IntVar(&mo.sel.Sample, "sample", 0, "judge this many mutants, chosen by --seed among those that compile and are observable (0: all)")
	f.StringVar(&mo.sel.Seed, "seed", "", "what chooses the sample (e.g. a commit): the same seed chooses the same mutants")
	f.StringArrayVar(&mo.scenarios, "scenario", nil, "scenario name or glob (default: the whole catalog)")
	f.IntVar(&mo.parallel, "parallel", mutate.DefaultParallel, "cases run at once")
	f.IntVar(&mo.nodes, "max-parallel-nodes", DefaultNodeBudget, "nodes of the cases run at once, at most (0: no cap)")
	f.Float64Var(&mo.minScore, "min-score", DefaultMinScore, "the mutation score (percent) below which the run fails")
	f.BoolVar(&mo.survivors, "allow-survivors", false, "list survivors the triage file does not explain without failing the run (a sample in CI while the triage is incomplete); a mislabelled mutant, a contradicted triage entry or --min-score still fail it")
	f.StringVar(&mo.reportDir, "report-dir", "", "report directory: new or empty (default a new "+DefaultReportRoot+"/<timestamp>-<random>)")
	f.StringVar(&mo.binDir, "bin-dir", "", binDirHelp)
	f.BoolVar(&mo.verbose, "verbose", false, "show the logs on stderr too")
	return cmd
}

func runMutate(ctx context.Context, s Streams, mo mutateOptions, verbosity int) error {
	start := time.Now()
	if err := mo.validate(); err != nil {
		return err
	}
	if mo.list {
		set, err := mutate.Generate(mo.dir, mo.packages)
		if err != nil {
			return withCode(ExitUsage, fmt.Errorf("--package %s in --dir %s: %w", strings.Join(mo.packages, ","), mo.dir, err))
		}
		return listMutants(s, set)
	}
	// The mutants come from, and are built in, a copy of the checkout:
	// editing it during the run changes neither. (A run killed with
	// SIGKILL leaves it; the next run's sweep removes it, as it names its
	// process.)
	work, err := ownership.TempDir("mutants")
	if err != nil {
		return failure(err)
	}
	removeWork := sync.OnceFunc(func() { _ = os.RemoveAll(work) })
	defer removeWork()
	defer shutdown.Register("mutation work directory "+work, removeWork)()
	src, err := mutate.Snapshot(mo.dir, filepath.Join(work, "src"))
	if err != nil {
		return failure(err)
	}
	set, err := mutate.Generate(src, mo.packages)
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("--package %s in --dir %s: %w", strings.Join(mo.packages, ","), mo.dir, err))
	}
	triage, err := mutate.ReadTriage(mo.triage)
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("--triage: %w", err))
	}
	todo, err := mutate.Select(set, mo.sel)
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("--mutant/--sample: %w", err))
	}
	o := runOptions{cluster: string(clusterEmbedded), nodes: string(nodesFake), scenarios: mo.scenarios, monitor: DefaultRunMonitor,
		parallel: mo.parallel, nodeBudget: mo.nodes, repeat: 1, reportDir: mo.reportDir, binDir: mo.binDir,
		certValidity: controlplane.DefaultCertValidity, nodeCreds: "shared", verbose: mo.verbose, verbosity: verbosity,
		subjects: []string{subject.BootID}}
	p, err := o.validate(s.Err)
	if err != nil {
		return err
	}
	rc := &runContext{s: s, o: o, plan: p}
	defer rc.close()
	fmt.Fprintf(s.Out, "%d mutants of %s; judging %d\n", len(set.Mutants), strings.Join(mo.packages, ", "), len(todo))
	rep, dir, err := rc.mutate(ctx, mo, set, triage, todo, work)
	if rep == nil {
		return err
	}
	rep.Started, rep.WallMS, rep.Commit, rep.Packages = start, time.Since(start).Milliseconds(), commitOf(mo.dir), mo.packages
	if mo.sel.Sample > 0 {
		rep.Sample = &mutate.Sample{Size: len(todo), Seed: mo.sel.Seed}
	}
	rep.StaleTriage = triage.Unused(set.Mutants)
	rep.Summarize()
	if werr := rep.Write(dir); werr != nil {
		return failure(fmt.Errorf("mutation report: %w", werr))
	}
	fmt.Fprintf(s.Out, "%s\nmutation report: %s\n", rep.Headline(), filepath.Join(dir, mutate.ReportMDFile))
	minScore := mo.minScore
	if len(todo) < len(set.Mutants) {
		// A sample's score says little of the whole: it must only have
		// every mutant killed or explained.
		minScore = 0
		fmt.Fprintf(s.Out, "%d of %d mutants judged: --min-score (%.0f %%) applies to a run of every mutant\n", len(todo), len(set.Mutants), mo.minScore)
	}
	switch {
	case ctx.Err() != nil:
		return failure(fmt.Errorf("interrupted: %w", ctx.Err()))
	case err != nil:
		return failure(err)
	case !mutatePasses(rep, minScore, mo.survivors):
		return withCode(ExitFailed, fmt.Errorf("mutation: %s (at least %.0f %% required, no survivor unexplained, none mislabelled); see %s",
			rep.Headline(), minScore, filepath.Join(dir, mutate.ReportMDFile)))
	case rep.Counts[mutate.Survived] > 0:
		fmt.Fprintf(s.Out, "%d survivor(s) not explained by %s (--allow-survivors: listed in the report, not failing the run)\n",
			rep.Counts[mutate.Survived], mo.triage)
	}
	return nil
}

// mutatePasses is the run's verdict: every killable mutant killed or
// explained and at least minScore; with allowSurvivors, unexplained
// survivors are let through, never a mislabelled mutant, a contradicted
// triage entry or a score below minScore.
func mutatePasses(rep *mutate.Report, minScore float64, allowSurvivors bool) bool {
	if allowSurvivors {
		return rep.Sound() && rep.Score.Percent() >= minScore
	}
	return rep.OK(minScore)
}

// validate checks the flags and completes --dir and --triage.
func (mo *mutateOptions) validate() error {
	if mo.dir == "" {
		root, err := checkoutRoot()
		if err != nil {
			return withCode(ExitUsage, err)
		}
		mo.dir = root
	}
	if _, err := os.Stat(filepath.Join(mo.dir, "go.mod")); err != nil {
		return withCode(ExitUsage, fmt.Errorf("--dir %s: not a Go module's root (no go.mod): give bootproof's checkout", mo.dir))
	}
	if mo.triage == "" {
		mo.triage = filepath.Join(mo.dir, mutate.DefaultTriageFile)
	}
	if mo.parallel < 1 {
		return withCode(ExitUsage, fmt.Errorf("invalid --parallel %d: accepted: 1 or more", mo.parallel))
	}
	if mo.minScore < 0 || mo.minScore > 100 {
		return withCode(ExitUsage, fmt.Errorf("invalid --min-score %g: accepted: 0 to 100", mo.minScore))
	}
	if mo.sel.Sample > 0 && mo.sel.Seed == "" {
		return withCode(ExitUsage, errors.New("--sample needs --seed (e.g. the commit), so that a run's sample can be judged again"))
	}
	return nil
}

// checkoutRoot is the directory holding go.mod, from the working
// directory up.
func checkoutRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod in %s or above: run from bootproof's checkout or give --dir", dir)
		}
	}
}

// commitOf is dir's git commit, "" when git cannot tell.
func commitOf(dir string) string {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func listMutants(s Streams, set *mutate.Set) error {
	tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWHERE\tFUNC\tOPERATOR\tCHANGE\tNOTE")
	for _, m := range set.Mutants {
		note := ""
		if m.Unobservable != "" {
			note = "unobservable"
		} else if err := set.Check(m); err != nil {
			note = "does not compile"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", m.ID, m.Where(), m.Func, m.Operator, m.Change(), note)
	}
	return tw.Flush()
}

// mutate starts the embedded cluster and the fake nodes, as 'run' does,
// and judges the mutants; the report is nil when nothing was judged.
func (rc *runContext) mutate(ctx context.Context, mo mutateOptions, set *mutate.Set, triage *mutate.Triage, todo []mutate.Mutant, work string) (*mutate.Report, string, error) {
	rc.failed = true
	sweepTempDirs(rc.s)
	ctx, rl := openRunLog(ctx, rc.o.verbose, rc.o.verbosity, rc.s.Err)
	rc.defer_(rl.close)
	cl, err := rc.startCluster(ctx)
	if err != nil {
		return nil, "", err
	}
	run, err := rc.startRun(ctx, cl)
	if err != nil {
		return nil, "", err
	}
	subject.InitLogging(ctx)
	dir, err := reportDir(rc.o.reportDir)
	if err != nil {
		return nil, "", err
	}
	if err := rl.attach(dir); err != nil {
		return nil, "", err
	}
	fmt.Fprintf(rc.s.Err, "logs: %s\n", rl.path)
	logr.FromContextOrDiscard(ctx).Info("mutation run started", "run", run.ID, "mutants", len(todo), "reportDir", dir)
	nodes, err := rc.startNodes(ctx, cl, dir, map[string]string{})
	if err != nil {
		return nil, "", err
	}
	builds := filepath.Join(work, "builds")
	var mu sync.Mutex
	done := 0
	cfg := mutate.Config{Set: set, Triage: triage, Mutants: todo, Cluster: cl, Backend: nodes, Scenarios: rc.plan.scenarios,
		Module: set.Module, CoverPackages: set.Packages, CoverageOut: filepath.Join(dir, mutate.CoverageFile),
		RunID: run.ID, Parallel: mo.parallel, NodeBudget: mo.nodes, LogDir: filepath.Join(dir, "logs"),
		Builder: &mutate.Builder{Set: set, WorkDir: builds, Nice: 10},
		Progress: func(r mutate.Result) {
			mu.Lock()
			defer mu.Unlock()
			done++
			fmt.Fprintf(rc.s.Out, "[%d/%d] %s\n", done, len(todo), progressLine(r))
		}}
	fmt.Fprintf(rc.s.Out, "judging the unmutated reconciler by %d scenarios\n", len(rc.plan.scenarios))
	baseline, results, err := mutate.Run(ctx, cfg)
	var be *mutate.BaselineError
	if errors.As(err, &be) || (err != nil && results == nil) {
		return nil, dir, failure(err)
	}
	rep := &mutate.Report{Generated: len(set.Mutants), Parallel: mo.parallel, Baseline: baseline.Cases, Results: results}
	if c := baseline.Coverage; c != nil {
		rep.Reached = mutate.Ratio{Count: c.Covered, Total: c.Statements}
	}
	for _, sc := range rc.plan.scenarios {
		rep.Scenarios = append(rep.Scenarios, sc.Name)
	}
	rc.failed = false
	return rep, dir, err
}

func progressLine(r mutate.Result) string {
	line := fmt.Sprintf("mutant %d %s: %s %s", r.ID, r.Status, r.Where(), r.Change())
	switch {
	case r.Unreached:
		line += " — no scenario runs this code"
		if r.Triage != "" {
			line += " (" + r.Triage + ")"
		}
	case r.KilledBy != nil:
		line += fmt.Sprintf(" — killed by %s through %s", r.KilledBy.Scenario, strings.Join(r.KilledBy.Failed, ", "))
	case r.Status == mutate.Mislabelled || r.Status == mutate.NotJudged:
		line += " — " + firstLine(r.Why)
	}
	return line
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
