package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bastion-mcp/bastion/app"
	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
)

type tokenFlags struct {
	dataDir, databaseURL, migrateURL string
	unsafeOwnerRole                  bool
	tenant                           string
}

func newTokenCmd() *cobra.Command {
	var f tokenFlags
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke personal access tokens (bst_…)",
		Long: `token manages personal access tokens for bastion serve. A token is shown
once, at creation; only its SHA-256 is stored. A token acts as principal
"pat:<id>" of its tenant with the scopes it was given.`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.dataDir, "data-dir", "", "directory of the SQLite store (default $XDG_DATA_HOME/bastion)")
	pf.StringVar(&f.databaseURL, "database-url", "", "PostgreSQL URL of the serving role (instead of SQLite)")
	pf.StringVar(&f.migrateURL, "migrate-url", "", "PostgreSQL URL of the table owner")
	pf.BoolVar(&f.unsafeOwnerRole, "unsafe-allow-owner-role", false, "development only: the serving role owns the tables")
	pf.StringVar(&f.tenant, "tenant", "", "the tenant (required)")

	var scopes, name, expires string
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a token and print it once",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(ctx context.Context, iss *auth.PATIssuer, out io.Writer) error {
				ttl, err := parseTTL(expires)
				if err != nil {
					return err
				}
				var sc []principal.Scope
				for s := range strings.SplitSeq(scopes, ",") {
					p, ok := principal.ParseScope(strings.TrimSpace(s))
					if !ok {
						return fault.New(fault.InvalidArgument, "unknown scope %q (want %v)", s, principal.AllScopes())
					}
					sc = append(sc, p)
				}
				tok, rec, err := iss.Create(ctx, f.tenant, name, sc, ttl)
				if err != nil {
					return err
				}
				fmt.Fprintln(out, tok)
				fmt.Fprintf(cmd.ErrOrStderr(), "token %s for tenant %q created; it is shown only once\n", rec.ID, rec.Tenant)
				return nil
			})
		},
	}
	create.Flags().StringVar(&scopes, "scopes", string(principal.ReviewsRead), "comma-separated scopes: reviews:read, reviews:write, reviews:cancel, targets:write")
	create.Flags().StringVar(&name, "name", "cli", "a label for the token")
	create.Flags().StringVar(&expires, "expires", "90d", `lifetime ("30d", "12h"; "0" never expires)`)

	list := &cobra.Command{
		Use:   "list",
		Short: "List the tenant's tokens (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(ctx context.Context, iss *auth.PATIssuer, out io.Writer) error {
				recs, err := iss.List(ctx, f.tenant)
				if err != nil {
					return err
				}
				now := time.Now()
				for _, r := range recs {
					state := "active"
					switch {
					case !r.RevokedAt.IsZero():
						state = "revoked"
					case !r.Active(now):
						state = "expired"
					}
					exp := "never"
					if !r.ExpiresAt.IsZero() {
						exp = r.ExpiresAt.UTC().Format(time.RFC3339)
					}
					fmt.Fprintf(out, "%s\t%s\t%s\t%s\texpires %s\n", r.ID, state, r.Name, joinScopes(r.Scopes), exp)
				}
				return nil
			})
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token now",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(ctx context.Context, iss *auth.PATIssuer, out io.Writer) error {
				if err := iss.Revoke(ctx, f.tenant, args[0]); err != nil {
					if _, ok := fault.As(err); !ok {
						return fault.Wrap(err, fault.InvalidArgument, "tenant %q has no token %q", f.tenant, args[0])
					}
					return err
				}
				fmt.Fprintf(out, "revoked %s\n", args[0])
				return nil
			})
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

func joinScopes(s []principal.Scope) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = string(x)
	}
	return strings.Join(parts, ",")
}

// run opens the store (no browser), runs do with an issuer over it and
// prints a typed error line.
func (f tokenFlags) run(cmd *cobra.Command, do func(context.Context, *auth.PATIssuer, io.Writer) error) error {
	ctx := cmd.Context()
	err := func() error {
		if f.tenant == "" {
			return fault.New(fault.InvalidArgument, "--tenant is required")
		}
		logger, err := newLogger(cmd, cmd.ErrOrStderr(), slog.LevelWarn)
		if err != nil {
			return err
		}
		b, err := app.OpenBase(ctx, app.Config{
			DataDir: f.dataDir, DatabaseURL: f.databaseURL, MigrateURL: f.migrateURL,
			UnsafeAllowOwnerRole: f.unsafeOwnerRole, Logger: logger,
		})
		if err != nil {
			return err
		}
		defer b.Close()
		return do(ctx, auth.NewPATIssuer(b.Store, nil, nil), cmd.OutOrStdout())
	}()
	if err != nil {
		return commandFailed(cmd.ErrOrStderr(), "bastion token", err, "the token command failed")
	}
	return nil
}
