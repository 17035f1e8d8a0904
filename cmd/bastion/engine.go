package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bastion-mcp/bastion/app"
	"github.com/bastion-mcp/bastion/enginehttp"
	"github.com/bastion-mcp/bastion/fault"
)

func newEngineCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "engine",
		Short: "Serve bastion's engine over the signed job API, and manage its installation secrets",
		Long: `engine serves bastion's local engine (Chromium and the measured checks) over
the HMAC-signed job API of the peer contract (POST /jobs, GET and DELETE
/jobs/{id}, GET /readyz), so a design-review server written for that API can
hand its reviews to bastion. Each client is an installation with its own
secret in a secrets file: one "INSTALLATION-ID SECRET" line each.`,
	}
	cmd.AddCommand(newEngineSecretCmd(), newEngineServeCmd())
	return cmd
}

func newEngineServeCmd() *cobra.Command {
	var listen, secrets, dataDir, logLevel string
	var allowPrivate bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the signed job API (loopback by default)",
		Long: `serve runs bastion's engine behind the job API on --listen (default
127.0.0.1:8787): the same store in --data-dir, River jobs and Chromium pool as
bastion serve. Every /jobs request must carry x-gate-installation,
x-gate-timestamp (milliseconds) and x-gate-signature ("sha256=" + hex
HMAC-SHA256 of timestamp.installation.body under the installation's secret
from --secrets; body "" for GET and DELETE). An installation id is also the
tenant whose verified hosts (bastion targets --tenant ID) it may review.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			level, err := app.ParseLogLevel(logLevel)
			if err != nil {
				return err
			}
			log, err := newLogger(cmd, cmd.ErrOrStderr(), level)
			if err != nil {
				return err
			}
			enginehttp.EngineVersion = "bastion " + version
			cfg := app.Config{DataDir: dataDir, AllowPrivate: allowPrivate, Logger: log}
			return app.RunEngineServe(cmd.Context(), cfg, app.EngineServeConfig{
				Listen: listen, SecretsFile: secrets,
				Listening: func(u string) { fmt.Fprintf(cmd.ErrOrStderr(), "bastion engine serve: listening on %s\n", u) },
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&listen, "listen", "127.0.0.1:8787", "address of the job API")
	fl.StringVar(&secrets, "secrets", "", "the installations' secrets file (required; see bastion engine secret rotate)")
	fl.StringVar(&dataDir, "data-dir", "", "directory of the SQLite store (default $XDG_DATA_HOME/bastion)")
	fl.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fl.BoolVar(&allowPrivate, "allow-private", false, "also allow loopback/private development servers as targets, without an ownership proof")
	return cmd
}

func newEngineSecretCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "secret", Short: "Manage the installations' HMAC secrets"}
	var id, file string
	rotate := &cobra.Command{
		Use:   "rotate",
		Short: "Give an installation a new secret (adding it if new) and print it once",
		Long: `rotate writes a fresh random secret for --installation into --file (created
0600 if absent), replacing the file atomically under a lock, and prints the
secret on stdout: give it to that installation's client. A running
bastion engine serve reads the replaced file on its next request, and the
old secret stops working then.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" || id == "" {
				return fault.New(fault.InvalidArgument, "--installation and --file are required")
			}
			secret, err := enginehttp.RotateSecret(cmd.Context(), file, id)
			if err != nil {
				return fault.Wrap(err, fault.InvalidArgument, "cannot rotate the secret of %s in %s: %v", id, file, err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), secret)
			fmt.Fprintf(cmd.ErrOrStderr(), "installation %s has a new secret in %s; it is shown only once\n", id, file)
			return nil
		},
	}
	rotate.Flags().StringVar(&id, "installation", "", "the installation id (1-128 of A-Z a-z 0-9 . _ : -); also the tenant whose verified hosts it may review")
	rotate.Flags().StringVar(&file, "file", "", "the secrets file")
	cmd.AddCommand(rotate)
	return cmd
}
