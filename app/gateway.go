package app

import (
	"context"
	"errors"
	"fmt"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/reviewmcp"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bastion-mcp/bastion/audit"
	"github.com/bastion-mcp/bastion/edge"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/gateway/approval"
	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/gateway/loop"
	"github.com/bastion-mcp/bastion/gateway/pin"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/tracing"
	"github.com/bastion-mcp/bastion/upstream"
)

// GatewayPaths are the files the gateway keeps besides its configuration.
type GatewayPaths struct {
	// AuditDir is the ledger directory: [audit] dir, default
	// $XDG_DATA_HOME/bastion/audit.
	AuditDir string
	// Approvals is [approvals] file, default approvals.json beside AuditDir.
	Approvals string
	// Pins is [pins] file, default pins.json beside AuditDir.
	Pins string
}

// ResolveGatewayPaths applies the defaults to cfg's paths; getenv (nil
// means os.Getenv) supplies XDG_DATA_HOME and HOME.
func ResolveGatewayPaths(cfg *config.File, getenv func(string) string) (GatewayPaths, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	p := GatewayPaths{AuditDir: cfg.Audit.Dir, Approvals: cfg.Approvals.File, Pins: cfg.Pins.File}
	if p.AuditDir == "" {
		d, err := audit.DefaultDir(getenv)
		if err != nil {
			return GatewayPaths{}, err
		}
		p.AuditDir = d
	}
	if p.Approvals == "" {
		p.Approvals = filepath.Join(filepath.Dir(p.AuditDir), "approvals.json")
	}
	if p.Pins == "" {
		p.Pins = filepath.Join(filepath.Dir(p.AuditDir), "pins.json")
	}
	return p, nil
}

// GatewayOptions are what a command decides about the gateway composition.
// The zero value (plus a Logger) opens the review App itself when the
// configuration has a kind = "review" server.
type GatewayOptions struct {
	// Review serves the configuration's kind = "review" servers. Nil means
	// OpenGateway opens an App with ReviewConfig (only if one is
	// configured), starts its workers, and Close closes it.
	Review       *App
	ReviewConfig Config
	// Registry receives the gateway's metrics; the edge serving the gateway
	// registers its own on it too, so one /metrics shows both. Nil means
	// Review's registry when Review is set, else a new one
	// (Gateway.Registry).
	Registry *prometheus.Registry
	// Logger; nil discards.
	Logger *slog.Logger
	// Version is the gateway's serverInfo version.
	Version string
	// Tracing is the process's tracing; nil means Review's, else
	// ReviewConfig's, else off. The gateway and the review App it opens
	// share it.
	Tracing *tracing.Provider
}

// Gateway is the composed governing gateway: the loop over every configured
// upstream, with its audit ledger, approvals and pins. Create it with
// OpenGateway, serve it with NewServer (one *mcp.Server per client, as
// edge.NewServerFunc wants), and Close it.
type Gateway struct {
	Loop     *loop.Loop
	Ledger   *audit.Ledger
	Paths    GatewayPaths
	Registry *prometheus.Registry

	cfg     *config.File
	log     *slog.Logger
	tracing *tracing.Provider // or nil: off
	review  *App              // opened by OpenGateway, closed by Close; nil otherwise
}

// listerPrincipal is the identity of the one review session the loop shares
// between clients for listing. It holds no scope, so a call that ever
// reached that session instead of the caller's own would be refused by
// review.Service, not made as somebody else.
func listerPrincipal() principal.Principal {
	p, _ := principal.New("bastion-gateway", "catalog-lister")
	return p
}

