package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bastion-mcp/bastion/app"
	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/edge"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/store/postgres"
)

// devTenant is the tenant `serve --dev` creates its token for (and the
// demo wiring pre-verifies its host for).
const devTenant = "dev"

type serveFlags struct {
	stdioFlags // data dir, log level, review tuning, demo wiring

	addr, adminAddr, path   string
	adminPublic             bool
	databaseURL, migrateURL string
	unsafeOwnerRole         bool
	resource, issuer        string
	jwksURL, audience       string
	tenantClaim, rolesClaim string
	gateway                 string
	jwksAllowPrivate        bool
	requireATJWT            bool
	methodScopes            []string
	allowedHosts            []string
	allowedOrigins          []string
	trustedProxy            bool
	agentAccessOff          []string
	dev, noWorkers          bool
	unsafeNoAuth            bool
	engineURLs              []string
	engineSecretFile        string
	engineInstallation      string
}

func newServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the design-review tools over remote MCP (Streamable HTTP) and REST",
		Long: `serve is the remote edge: MCP at --path on both wires (2025-11-25 sessions
and 2026-07-28 stateless, chosen per request), the REST API at /api/v1/,
/livez and /readyz on --addr, and /metrics on --admin-addr.

Dark by default: it binds loopback unless told otherwise and refuses a
non-loopback address without authentication; BASTION_MCP=off makes the MCP
path answer 404, and --agent-access-off does the same for chosen tenants; a
request with Forwarded/X-Forwarded-* headers is refused unless --trusted-proxy.

Authentication: personal access tokens (bastion token create) always; OAuth
access tokens (JWT) when --resource, --issuer and --jwks-url are given. The
JWKS is fetched over https only (a plain-http --jwks-url is refused at start);
--jwks-allow-private lets the fetch reach a loopback or private issuer, for
tests and local development only, and an issuer under a private CA is trusted
through SSL_CERT_FILE. With --resource, RFC 9728 metadata is served. A token
is read only from the Authorization header: ?access_token= is ignored (401).
--require-at-jwt refuses JWTs whose typ is not at+jwt (RFC 9068).
--method-scopes METHOD=SCOPE[,SCOPE...] (repeatable) makes an MCP method need
scopes, answered 403 insufficient_scope otherwise; initialize's scopes are
required of every MCP request on both wires (the 2026-07-28 wire has no
initialize), e.g. --method-scopes initialize=reviews:read.

State: SQLite in --data-dir by default; --database-url puts it on PostgreSQL
so several replicas share jobs (serve as a role that owns no table and
migrate with --migrate-url as the owner; without it the serving role only
reads the migration state and refuses to start while migrations are
pending). --no-workers serves the API only.

Engines: by default reviews run in this process's Chromium. --engine-url
URL[,URL...] sends them to a pool of bastion engine serve processes over the
signed job API instead (this process then needs no browser, and /readyz
checks the engines' /readyz): each review is split by route over the
engines, a job whose engine dies is moved to another, and a recheck is a
full review of the finding's route. --engine-secret-file is a 0600 file of
"INSTALLATION-ID SECRET" lines; --engine-installation picks the line (the
engines' secrets file must hold the same one, and their targets policy must
allow what this server reviews for it).

Start-up failures print their cause and the fix; the listeners are bound
first, so a port in use fails before the store is opened or a token minted.

Gateway: --gateway FILE (a bastion.toml) serves the governing gateway on
the MCP path instead of the design-review tools alone: its upstreams, policy
(scopes and, from a JWT's --roles-claim, roles), approvals, pins, rate
limits, inspection and audit ledger, for the authenticated principal. A
[server.NAME] kind = "review" is this server's design-review service, called
as that principal. Every refusal of the HTTP edge is recorded in the ledger.

--dev (loopback only) creates a token for tenant "dev" with every scope and
prints it once on stderr with the URL.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := f.run(cmd, cmd.ErrOrStderr())
			if err != nil {
				reportFailure(cmd.ErrOrStderr(), "bastion serve", err, "the server could not run", postgres.Passwords(f.databaseURL, f.migrateURL)...)
				return exitError{1}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8080", "MCP and REST listen address (loopback unless authentication is on)")
	fl.StringVar(&f.adminAddr, "admin-addr", "127.0.0.1:9090", `metrics listen address ("-" disables it)`)
	fl.BoolVar(&f.adminPublic, "admin-public", false, "allow a non-loopback --admin-addr")
	fl.StringVar(&f.path, "path", edge.DefaultPath, "MCP path")
	fl.StringVar(&f.dataDir, "data-dir", "", "directory of the SQLite store (default $XDG_DATA_HOME/bastion)")
	fl.StringVar(&f.databaseURL, "database-url", "", "PostgreSQL URL of the serving role (instead of SQLite)")
	fl.StringVar(&f.migrateURL, "migrate-url", "", "PostgreSQL URL of the role that owns and migrates bastion's tables")
	fl.BoolVar(&f.unsafeOwnerRole, "unsafe-allow-owner-role", false, "development only: let the serving role own the tables (row-level security then protects nothing)")
	fl.StringVar(&f.resource, "resource", "", "this server's canonical MCP URI (RFC 8707); enables RFC 9728 metadata")
	fl.StringVar(&f.issuer, "issuer", "", "OAuth issuer (exact iss)")
	fl.StringVar(&f.jwksURL, "jwks-url", "", "the issuer's JWKS URL")
	fl.StringVar(&f.audience, "audience", "", "required aud (default --resource)")
	fl.StringVar(&f.tenantClaim, "tenant-claim", auth.DefaultTenantClaim, "JWT claim naming the tenant")
	fl.StringVar(&f.rolesClaim, "roles-claim", auth.DefaultRolesClaim, "JWT claim naming the caller's roles, for the gateway's policy (personal access tokens carry none)")
	fl.StringVar(&f.gateway, "gateway", "", "serve the governing gateway configured in this bastion.toml on the MCP path")
	fl.BoolVar(&f.jwksAllowPrivate, "jwks-allow-private", false, "tests and local development only: fetch the JWKS from a loopback/private issuer (still https only)")
	fl.BoolVar(&f.requireATJWT, "require-at-jwt", false, `refuse JWTs whose header typ is not "at+jwt" (RFC 9068 access tokens only)`)
	fl.StringArrayVar(&f.methodScopes, "method-scopes", nil, "METHOD=SCOPE[,SCOPE...]: scopes an MCP method needs (repeatable; initialize's apply to every MCP request)")
	fl.StringSliceVar(&f.allowedHosts, "allowed-hosts", nil, "accepted Host values (default loopback names)")
	fl.StringSliceVar(&f.allowedOrigins, "allowed-origins", nil, "accepted browser Origins (default same-origin)")
	fl.BoolVar(&f.trustedProxy, "trusted-proxy", false, "a reverse proxy in front sets Forwarded/X-Forwarded-* headers")
	fl.StringSliceVar(&f.agentAccessOff, "agent-access-off", nil, "tenants whose agent access is off: the MCP path answers them 404 (REST still works)")
	fl.BoolVar(&f.dev, "dev", false, `loopback development server: create and print a token for tenant "dev"`)
	fl.BoolVar(&f.noWorkers, "no-workers", false, "serve the API only; another replica runs the jobs")
	fl.StringSliceVar(&f.engineURLs, "engine-url", nil, "review on these engines (bastion engine serve) over the signed job API instead of a local browser: URL[,URL...]")
	fl.StringVar(&f.engineSecretFile, "engine-secret-file", "", "with --engine-url: a 0600 file of INSTALLATION-ID SECRET lines (bastion engine secret rotate makes one)")
	fl.StringVar(&f.engineInstallation, "engine-installation", "", "with --engine-url: the installation id to sign as (default the secret file's only one)")
	fl.BoolVar(&f.allowPrivate, "allow-private", false, "also allow loopback/private development servers as targets, without an ownership proof")
	fl.StringVar(&f.logLevel, "log-level", "info", "stderr log level: debug, info, warn or error")
	fl.DurationVar(&f.reviewTimeout, "review-timeout", 0, "bound on one review or recheck run (default 3m)")
	fl.DurationVar(&f.rescueAfter, "rescue-stuck-after", 0, "rerun a job left running this long by a dead replica (default review-timeout + 90s)")
	fl.StringVar(&f.demoSite, "unsafe-demo-site", "", `demo only: HOST=IP:PORT serves HOST (pre-verified for tenant "dev") from a local address`)
	fl.StringVar(&f.demoSPKI, "unsafe-demo-spki", "", "demo only: base64 SHA-256 SPKI hash of the certificate the browser trusts")
	fl.BoolVar(&f.unsafeNoAuth, "unsafe-no-auth-loopback", false, `conformance suite only: serve everyone as tenant "dev" without a token; refused unless --addr is loopback`)
	for _, h := range []string{"unsafe-demo-site", "unsafe-demo-spki", "unsafe-no-auth-loopback"} {
		fl.MarkHidden(h)
	}
	return cmd
}

func (f serveFlags) run(cmd *cobra.Command, stderr io.Writer) error {
	ctx := cmd.Context()
	cfg, err := f.config(cmd, stderr)
	if err != nil {
		return err
	}
	tp, done, err := openTracing(cmd, cfg.Logger)
	if err != nil {
		return err
	}
	defer done()
	cfg.Tracing = tp
	if f.databaseURL != "" && f.dataDir != "" {
		return fault.New(fault.InvalidArgument, "pass --data-dir or --database-url, not both")
	}
	cfg.DatabaseURL, cfg.MigrateURL, cfg.UnsafeAllowOwnerRole = f.databaseURL, f.migrateURL, f.unsafeOwnerRole
	switch {
	case len(f.engineURLs) > 0:
		cfg.EnginePool = &app.EnginePoolConfig{URLs: f.engineURLs, SecretsFile: f.engineSecretFile, Installation: f.engineInstallation}
	case f.engineSecretFile != "" || f.engineInstallation != "":
		return fault.New(fault.InvalidArgument, "--engine-secret-file and --engine-installation need --engine-url")
	}
	if cfg.Demo != nil {
		cfg.Demo.Tenant = devTenant
	}
	devP, err := principal.New(devTenant, "dev", principal.AllScopes()...)
	if err != nil {
		return err
	}
	methodScopes, err := auth.ParseMethodScopes(f.methodScopes)
	if err != nil {
		return fault.Wrap(err, fault.InvalidArgument, "bad --method-scopes: %v", err)
	}
	sc := app.ServeConfig{
		Addr: f.addr, AdminAddr: f.adminAddr, AdminPublic: f.adminPublic, Path: f.path,
		AllowedHosts: f.allowedHosts, AllowedOrigins: f.allowedOrigins, TrustedProxy: f.trustedProxy,
		Resource: f.resource, Issuer: f.issuer, JWKSURL: f.jwksURL, Audience: f.audience,
		TenantClaim: f.tenantClaim, RolesClaim: f.rolesClaim, JWKSAllowPrivate: f.jwksAllowPrivate,
		RequireAccessTokenType: f.requireATJWT, MethodScopes: methodScopes,
		UnsafeNoAuth: f.unsafeNoAuth, DevPrincipal: devP,
		Off:            func() bool { return os.Getenv("BASTION_MCP") == "off" },
		AgentAccessOff: f.agentAccessOff,
		Listening: func(mcpURL, adminAddr string) {
			fmt.Fprintf(stderr, "bastion serve: listening on %s (metrics on %s)\n", mcpURL, adminAddr)
		},
	}
	if f.gateway != "" {
		gc, err := config.Load(f.gateway)
		if err != nil {
			return fault.Wrap(err, fault.InvalidArgument, "bad --gateway configuration: %v", err)
		}
		sc.Gateway, sc.Version = gc, version
	}
	if f.dev || f.unsafeNoAuth {
		if err := edge.CheckBind(f.addr, false); err != nil {
			// --unsafe-no-auth-loopback is hidden: say what it does, not its name.
			what := "--dev"
			if !f.dev {
				what = "serving without authentication"
			}
			return fault.New(fault.InvalidArgument, "%s needs a loopback --addr", what)
		}
	}
	if f.dev {
		sc.Prepare = func(ctx context.Context, a *app.App) error {
			tok, rec, err := auth.NewPATIssuer(a.Store, nil, nil).Create(ctx, devTenant, "serve --dev", principal.AllScopes(), 24*time.Hour)
			if err != nil {
				return fault.Wrap(err, fault.Unavailable, "serve --dev could not store its token: see the cause (a full disk: free space, or pass --data-dir)").WithNext(fault.None)
			}
			fmt.Fprintf(stderr, "bastion serve --dev: token for tenant %q (id %s, every scope, valid 24h), shown once:\nBASTION_TOKEN=%s\n", devTenant, rec.ID, tok)
			return nil
		}
	}
	return app.RunServe(ctx, cfg, sc, f.noWorkers)
}

// parseTTL parses a token lifetime: a Go duration or a number of days ("30d").
func parseTTL(s string) (time.Duration, error) {
	if s == "" || s == "0" {
		return 0, nil
	}
	var days int
	if n, err := fmt.Sscanf(s, "%dd", &days); err == nil && n == 1 && fmt.Sprintf("%dd", days) == s && days > 0 {
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fault.New(fault.InvalidArgument, "bad --expires %q: want e.g. 30d or 12h", s)
	}
	return d, nil
}

// reportFailure prints err for the operator on one line: its code, message
// (which says what fixes it), next action and the underlying cause, so a
// start-up failure names what went wrong and not only that something did.
// Each of secrets (a database password) is blanked wherever it appears.
func reportFailure(w io.Writer, prefix string, err error, internalMessage string, secrets ...string) {
	fe := fault.From(err, internalMessage)
	line := fmt.Sprintf("%s: %s: %s (next_action: %s", prefix, fe.Code, fe.Message, fe.NextAction)
	if cause := fe.Unwrap(); cause != nil {
		line += "; cause: " + cause.Error()
	}
	line += ")"
	for _, s := range secrets {
		if s != "" {
			line = strings.ReplaceAll(line, s, "[redacted]")
		}
	}
	fmt.Fprintln(w, line)
}
