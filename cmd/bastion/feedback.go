package main

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/bastion-mcp/bastion/app"
	"github.com/bastion-mcp/bastion/fault"
)

func newFeedbackCmd() *cobra.Command {
	var f struct{ dataDir, databaseURL, tenant string }
	cmd := &cobra.Command{
		Use:   "feedback",
		Short: "Read the team's verdicts on findings",
		Long: `Each finding a team accepts (design_review_panel_action apply_fix, or POST
/api/v1/reviews/{review_id}/feedback), dismisses or disputes is a feedback
event, kept per tenant.`,
	}
	export := &cobra.Command{
		Use:   "export",
		Short: "Write feedback events to stdout as JSON lines",
		Long: `export writes one JSON object per event (tenant_id, event_id, review_id,
finding_id, kind, verdict, reason, principal_id, at), oldest first within a
tenant; without --tenant, every tenant's in tenant order.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var err error
			if f.dataDir != "" && f.databaseURL != "" {
				err = fault.New(fault.InvalidArgument, "pass --data-dir or --database-url, not both")
			}
			var b *app.Base
			if err == nil {
				var logger *slog.Logger
				if logger, err = newLogger(cmd, cmd.ErrOrStderr(), slog.LevelWarn); err == nil {
					b, err = app.OpenBase(ctx, app.Config{DataDir: f.dataDir, DatabaseURL: f.databaseURL, Logger: logger})
				}
			}
			if err == nil {
				_, err = app.ExportFeedback(ctx, b.Store, f.tenant, cmd.OutOrStdout())
				b.Close()
			}
			if err != nil {
				return commandFailed(cmd.ErrOrStderr(), "bastion feedback export", err, "the feedback export failed")
			}
			return nil
		},
	}
	fl := export.Flags()
	fl.StringVar(&f.dataDir, "data-dir", "", "directory of the store (default $XDG_DATA_HOME/bastion)")
	fl.StringVar(&f.databaseURL, "database-url", "", "PostgreSQL URL of the serving role (instead of SQLite)")
	fl.StringVar(&f.tenant, "tenant", "", "export only this tenant's events (default every tenant)")
	cmd.AddCommand(export)
	return cmd
}
