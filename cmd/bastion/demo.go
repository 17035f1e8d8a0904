package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newDemoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Run the offline design-review demo (not yet: lands with the review server)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "bastion demo: not yet — the offline demo lands with the design-review MCP server.")
			return nil
		},
	}
}
