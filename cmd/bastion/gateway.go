package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/bastion-mcp/bastion/app"
	"github.com/bastion-mcp/bastion/edge"
	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/tracing"
)

type gatewayFlags struct {
	config    string
	addr      string
	adminAddr string
	stdio     bool
	logLevel  string
	dataDir   string
}

func newGatewayCmd() *cobra.Command {
	var f gatewayFlags
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Serve the configured upstream MCP servers through the governing gateway",
		Long: `gateway connects every [server.NAME] in --config, merges their tools as
NAME__tool, and serves them to agents over the HTTP edge (--addr, loopback
only without authentication) or over stdin/stdout (--stdio). Every tools/call
passes routing, policy (with approvals), pins, rate limits and inspection, and
every outcome is appended to the audit ledger ([audit] dir, default
$XDG_DATA_HOME/bastion/audit); a call the ledger cannot record is refused.
Parked calls wait in [approvals] file for ` + "`bastion approvals`" + `; tool
pins live in [pins] file (default pins.json beside the audit directory) and a
drifted tool stays hidden until ` + "`bastion pin approve`" + `.

This command serves without authentication, so only on loopback; to serve
the gateway to remote agents with tokens, use ` + "`bastion serve --gateway FILE`" + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			level, err := app.ParseLogLevel(f.logLevel)
			if err != nil {
				return err
			}
			log, err := newLogger(cmd, cmd.ErrOrStderr(), level)
			if err != nil {
				return err
			}
			tp, done, err := openTracing(cmd, log)
			if err != nil {
				return err
			}
			defer done()
			return runGateway(ctx, f, log, tp, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "bastion.toml", "gateway configuration file")
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8787", "HTTP edge address (loopback: no authentication is wired here)")
	fl.StringVar(&f.adminAddr, "admin-addr", "", "loopback address serving /metrics (off when empty)")
	fl.BoolVar(&f.stdio, "stdio", false, "serve one local agent on stdin/stdout instead of HTTP")
	fl.StringVar(&f.logLevel, "log-level", "info", "stderr log level: debug, info, warn or error")
	fl.StringVar(&f.dataDir, "data-dir", "", "data directory of the in-process review server (kind = \"review\")")
	return cmd
}

func runGateway(ctx context.Context, f gatewayFlags, log *slog.Logger, tp *tracing.Provider, stdout io.Writer) error {
	cfg, err := config.Load(f.config)
	if err != nil {
		return err
	}
	// A process that is only the gateway: its allocation is the SDK's
	// per-message garbage, so the collector runs less often (GOGC wins).
	app.TuneGatewayRuntime(os.Getenv)
	if !f.stdio {
		if err := edge.CheckBind(f.addr, false); err != nil {
			return err
		}
		if f.adminAddr != "" {
			if err := edge.CheckAdminBind(f.adminAddr, false); err != nil {
				return err
			}
		}
	}
	g, err := app.OpenGateway(ctx, cfg, app.GatewayOptions{
		ReviewConfig: app.Config{DataDir: f.dataDir, Logger: log},
		Logger:       log,
		Version:      version,
		Tracing:      tp,
	})
	if err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), app.StopGrace)
		defer cancel()
		g.Close(stopCtx)
	}()

	if f.stdio {
		log.Info("bastion gateway: serving on stdio", "servers", len(cfg.Servers), "audit", g.Paths.AuditDir)
		return app.ServeStdio(ctx, g.NewServer(ctx, principal.Local()), &mcp.StdioTransport{})
	}
	eo := edge.Options{Enabled: true, BindAddr: f.addr, Registry: g.Registry, Rejected: g.EdgeRejected,
		Ready: g.ReadyChecks(), Logger: log}
	g.InFlight(&eo)
	e, err := edge.New(eo, g.NewServer)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "http://%s%s\n", ln.Addr(), edge.DefaultPath)
	log.Info("bastion gateway: serving", "addr", ln.Addr().String(), "servers", len(cfg.Servers), "audit", g.Paths.AuditDir)
	l := app.Listeners{Edge: e, Handler: g.TraceHTTP(e, e), Listener: ln}
	if f.adminAddr != "" {
		if l.AdminListener, err = net.Listen("tcp", f.adminAddr); err != nil {
			ln.Close()
			return err
		}
	}
	return app.Serve(ctx, l)
}
