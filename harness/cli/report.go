package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/bootproof/bootproof/reports"
)

func newReportCommand(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "report DIR",
		Short: "Write the reports of a run again from its results.json and trace.json",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			r, err := reports.Rewrite(args[0])
			if err != nil {
				return withCode(ExitUsage, fmt.Errorf("report %s: %w", args[0], err))
			}
			n := reports.Count(r)
			fmt.Fprintf(s.Out, "%d passed, %d failed, %d errors, %d skipped\nreport: %s\n", n.Pass, n.Fail, n.Error, n.Skipped, filepath.Join(args[0], reports.HTMLFile))
			return nil
		},
	}
}
