package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bootproof/bootproof/reports"
)

func newReportCommand(s Streams) *cobra.Command {
	var soak bool
	var compare []string
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Write the reports of a run again from its results.json and trace.json",
		Long: `Writes the reports of a run again from its results.json and trace.json.
With --soak, DIR holds several runs of the same matrix, one per subdirectory
(run-1, run-2, ... as 'make soak' writes them): it writes the flake table,
soak.md and soak.json, of every case's verdict per run.
With --compare A=B, it compares what was observed of subjects A and B in
each scenario of DIR's results.json (pass, or fail and through which
assertions) and exits 1 if they differ: the same operator deployed two ways
must behave the same.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if soak {
				return writeSoak(s, args[0])
			}
			if len(compare) > 0 {
				return compareSubjects(s, args[0], compare)
			}
			r, err := reports.Rewrite(args[0])
			if err != nil {
				return withCode(ExitUsage, fmt.Errorf("report %s: %w", args[0], err))
			}
			n := reports.Count(r)
			fmt.Fprintf(s.Out, "%d passed, %d failed, %d errors, %d skipped\nreport: %s\n", n.Pass, n.Fail, n.Error, n.Skipped, filepath.Join(args[0], reports.HTMLFile))
			if c, err := reports.ReadCalibration(args[0]); err == nil {
				fmt.Fprintf(s.Out, "calibration: %s\n", reports.CalibrationHeadline(c))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&soak, "soak", false, "DIR holds several runs (subdirectories): write the flake table soak.md and soak.json")
	cmd.Flags().StringSliceVar(&compare, "compare", nil, "A=B: compare what was observed of subjects A and B per scenario; exit 1 if they differ (repeatable)")
	return cmd
}

// compareSubjects compares subject pairs in dir's results.json.
func compareSubjects(s Streams, dir string, pairs []string) error {
	r, err := reports.ReadResults(filepath.Join(dir, reports.ResultsFile))
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("report %s: %w", dir, err))
	}
	differ := 0
	for _, p := range pairs {
		a, b, ok := strings.Cut(p, "=")
		if !ok || a == "" || b == "" {
			return withCode(ExitUsage, fmt.Errorf("invalid --compare %q: accepted: SUBJECT=SUBJECT, e.g. bootproof-bootid-deployment=bootproof-bootid", p))
		}
		n, diffs, err := reports.CompareSubjects(r, a, b)
		if err != nil {
			return withCode(ExitUsage, fmt.Errorf("--compare %s: %w", p, err))
		}
		for _, d := range diffs {
			fmt.Fprintf(s.Out, "%s: %s observed %s, %s observed %s\n", d.Scenario, a, d.A, b, d.B)
		}
		fmt.Fprintf(s.Out, "%s and %s: %d scenarios compared, %d differ\n", a, b, n, len(diffs))
		differ += len(diffs)
	}
	if differ > 0 {
		return withCode(ExitFailed, fmt.Errorf("%d scenario(s) observed differently", differ))
	}
	return nil
}

// writeSoak writes the flake table of the runs under dir.
func writeSoak(s Streams, dir string) error {
	runs, err := reports.ReadSoak(dir)
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("report --soak %s: %w", dir, err))
	}
	soak := reports.BuildSoak(runs)
	if err := reports.WriteSoak(dir, soak); err != nil {
		return failure(err)
	}
	fmt.Fprintf(s.Out, "%d runs, %d cases, %d flaky\ntable: %s\n", len(soak.Runs), len(soak.Cases), soak.Flaky, filepath.Join(dir, reports.SoakMDFile))
	if soak.Flaky > 0 {
		return withCode(ExitFailed, fmt.Errorf("%d flaky case(s); see %s", soak.Flaky, filepath.Join(dir, reports.SoakMDFile)))
	}
	return nil
}
