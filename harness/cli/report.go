package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/bootproof/bootproof/reports"
)

func newReportCommand(s Streams) *cobra.Command {
	var soak bool
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Write the reports of a run again from its results.json and trace.json",
		Long: `Writes the reports of a run again from its results.json and trace.json.
With --soak, DIR holds several runs of the same matrix, one per subdirectory
(run-1, run-2, ... as 'make soak' writes them): it writes the flake table,
soak.md and soak.json, of every case's verdict per run.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if soak {
				return writeSoak(s, args[0])
			}
			r, err := reports.Rewrite(args[0])
			if err != nil {
				return withCode(ExitUsage, fmt.Errorf("report %s: %w", args[0], err))
			}
			n := reports.Count(r)
			fmt.Fprintf(s.Out, "%d passed, %d failed, %d errors, %d skipped\nreport: %s\n", n.Pass, n.Fail, n.Error, n.Skipped, filepath.Join(args[0], reports.HTMLFile))
			return nil
		},
	}
	cmd.Flags().BoolVar(&soak, "soak", false, "DIR holds several runs (subdirectories): write the flake table soak.md and soak.json")
	return cmd
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
