package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bastion-mcp/bastion/gateway/validate"
)

// newValidateCmd wires `bastion validate --config FILE`: exit 0 and the
// effective policy on stdout, or exit 1 and each problem with its line on
// stderr.
func newValidateCmd() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check a gateway configuration and print the effective policy per server and tool",
		Long: "Strictly decodes the configuration (an unknown key is an error with its line), compiles every\n" +
			"glob, regular expression and limit, and prints, for each tool the file names, the profiles and\n" +
			"rules that decide a call to it, in evaluation order.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validate.File(path, cmd.OutOrStdout()); err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), err)
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", "bastion.toml", "configuration file")
	return cmd
}
