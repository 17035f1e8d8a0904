package main

import (
	"fmt"

	"github.com/spf13/cobra"

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
	cmd.AddCommand(newEngineSecretCmd())
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
