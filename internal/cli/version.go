package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bootproof/bootproof/internal/version"
)

func newVersionCommand(s Streams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print bootproof's version, commit and build date, and the Kubernetes version and kind node image it targets",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			in := version.Get()
			switch output {
			case "text":
				return in.WriteText(s.Out)
			case "json":
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(in)
			default:
				return withCode(ExitUsage, fmt.Errorf("invalid --output %q: accepted: text, json", output))
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}
