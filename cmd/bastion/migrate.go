package main

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/bastion-mcp/bastion/app"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/store/postgres"
)

type migrateFlags struct {
	dataDir, databaseURL, migrateURL string
}

func newMigrateCmd() *cobra.Command {
	var f migrateFlags
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Migrate the store and exit (a deployment's one-shot step before serve)",
		Long: `migrate opens the store, applies bastion's and River's migrations and
exits. On PostgreSQL it connects as the serving role (--database-url) and
migrates as the role that owns the tables (--migrate-url), granting the
serving role what it needs, so replicas started afterwards with
--database-url alone find the schema current and hold no DDL right. On
SQLite it migrates the store in --data-dir.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(cmd, cmd.ErrOrStderr(), slog.LevelInfo)
			if err == nil && f.dataDir != "" && f.databaseURL != "" {
				err = fault.New(fault.InvalidArgument, "pass --data-dir or --database-url, not both")
			}
			var b *app.Base
			if err == nil {
				b, err = app.OpenBase(cmd.Context(), app.Config{DataDir: f.dataDir, DatabaseURL: f.databaseURL, MigrateURL: f.migrateURL, Logger: log})
			}
			if err != nil {
				reportFailure(cmd.ErrOrStderr(), "bastion migrate", err, "the store could not be migrated", postgres.Passwords(f.databaseURL, f.migrateURL)...)
				return exitError{1}
			}
			defer b.Close()
			if err := b.Migrated(cmd.Context()); err != nil {
				reportFailure(cmd.ErrOrStderr(), "bastion migrate", err, "the store is not at this binary's schema")
				return exitError{1}
			}
			log.Info("bastion migrate: the store is at this binary's schema")
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dataDir, "data-dir", "", "directory of the SQLite store (default $XDG_DATA_HOME/bastion)")
	fl.StringVar(&f.databaseURL, "database-url", "", "PostgreSQL URL of the serving role")
	fl.StringVar(&f.migrateURL, "migrate-url", "", "PostgreSQL URL of the role that owns and migrates bastion's tables")
	return cmd
}