// OpenGateway opens the ledger, the approvals queue and the pins file named
// by cfg, connects every configured upstream, and builds the loop. The
// configuration's kind = "review" servers are o.Review's design-review
// server (or an App opened here), reached in-process: each principal's
// calls go to the server made as that principal (its tools called directly,
// its resources over a session of its own), so the review server enforces
// the caller's tenant and scopes, never a shared identity.
func OpenGateway(ctx context.Context, cfg *config.File, o GatewayOptions) (*Gateway, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	paths, err := ResolveGatewayPaths(cfg, nil)
	if err != nil {
		return nil, err
	}
	g := &Gateway{Paths: paths, Registry: o.Registry, cfg: cfg, log: log, tracing: o.Tracing}
	if g.tracing == nil && o.Review != nil {
		g.tracing = o.Review.Config.Tracing
	}
	if g.tracing == nil {
		g.tracing = o.ReviewConfig.Tracing
	}
	if g.Registry == nil && o.Review != nil {
		g.Registry = o.Review.Registry
	}
	if g.Registry == nil {
		g.Registry = newRegistry()
	}
	onCommit, err := ledgerCommits(g.Registry)
	if err != nil {
		return nil, fault.Wrap(err, fault.InternalError, "the audit ledger's metrics could not be registered")
	}
	ok := false
	defer func() {
		if !ok {
			g.Close(context.WithoutCancel(ctx))
		}
	}()
	g.Ledger, err = audit.Open(paths.AuditDir, audit.Options{
		MaxFileBytes:       int64(cfg.Audit.MaxFileMB) << 20,
		CheckpointEvery:    cfg.Audit.CheckpointEvery,
		CheckpointInterval: time.Duration(cfg.Audit.CheckpointInterval),
		KeyFile:            cfg.Audit.KeyFile,
		OnCommit:           onCommit,
	})
	if err != nil {
		return nil, err
	}

	shared := map[string]func(context.Context) (mcp.Transport, error){}
	perPrincipal := map[string]loop.PrincipalServer{}
	for name, s := range cfg.Servers {
		if s.Kind != config.KindReview {
			continue
		}
		a := o.Review
		if a == nil {
			if g.review == nil {
				rc := o.ReviewConfig
				if rc.Logger == nil {
					rc.Logger = log
				}
				if rc.Tracing == nil {
					rc.Tracing = g.tracing
				}
				if g.review, err = Open(ctx, rc); err != nil {
					return nil, err
				}
				if err := g.review.Start(ctx); err != nil {
					return nil, err
				}
			}
			a = g.review
		}
		connect := inProcess(a)
		shared[name] = func(ctx context.Context) (mcp.Transport, error) { return connect(ctx, listerPrincipal()) }
		perPrincipal[name] = loop.PrincipalServer{Connect: connect, Call: a.mcpToolHandler}
	}

	refused, err := egressBlocks(g.Registry)
	if err != nil {
		return nil, fault.Wrap(err, fault.InternalError, "the egress metrics could not be registered")
	}
	guard := egress.NewGuard(egress.Policy{Logger: log, Refused: refused}, net.DefaultResolver)
	g.Loop, err = loop.New(ctx, cfg, loop.Deps{
		Dial:         loop.StandardDialer(cfg, upstream.Deps{Logger: log, Guard: guard}, shared),
		ForPrincipal: perPrincipal,
		Ledger:       g.Ledger,
		Approvals:    approval.NewFile(paths.Approvals),
		PinStore:     pin.NewFileStore(paths.Pins),
		Metrics:      g.Registry,
		Logger:       log,
		Version:      o.Version,
		Tracer:       g.tracing.Tracer(),
	})
	if err != nil {
		return nil, err
	}
	ok = true
	return g, nil
}

// inProcess connects a fresh design-review server session made as p over
// an in-process pipe (no JSON round trip between the gateway and the
// review server). The session outlives ctx (the loop closes it).
func inProcess(a *App) func(context.Context, principal.Principal) (mcp.Transport, error) {
	return func(ctx context.Context, p principal.Principal) (mcp.Transport, error) {
		return upstream.ServeInProcess(ctx, a.MCPServer(p))
	}
}

// InFlight sets o's in-flight bounds from [gateway]: the per-principal
// default (zero leaves the edge's own, which scales with the machine) and
// the bounds of the principals named in in_flight. Both HTTP fronts of a
// gateway, `bastion gateway` and `serve --gateway`, call it, so the file
// means the same under each; edge.New rejects a bound past its cap.
func (g *Gateway) InFlight(o *edge.Options) {
	o.MaxInFlightPerPrincipal = g.cfg.Gateway.MaxInFlightPerPrincipal
	if len(g.cfg.Gateway.InFlight) == 0 {
		return
	}
	bounds := maps.Clone(g.cfg.Gateway.InFlight)
	o.InFlightLimit = func(p principal.Principal) int { return bounds[p.Tenant()+"/"+p.ID()] }
}

// ReadyChecks are the gateway's /readyz checks. "ledger" fails while the
// audit ledger cannot write (governed calls are then refused, not
// forwarded) and passes again once it has recovered by itself. Then one
// check per configured upstream, "upstream:NAME", failing while that
// upstream is unavailable: a required upstream's failure makes the server
// not ready (503); an optional one's ([server.NAME] optional = true) leaves
// it ready with status "degraded". Either way the gateway serves the
// upstreams that are up.
func (g *Gateway) ReadyChecks() []edge.Check {
	out := []edge.Check{{Name: "ledger", Check: func(context.Context) error { return g.Ledger.Err() }}}
	if g.cfg == nil {
		return out
	}
	for _, name := range slices.Sorted(maps.Keys(g.cfg.Servers)) {
		out = append(out, edge.Check{
			Name:     "upstream:" + name,
			Check:    func(context.Context) error { return g.Loop.Available(name) },
			Degrades: g.cfg.Servers[name].Optional,
		})
	}
	return out
}

