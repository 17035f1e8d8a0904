package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/bastion-mcp/bastion/app"
	"github.com/bastion-mcp/bastion/audit"
	"github.com/bastion-mcp/bastion/edge"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/gateway/loop"
	"github.com/bastion-mcp/bastion/gateway/pin"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/upstream"
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
drifted tool stays hidden until ` + "`bastion pin approve`" + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runGateway(ctx, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
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

func runGateway(ctx context.Context, f gatewayFlags, stdout, stderr io.Writer) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("unknown --log-level %q", f.logLevel)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg, err := config.Load(f.config)
	if err != nil {
		return err
	}
	dir := cfg.Audit.Dir
	if dir == "" {
		if dir, err = audit.DefaultDir(os.Getenv); err != nil {
			return err
		}
	}
	led, err := audit.Open(dir, audit.Options{
		MaxFileBytes:       int64(cfg.Audit.MaxFileMB) << 20,
		CheckpointEvery:    cfg.Audit.CheckpointEvery,
		CheckpointInterval: time.Duration(cfg.Audit.CheckpointInterval),
		KeyFile:            cfg.Audit.KeyFile,
	})
	if err != nil {
		return err
	}
	defer led.Close()
	approvalsFile := cfg.Approvals.File
	if approvalsFile == "" {
		approvalsFile = filepath.Join(filepath.Dir(dir), "approvals.json")
	}
	pins := pin.NewFileStore(pinsFile(cfg, dir))

	inProcess := map[string]func(context.Context) (mcp.Transport, error){}
	for name, s := range cfg.Servers {
		if s.Kind != config.KindReview {
			continue
		}
		a, err := app.Open(ctx, app.Config{DataDir: f.dataDir, Logger: log})
		if err != nil {
			return err
		}
		if err := a.Start(ctx); err != nil {
			a.Close(context.Background())
			return err
		}
		defer a.Close(context.Background())
		// The review server sees every gateway client as the local
		// operator: the upstream session is shared, so per-client
		// identity does not cross it (yet).
		inProcess[name] = func(ctx context.Context) (mcp.Transport, error) {
			st, ct := mcp.NewInMemoryTransports()
			if _, err := a.MCPServer(principal.Local()).Connect(context.WithoutCancel(ctx), st, nil); err != nil {
				return nil, err
			}
			return ct, nil
		}
		break // one review server per process
	}

	reg := prometheus.NewRegistry()
	guard := egress.NewGuard(egress.Policy{Logger: log}, net.DefaultResolver)
	l, err := loop.New(ctx, cfg, loop.Deps{
		Dial:      loop.StandardDialer(cfg, upstream.Deps{Logger: log, Guard: guard}, inProcess),
		Ledger:    led,
		Approvals: loop.NewFileApprovals(approvalsFile),
		PinStore:  pins,
		Metrics:   reg,
		Logger:    log,
		Version:   version,
	})
	if err != nil {
		return err
	}
	defer l.Close()

	if f.stdio {
		log.Info("bastion gateway: serving on stdio", "servers", len(cfg.Servers), "audit", dir)
		return l.NewServer(ctx, principal.Local()).Run(ctx, &mcp.StdioTransport{})
	}
	if err := edge.CheckBind(f.addr, false); err != nil {
		return err
	}
	e, err := edge.New(edge.Options{Enabled: true, BindAddr: f.addr, Registry: reg, Logger: log}, l.NewServer)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	srv := edge.NewServer(f.addr, e, edge.Timeouts{})
	fmt.Fprintf(stdout, "http://%s%s\n", ln.Addr(), edge.DefaultPath)
	log.Info("bastion gateway: serving", "addr", ln.Addr().String(), "servers", len(cfg.Servers), "audit", dir)
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	if f.adminAddr != "" {
		if err := edge.CheckAdminBind(f.adminAddr, false); err != nil {
			return err
		}
		admin := edge.NewServer(f.adminAddr, e.AdminHandler(), edge.Timeouts{})
		go func() { errc <- admin.ListenAndServe() }()
		defer admin.Close()
	}
	select {
	case err := <-errc:
		if err != http.ErrServerClosed {
			return err
		}
	case <-ctx.Done():
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return edge.Drain(dctx, srv, e)
}
