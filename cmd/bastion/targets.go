package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/bastion-mcp/bastion/app"
	"github.com/bastion-mcp/bastion/targets"
)

type targetsFlags struct {
	dataDir string
	tenant  string
}

func newTargetsCmd() *cobra.Command {
	var f targetsFlags
	cmd := &cobra.Command{
		Use:   "targets",
		Short: "Prove ownership of the hosts a tenant may have reviewed",
		Long: `A review target must be a host its tenant has proved it controls. add issues
a challenge; publish it as a DNS TXT record or a well-known file on the host;
verify checks it (DNS first, then HTTPS through the egress guard); list shows
each host and whether its proof holds. The tenant defaults to "local", the
tenant of bastion stdio.`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.dataDir, "data-dir", "", "directory of the store (default $XDG_DATA_HOME/bastion)")
	pf.StringVar(&f.tenant, "tenant", app.LocalTenant, "tenant the hosts belong to")
	cmd.AddCommand(
		&cobra.Command{
			Use:   "add HOST",
			Short: "Issue (or show) the ownership challenge for HOST",
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return f.run(cmd, func(ctx context.Context, reg *targets.Registry, w io.Writer) error {
					c, err := reg.Add(ctx, f.tenant, args[0])
					if err != nil {
						return err
					}
					fmt.Fprintf(w, "Prove that tenant %q controls %s with either of:\n\n", f.tenant, c.Host)
					fmt.Fprintf(w, "  a DNS TXT record\n    name:  %s\n    value: %s\n\n", c.TXTName, c.TXTValue)
					fmt.Fprintf(w, "  or an HTTPS file\n    url:   %s\n    body:  %s\n\n", c.WellKnownURL, c.Token)
					fmt.Fprintf(w, "then run: bastion targets verify %s\n(the challenge expires %s)\n", c.Host, c.ExpiresAt.UTC().Format(time.RFC3339))
					return nil
				})
			},
		},
		&cobra.Command{
			Use:   "verify HOST",
			Short: "Check HOST's published proof and mark it verified",
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return f.run(cmd, func(ctx context.Context, reg *targets.Registry, w io.Writer) error {
					t, err := reg.Verify(ctx, f.tenant, args[0])
					if err != nil {
						return err
					}
					fmt.Fprintf(w, "verified %s for tenant %q by %s, until %s\n", t.Host, f.tenant, t.Method, t.ExpiresAt.UTC().Format(time.RFC3339))
					return nil
				})
			},
		},
		&cobra.Command{
			Use:   "list",
			Short: "List the tenant's hosts and their state",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return f.run(cmd, func(ctx context.Context, reg *targets.Registry, w io.Writer) error {
					ts, err := reg.List(ctx, f.tenant)
					if err != nil {
						return err
					}
					if len(ts) == 0 {
						fmt.Fprintf(w, "no targets for tenant %q (bastion targets add HOST)\n", f.tenant)
						return nil
					}
					now := time.Now()
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "HOST\tSTATE\tMETHOD\tEXPIRES")
					for _, t := range ts {
						state := "pending"
						switch {
						case t.Verified(now):
							state = "verified"
						case !now.Before(t.ExpiresAt):
							state = "expired"
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Host, state, cmp.Or(t.Method, "-"), t.ExpiresAt.UTC().Format(time.RFC3339))
					}
					return tw.Flush()
				})
			},
		},
	)
	return cmd
}

// run opens the store (no browser), runs do and prints a typed error line.
func (f targetsFlags) run(cmd *cobra.Command, do func(context.Context, *targets.Registry, io.Writer) error) error {
	ctx := cmd.Context()
	logger, err := newLogger(cmd, cmd.ErrOrStderr(), slog.LevelWarn)
	var b *app.Base
	if err == nil {
		b, err = app.OpenBase(ctx, app.Config{DataDir: f.dataDir, Logger: logger})
	}
	if err == nil {
		err = do(ctx, b.Targets, cmd.OutOrStdout())
		b.Close()
	}
	if err != nil {
		return commandFailed(cmd.ErrOrStderr(), "bastion targets", err, "the targets command failed")
	}
	return nil
}