// NewServer returns a fresh gateway server for one client acting as p; it
// is an edge.NewServerFunc.
func (g *Gateway) NewServer(ctx context.Context, p principal.Principal) *mcp.Server {
	srv := g.Loop.NewServer(ctx, p)
	if g.tracing.Enabled() {
		// Added last, it runs first: each request joins its HTTP request's
		// trace before the loop's own middleware sees it.
		srv.AddReceivingMiddleware(tracing.MCPMiddleware)
	}
	return srv
}

// TraceHTTP serves h, the edge e serving this gateway, with a span per
// request when the gateway traces (app.TraceHTTP).
func (g *Gateway) TraceHTTP(e *edge.Edge, h http.Handler) http.Handler {
	return TraceHTTP(g.tracing, e, h)
}

// EdgeRejected appends one ledger record for a request the HTTP edge
// refused (an edge.Options.Rejected observer): decision edge_rejected, rule
// "edge:REASON", the principal when one was authenticated, the status in
// the reason, and nothing of the request's body. The refusal stands whether
// or not the record could be written; a failed append is logged.
func (g *Gateway) EdgeRejected(ctx context.Context, _ *http.Request, status int, reason string) {
	p, _ := principal.FromContext(ctx)
	_, err := g.Ledger.Append(context.WithoutCancel(ctx), audit.Entry{
		Principal: p,
		Method:    "http",
		Decision:  audit.EdgeRejected,
		Rule:      "edge:" + reason,
		Reason:    fmt.Sprintf("%d %s", status, http.StatusText(status)),
	})
	if err != nil {
		g.log.Error("gateway: the audit ledger could not record an edge rejection", "reason", reason, "status", status, "err", err)
	}
}

// Close closes the loop (and with it every upstream), the ledger (sealing
// it with a final checkpoint), then the review App if OpenGateway opened
// it, stopping its workers within ctx.
func (g *Gateway) Close(ctx context.Context) error {
	var errs []error
	if g.Loop != nil {
		errs = append(errs, g.Loop.Close())
	}
	if g.Ledger != nil {
		errs = append(errs, g.Ledger.Close())
	}
	if g.review != nil {
		errs = append(errs, g.review.Close(ctx))
	}
	return errors.Join(errs...)
}

// ReviewToolLister serves the design-review server's tool definitions in
// this process with no store, browser or job workers behind them, for
// commands that only list or pin tools (`bastion pin`). Every tool call it
// is asked for fails with UNAVAILABLE.
func ReviewToolLister(ctx context.Context) (mcp.Transport, error) {
	return upstream.ServeInProcess(ctx, reviewmcp.NewServer(listOnly{}, reviewmcp.Options{}))
}

// listOnly is the review service of ReviewToolLister: it serves nothing.
type listOnly struct{}

func (listOnly) refuse() error {
	return fault.New(fault.Unavailable, "this server only lists the design-review tools; run bastion stdio or serve to call them")
}

func (l listOnly) Submit(context.Context, principal.Principal, *review.SubmitParams) (*review.SubmitResult, error) {
	return nil, l.refuse()
}

func (l listOnly) Get(context.Context, principal.Principal, *review.GetParams) (*review.GetResult, error) {
	return nil, l.refuse()
}

func (l listOnly) Recheck(context.Context, principal.Principal, *review.RecheckParams) (*review.RecheckResult, error) {
	return nil, l.refuse()
}

func (l listOnly) Cancel(context.Context, principal.Principal, *review.CancelParams) (*review.CancelResult, error) {
	return nil, l.refuse()
}

func (l listOnly) PanelAction(context.Context, principal.Principal, *review.PanelActionParams) (*review.PanelActionResult, error) {
	return nil, l.refuse()
}

// GatewayGCPercent is the garbage collector's target (GOGC) of a process
// that serves the gateway alone (`bastion gateway`).
//
// Why not the runtime's 100: a gateway's live heap is small and steady (the
// catalog, its sessions), while every message the SDK decodes on either hop
// allocates and clears a 32 KiB read buffer (segmentio's Decoder, one per
// Unmarshal), several per relayed call. At 100 the collector ran every few
// calls and its marking and sweeping were the largest part of the CPU per
// governed call; at 400 it runs a quarter as often for a heap that stays a
// few tens of MiB.
const GatewayGCPercent = 400

// TuneGatewayRuntime sets the collector's target to GatewayGCPercent unless
// the operator chose one (GOGC in getenv's environment), and reports
// whether it did. Call it once, from the command that runs the gateway
// process: it changes the whole process.
func TuneGatewayRuntime(getenv func(string) string) bool {
	if getenv("GOGC") != "" {
		return false
	}
	debug.SetGCPercent(GatewayGCPercent)
	return true
}
