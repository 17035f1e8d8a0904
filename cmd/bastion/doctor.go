package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/bastion-mcp/bastion/app"
)

func newDoctorCmd() *cobra.Command {
	var cfg app.DoctorConfig
	var engineURLs []string
	var engineSecrets, engineInst string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check what a review needs on this machine and say what to install",
		Long: `doctor checks what a design review needs here: a Chromium found the way
the engine finds it (` + "`BASTION_CHROMIUM`" + `, then PATH, then where the usual
packages install it on Linux and macOS) that really starts headless behind
the egress proxy; fonts to render with (the DejaVu, Liberation and Noto Sans
families the reference renderings use are recommended); a writable data
directory; and PostgreSQL when --database-url is given. Each problem is
printed with what to install on this system. With --engine-url (and serve's
--engine-secret-file and --engine-installation) it checks instead that an
engine of that pool answers its /readyz, as serve on an engine pool needs no
browser and no fonts.

The exit status is 0 when a review can run here (warnings allowed) and 1
when a check it needs failed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(cmd, cmd.ErrOrStderr(), slog.LevelWarn)
			if err != nil {
				return err
			}
			cfg.Logger = log
			if len(engineURLs) > 0 {
				cfg.EnginePool = &app.EnginePoolConfig{URLs: engineURLs, SecretsFile: engineSecrets, Installation: engineInst}
			}
			rep := app.Doctor(cmd.Context(), cfg)
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "bastion doctor: %s\n", rep.System)
			for _, c := range rep.Checks {
				fmt.Fprintf(w, "%-4s  %-8s  %s\n", c.Status, c.Name, c.Detail)
				if c.Fix != "" {
					fmt.Fprintf(w, "      %-8s  fix: %s\n", "", c.Fix)
				}
			}
			if rep.Failed() {
				fmt.Fprintln(w, "bastion doctor: a review cannot run here until each FAIL above is fixed")
				return exitError{1}
			}
			fmt.Fprintln(w, "bastion doctor: a review can run here")
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.DataDir, "data-dir", "", "data directory to check (default $XDG_DATA_HOME/bastion)")
	fl.StringVar(&cfg.DatabaseURL, "database-url", "", "PostgreSQL URL to check, as serve gets it (unchecked when empty)")
	fl.DurationVar(&cfg.LaunchTimeout, "launch-timeout", 0, "bound on the browser's start (default 2m)")
	fl.StringSliceVar(&engineURLs, "engine-url", nil, "check these engines' /readyz (as serve --engine-url uses them) instead of the browser and fonts")
	fl.StringVar(&engineSecrets, "engine-secret-file", "", "with --engine-url: serve's --engine-secret-file")
	fl.StringVar(&engineInst, "engine-installation", "", "with --engine-url: serve's --engine-installation")
	return cmd
}
