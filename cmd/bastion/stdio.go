package main

import (
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/bastion-mcp/bastion/app"
	"github.com/bastion-mcp/bastion/demo"
	"github.com/bastion-mcp/bastion/fault"
)

type stdioFlags struct {
	dataDir       string
	allowPrivate  bool
	logLevel      string
	reviewTimeout time.Duration
	rescueAfter   time.Duration
	// The offline demo's wiring (hidden; see app.Demo).
	demoSite string
	demoSPKI string
}

func newStdioCmd() *cobra.Command {
	var f stdioFlags
	cmd := &cobra.Command{
		Use:   "stdio",
		Short: "Serve the design-review MCP tools on stdin/stdout for a local agent",
		Long: `stdio serves design_review, design_review_get, design_recheck,
design_review_cancel and design_review_panel_action over MCP on stdin and
stdout, as the local operator (tenant "local", every scope). Logs go to
stderr; stdout carries only the protocol.

Reviews are durable jobs in the SQLite store in --data-dir (default
$XDG_DATA_HOME/bastion or ~/.local/share/bastion), migrated at start, and run
by workers in this process: a job a killed process left behind is resumed or
failed with a reason on the next start, and retrying the same
client_request_id returns the same job. The server stops on stdin EOF or
SIGTERM.

Targets must be ownership-verified hosts (bastion targets add/verify);
--allow-private also admits, without a proof, a development server whose
every address is loopback or private.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config(cmd, cmd.ErrOrStderr())
			if err == nil {
				var done func()
				if cfg.Tracing, done, err = openTracing(cmd, cfg.Logger); err == nil {
					defer done()
					err = app.RunStdio(cmd.Context(), cfg, &mcp.StdioTransport{})
				}
			}
			if err != nil {
				reportFailure(cmd.ErrOrStderr(), "bastion stdio", err, "the stdio server could not run")
				return exitError{1}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dataDir, "data-dir", "", "directory of the store (default $XDG_DATA_HOME/bastion)")
	fl.BoolVar(&f.allowPrivate, "allow-private", false, "also allow loopback/private development servers, without an ownership proof")
	fl.StringVar(&f.logLevel, "log-level", "info", "stderr log level: debug, info, warn or error")
	fl.DurationVar(&f.reviewTimeout, "review-timeout", 0, "bound on one review or recheck run (default 3m)")
	fl.DurationVar(&f.rescueAfter, "rescue-stuck-after", 0, "rerun a job left running this long by a dead process (default review-timeout + 90s)")
	fl.StringVar(&f.demoSite, "unsafe-demo-site", "", "demo only: HOST=IP:PORT serves HOST (pre-verified) from a local address")
	fl.StringVar(&f.demoSPKI, "unsafe-demo-spki", "", "demo only: base64 SHA-256 SPKI hash of the certificate the browser trusts")
	fl.MarkHidden("unsafe-demo-site")
	fl.MarkHidden("unsafe-demo-spki")
	return cmd
}

// config turns the flags into the composition's Config, logging to stderr
// in cmd's --log-format.
func (f stdioFlags) config(cmd *cobra.Command, stderr io.Writer) (app.Config, error) {
	level, err := app.ParseLogLevel(f.logLevel)
	if err != nil {
		return app.Config{}, err
	}
	log, err := newLogger(cmd, stderr, level)
	if err != nil {
		return app.Config{}, err
	}
	cfg := app.Config{
		DataDir:      f.dataDir,
		AllowPrivate: f.allowPrivate,
		Logger:       log,
	}
	cfg.Review.ReviewTimeout = f.reviewTimeout
	cfg.Review.RescueStuckJobsAfter = f.rescueAfter
	if f.demoSite == "" && f.demoSPKI == "" {
		return cfg, nil
	}
	host, addr, ok := strings.Cut(f.demoSite, "=")
	site, err := netip.ParseAddrPort(addr)
	if !ok || err != nil || host == "" || f.demoSPKI == "" {
		// The demo's own wiring: it is hidden, so the message names no flag.
		return app.Config{}, fault.New(fault.InvalidArgument, "the demo wiring wants a site HOST=IP:PORT together with its certificate's SPKI hash")
	}
	cfg.Demo = &app.Demo{Host: host, StubAddr: demo.StubAddr, Site: site, SPKI: f.demoSPKI}
	// The demo's one user waits on every step: poll and fetch jobs quickly.
	cfg.Review.PollAfter = 500 * time.Millisecond
	cfg.Review.FetchPollInterval = 100 * time.Millisecond
	return cfg, nil
}
