package main

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/bastion-mcp/bastion/app"
	"github.com/bastion-mcp/bastion/gateway/approval"
	"github.com/bastion-mcp/bastion/gateway/config"
)

func newApprovalsCmd() *cobra.Command {
	var cfgPath, file string
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List, approve or deny tool calls the gateway parked for a human",
	}
	cmd.PersistentFlags().StringVar(&cfgPath, "config", "bastion.toml", "gateway configuration file (for [approvals] file and [audit] dir)")
	cmd.PersistentFlags().StringVar(&file, "file", "", "approvals file (overrides --config)")
	store := func() (*approval.File, error) {
		if file != "" {
			return approval.NewFile(file), nil
		}
		cfg, err := config.Load(cfgPath)
		if err != nil {
			return nil, err
		}
		paths, err := app.ResolveGatewayPaths(cfg, nil)
		if err != nil {
			return nil, err
		}
		return approval.NewFile(paths.Approvals), nil
	}
	var all bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List pending approvals (--all: every approval)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := store()
			if err != nil {
				return err
			}
			as, err := s.List(cmd.Context())
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tSTATUS\tCREATED\tPRINCIPAL\tTOOL\tRULE\tREASON")
			for _, a := range as {
				if !all && a.Status != approval.Pending {
					continue
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s/%s\t%s\t%s\t%s\n", a.ID, a.Status, a.Created.Format(time.RFC3339),
					a.Tenant, a.Principal, a.Name, a.Rule, a.Reason)
			}
			return w.Flush()
		},
	}
	list.Flags().BoolVar(&all, "all", false, "include decided and used approvals")
	decide := func(approve bool) *cobra.Command {
		use, short := "deny ID", "Deny a parked call"
		if approve {
			use, short = "approve ID", "Approve a parked call; the agent's next identical call runs once"
		}
		var by string
		c := &cobra.Command{
			Use:   use,
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				s, err := store()
				if err != nil {
					return err
				}
				if by == "" {
					by = os.Getenv("USER")
				}
				a, err := s.Decide(cmd.Context(), args[0], approve, by)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s (%s/%s %s)\n", a.ID, a.Status, a.Tenant, a.Principal, a.Name)
				return nil
			},
		}
		c.Flags().StringVar(&by, "by", "", "approver name recorded with the decision (default $USER)")
		return c
	}
	cmd.AddCommand(list, decide(true), decide(false))
	return cmd
}
