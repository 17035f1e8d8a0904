// Package edge is bastion's remote MCP front door: one http.Handler that
// serves both MCP wires on one URL (the 2025-11-25 stateful wire with
// Mcp-Session-Id, and the 2026-07-28 stateless wire), plus /livez, /readyz, the
// RFC 9728 metadata passthrough and, on a separate admin handler, /metrics.
//
// Invariants:
//   - Every limit is enforced before the MCP SDK sees a request, and every
//     refusal (the authenticator's included) has its own reason, counted in
//     bastion_edge_rejections_total and reported to Options.Rejected before
//     the client sees it.
//   - The MCP path is dark unless enabled: switched off (config, kill switch) or
//     off for the caller's tenant, it answers 404 exactly like an unknown path.
//   - Without a configured trusted proxy, a request carrying Forwarded or any
//     X-Forwarded-* header is refused; no identity is ever read from them.
//     This, Host and Origin are one Guard, which also wraps routes served
//     beside the edge (the REST API).
//   - MCP server instances are never shared between principals: newServer is
//     asked for the caller's server once per session on the stateful wire and
//     once per request on the stateless wire (it may hand the same principal
//     the same server again), and a session answers only to the (tenant,
//     principal id) that created it; anyone else gets the same 404 as an
//     unknown session.
//   - The request body is read once, bounded in size and time, and checked to
//     be JSON before routing; input is never echoed back.
package edge

import (
	"context"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
)

// Limits and their defaults. The numbers match the peer's HTTP edge.
const (
	DefaultMaxBodyBytes        = 256 << 10
	MaxBodyBytesHardCap        = 1 << 20
	DefaultBodyTimeout         = 30 * time.Second
	MaxInFlightPerPrincipalCap = 4096
	DefaultSessionTimeout      = 30 * time.Minute
	DefaultPath                = "/mcp"
	// MetadataPath is the RFC 9728 protected-resource metadata path; the
	// path-suffixed form (MetadataPath + Path) is served too.
	MetadataPath = "/.well-known/oauth-protected-resource"
)

// DefaultMaxInFlightPerPrincipal is the default bound on one principal's
// calls in flight: 32 per CPU the Go runtime may use, at least 64. A
// gateway's caller is often one agent (or one benchmark) fanning out; a
// bound below what the machine serves at once would refuse it for nothing.
func DefaultMaxInFlightPerPrincipal() int {
	return min(max(64, 32*runtime.GOMAXPROCS(0)), MaxInFlightPerPrincipalCap)
}

// DefaultMaxInFlight is the default bound on all calls in flight: four
// principals at their default bound, at least 256.
func DefaultMaxInFlight() int { return max(256, 4*DefaultMaxInFlightPerPrincipal()) }

// Check is one named readiness check for /readyz. Its error text is logged,
// never served.
type Check struct {
	Name  string
	Check func(ctx context.Context) error
	// Degrades marks a check whose failure leaves the server ready (200,
	// status "degraded") instead of not ready (503): a part the server
	// serves without, such as an optional gateway upstream.
	Degrades bool
}

// Options configure an Edge. The zero value of each field means its default;
// Enabled false keeps the MCP path dark.
type Options struct {
	// Enabled turns the MCP path on. Off, it answers 404 {"error":"not_found"}.
	Enabled bool
	// Off, if non-nil, is consulted per request; true darkens the MCP path
	// (the lead wires BASTION_MCP=off here).
	Off func() bool
	// AgentAccess, if non-nil, reports whether tenant may use the MCP path;
	// false answers 404 as if the path did not exist.
	AgentAccess func(ctx context.Context, tenant string) bool

	// Path is the MCP path (default /mcp).
	Path string
	// BindAddr is the address the listener binds. Authenticate may be nil
	// only when it is a loopback address (see CheckBind).
	BindAddr string
	// Authenticate puts a principal.Principal in the request context (via
	// principal.NewContext) or answers 401/403 itself. Nil is allowed only on a
	// loopback bind, and then DevPrincipal is injected.
	Authenticate func(http.Handler) http.Handler
	// DevPrincipal is the caller on an unauthenticated loopback edge
	// (default principal.Local()).
	DevPrincipal principal.Principal
	// Permit, if non-nil, is asked once the caller is authenticated and the
	// body read whether the caller may make this request: methods are the
	// methods of the JSON-RPC messages in the body, in order (none for a
	// GET or DELETE). To refuse, it writes the response itself and returns
	// false; the refusal is counted and reported as "not_permitted" before
	// the client sees it. It must not read r's body (the edge has).
	Permit func(w http.ResponseWriter, r *http.Request, methods []string) bool

	// AllowedHosts lists accepted Host values ("example.com" matches any
	// port, "example.com:8443" only that port; IPv6 as "::1", "[::1]" or
	// "[::1]:8443"). Names match case-insensitively and with or without a
	// trailing dot; IP addresses match by value. Empty means loopback names
	// only (localhost, 127.0.0.1, ::1). New refuses an entry that is not a
	// host. The Guard applies it (and the two fields below).
	AllowedHosts []string
	// AllowedOrigins lists exact browser origins ("https://app.example.com").
	// Empty means a request with an Origin header must be same-origin with
	// its (already allowed) Host. A request without Origin is not a browser
	// request and passes.
	AllowedOrigins []string
	// TrustedProxy declares that a reverse proxy in front sets forwarding
	// headers. False (the default) refuses any request that carries them.
	TrustedProxy bool

	MaxBodyBytes int64         // default 256 KiB, at most 1 MiB
	BodyTimeout  time.Duration // default 30 s
	// MaxInFlightPerPrincipal bounds one principal's calls in flight (every
	// method but GET); default DefaultMaxInFlightPerPrincipal(), at most
	// MaxInFlightPerPrincipalCap. One agent fanning out its calls is served,
	// not refused: the default scales with the machine, and a principal
	// past it is one flooding the edge (429).
	MaxInFlightPerPrincipal int
	// InFlightLimit, if non-nil, gives a principal its own bound (a busy
	// service account, a throttled tenant): a positive result replaces
	// MaxInFlightPerPrincipal for p, capped at MaxInFlightPerPrincipalCap;
	// zero or less means the edge's bound.
	InFlightLimit func(p principal.Principal) int
	// MaxInFlight bounds the calls in flight across all principals; default
	// DefaultMaxInFlight().
	MaxInFlight    int
	SessionTimeout time.Duration // idle stateful sessions are closed; default 30 min

	// Rejected, if non-nil, is told of every refusal the edge counts in
	// bastion_edge_rejections_total, before the response is written: ctx is
	// r's context (carrying the principal once one was authenticated),
	// status the HTTP status sent and reason the counted reason. Refusals
	// written by Authenticate are reported as "auth_refused" with the
	// status it chose. It runs on the request's goroutine, so it must not
	// keep r or read its body (the edge has consumed it).
	Rejected func(ctx context.Context, r *http.Request, status int, reason string)

	// Ready holds the checks /readyz runs.
	Ready []Check
	// Metadata, if non-nil, serves RFC 9728 metadata (unauthenticated).
	Metadata http.Handler
	// Registry receives the edge's metrics and is what the admin handler
	// serves. Nil means a private registry.
	Registry *prometheus.Registry
	// Gatherer, if set, is what the admin handler serves instead of
	// Registry alone: the process's other metrics with Registry's.
	Gatherer prometheus.Gatherer
	// Logger; nil discards.
	Logger *slog.Logger
}

// NewServerFunc returns the MCP server for one client of p, the
// authenticated caller. It may return a server it returned before for the
// same principal (one server holds many sessions); it must never return one
// it returned for another principal.
type NewServerFunc func(ctx context.Context, p principal.Principal) *mcp.Server

// Edge is the MCP edge handler. Create it with New.
type Edge struct {
	// Fixed at creation.
	opts      Options
	newServer NewServerFunc
	stateful  *mcp.StreamableHTTPHandler
	stateless *mcp.StreamableHTTPHandler
	metrics   *metrics
	hosts     hostSet
	mcp       http.Handler // serveGuarded behind Guard
	log       *slog.Logger

	draining atomic.Bool
	inflight inflight
	sessions sessions
}

// New validates o and returns an Edge. newServer is called per session on the
// stateful wire and per request on the stateless wire.
func New(o Options, newServer NewServerFunc) (*Edge, error) {
	if newServer == nil {
		return nil, fault.New(fault.InvalidArgument, "edge: newServer is required")
	}
	if err := o.withDefaults(); err != nil {
		return nil, err
	}
	if err := CheckBind(o.BindAddr, o.Authenticate != nil); err != nil {
		return nil, err
	}
	hosts, err := newHostSet(o.AllowedHosts)
	if err != nil {
		return nil, err
	}
	e := &Edge{opts: o, newServer: newServer, hosts: hosts, log: o.Logger}
	e.mcp = e.Guard(http.HandlerFunc(e.serveGuarded))
	e.inflight.init(o.MaxInFlightPerPrincipal, o.MaxInFlight, o.InFlightLimit)
	e.sessions.init()
	m, err := newMetrics(o.Registry, e)
	if err != nil {
		return nil, err
	}
	e.metrics = m
	base := mcp.StreamableHTTPOptions{
		// The edge validates Host and Origin itself, before the SDK, so a
		// configured public host behind a loopback proxy is not refused twice.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        o.MaxBodyBytes,
		Logger:                     o.Logger,
	}
	sf, sl := base, base
	sf.SessionTimeout = o.SessionTimeout
	sl.Stateless = true
	sl.PropagateRequestCancellation = true
	e.stateful = mcp.NewStreamableHTTPHandler(serverFromContext, &sf)
	e.stateless = mcp.NewStreamableHTTPHandler(serverFromContext, &sl)
	return e, nil
}

func (o *Options) withDefaults() error {
	if o.Path == "" {
		o.Path = DefaultPath
	}
	if !strings.HasPrefix(o.Path, "/") {
		return fault.New(fault.InvalidArgument, "edge: path %q must start with /", o.Path)
	}
	switch {
	case o.MaxBodyBytes == 0:
		o.MaxBodyBytes = DefaultMaxBodyBytes
	case o.MaxBodyBytes < 0 || o.MaxBodyBytes > MaxBodyBytesHardCap:
		return fault.New(fault.InvalidArgument, "edge: max body bytes must be 1..%d", MaxBodyBytesHardCap)
	}
	switch {
	case o.BodyTimeout == 0:
		o.BodyTimeout = DefaultBodyTimeout
	case o.BodyTimeout < 0:
		return fault.New(fault.InvalidArgument, "edge: body timeout must be positive")
	}
	switch {
	case o.MaxInFlightPerPrincipal == 0:
		o.MaxInFlightPerPrincipal = DefaultMaxInFlightPerPrincipal()
	case o.MaxInFlightPerPrincipal < 0 || o.MaxInFlightPerPrincipal > MaxInFlightPerPrincipalCap:
		return fault.New(fault.InvalidArgument, "edge: in-flight per principal must be 1..%d", MaxInFlightPerPrincipalCap)
	}
	switch {
	case o.MaxInFlight == 0:
		o.MaxInFlight = DefaultMaxInFlight()
	case o.MaxInFlight < 0:
		return fault.New(fault.InvalidArgument, "edge: global in-flight limit must be positive")
	}
	switch {
	case o.SessionTimeout == 0:
		o.SessionTimeout = DefaultSessionTimeout
	case o.SessionTimeout < 0:
		return fault.New(fault.InvalidArgument, "edge: session timeout must be positive")
	}
	if !o.DevPrincipal.IsValid() {
		o.DevPrincipal = principal.Local()
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// AdminHandler serves /metrics from the edge's registry. Serve it on its own
// listener, loopback-only unless configured otherwise (see CheckAdminBind).
func (e *Edge) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	var g prometheus.Gatherer = e.opts.Registry
	if e.opts.Gatherer != nil {
		g = e.opts.Gatherer
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	return mux
}

// ServeHTTP routes health, metadata and MCP requests.
func (e *Edge) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	route := routeOf(r.URL.Path, e.opts.Path, e.opts.Metadata != nil)
	w := newStatusWriter(rw)
	defer e.metrics.request(route, w)
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			e.log.Error("edge: handler panic", "type", typeName(v))
			e.reject(w, r, reasonInternal)
		}
	}()
	switch p := r.URL.Path; {
	case p == "/livez":
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	case p == "/readyz":
		e.serveReady(w, r)
	case e.opts.Metadata != nil && (p == MetadataPath || p == MetadataPath+e.opts.Path):
		e.opts.Metadata.ServeHTTP(w, r)
	case p == e.opts.Path:
		e.serveMCP(w, r)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "not_found"})
	}
}

func (e *Edge) serveReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	checks := make(map[string]string, len(e.opts.Ready))
	ok, degraded := !e.draining.Load(), false
	for _, c := range e.opts.Ready {
		if err := c.Check(ctx); err != nil {
			e.log.Warn("edge: readiness check failed", "check", c.Name, "degrades", c.Degrades, "err", err)
			checks[c.Name] = "fail"
			degraded = true
			ok = ok && c.Degrades
			continue
		}
		checks[c.Name] = "ok"
	}
	status, code := "ok", http.StatusOK
	switch {
	case !ok:
		status, code = "not_ready", http.StatusServiceUnavailable
	case degraded:
		status = "degraded"
	}
	writeJSON(w, code, map[string]any{"status": status, "checks": checks, "sessions": e.sessions.count()})
}

// serveMCP applies the edge checks in order, cheapest and least revealing
// first: dark switch, draining, the Guard (forwarding headers, Host,
// Origin), then authentication.
func (e *Edge) serveMCP(w http.ResponseWriter, r *http.Request) {
	if !e.opts.Enabled || (e.opts.Off != nil && e.opts.Off()) {
		e.reject(w, r, reasonDisabled)
		return
	}
	if e.draining.Load() {
		e.reject(w, r, reasonDraining)
		return
	}
	e.mcp.ServeHTTP(w, r)
}

// serveGuarded authenticates a request the Guard passed and serves it.
func (e *Edge) serveGuarded(w http.ResponseWriter, r *http.Request) {
	if e.opts.Authenticate == nil {
		e.serveAuthenticated(w, r.WithContext(principal.NewContext(r.Context(), e.opts.DevPrincipal)))
		return
	}
	// The authenticator writes its refusals itself; they are held so the
	// edge can count and report one before the client sees it. A request
	// it passes on is served on the real writer (streams need its Flusher).
	passed := false
	next := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		passed = true
		e.serveAuthenticated(w, r)
	})
	held := &heldResponse{header: w.Header()}
	e.opts.Authenticate(next).ServeHTTP(held, r)
	if !passed {
		e.count(r, held.status, reasonAuth)
		e.metrics.authFailed(held)
		noteRejection(w, reasonAuth)
		held.flush(w)
	}
}

func (e *Edge) serveAuthenticated(w http.ResponseWriter, r *http.Request) {
	p, ok := principal.FromContext(r.Context())
	if !ok {
		// An authenticator that let a request through without a principal is
		// a wiring bug; fail closed.
		e.reject(w, r, reasonNoPrincipal)
		return
	}
	if e.opts.AgentAccess != nil && !e.opts.AgentAccess(r.Context(), p.Tenant()) {
		e.reject(w, r, reasonAgentAccess)
		return
	}
	release, reason := e.inflight.acquire(p, r.Method != http.MethodGet)
	if reason != "" {
		e.reject(w, r, reason)
		return
	}
	defer release()

	var body []byte
	if r.Method == http.MethodPost {
		mt, ok := jsonMediaType(r.Header.Get("Content-Type"))
		if !ok {
			e.reject(w, r, reasonMediaType)
			return
		}
		var reason rejection
		body, reason = e.readBody(w, r)
		if reason != "" {
			e.reject(w, r, reason)
			return
		}
		if mt != "application/json" {
			// The SDK accepts only the base type; a structured-syntax
			// suffix type has been checked to be JSON already.
			r.Header.Set("Content-Type", "application/json")
		}
	}
	if e.opts.Permit != nil {
		held := &heldResponse{header: w.Header()}
		if !e.opts.Permit(held, r, Methods(body)) {
			if held.status == 0 {
				// A refusal that wrote nothing must not go out as a 200.
				e.reject(w, r, reasonNotPermitted)
				return
			}
			e.count(r, held.status, reasonNotPermitted)
			held.flush(w)
			return
		}
	}
	// The read deadline covered the request; lift it so a long SSE response
	// is bounded by the write timeout, not cut off by a background read.
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})

	if Route(r.Method, r.Header, body) == WireStateless {
		slot := &serverSlot{make: func() *mcp.Server { return e.newServer(r.Context(), p) }}
		e.stateless.ServeHTTP(w, withSlot(r, slot))
		return
	}
	e.serveStateful(w, r, p)
}

func (e *Edge) serveStateful(w http.ResponseWriter, r *http.Request, p principal.Principal) {
	if id := r.Header.Get(sessionHeader); id != "" {
		s, reason := e.sessions.lookup(id, p)
		if reason != "" {
			e.reject(w, r, reason)
			return
		}
		slot := &serverSlot{srv: s.server}
		slot.once.Do(func() {})
		rec := newStatusWriter(w)
		e.stateful.ServeHTTP(rec, withSlot(r, slot))
		if r.Method == http.MethodDelete && rec.Status/100 == 2 {
			e.sessions.remove(id)
		}
		return
	}
	slot := &serverSlot{make: func() *mcp.Server { return e.newServer(r.Context(), p) }}
	cw := &sessionCapture{ResponseWriter: w, onHeader: func(h http.Header) {
		// Bind before the client can see the id, so its next request
		// cannot race the binding.
		if id := h.Get(sessionHeader); id != "" && slot.srv != nil {
			e.sessions.bind(id, p, slot.srv)
		}
	}}
	e.stateful.ServeHTTP(cw, withSlot(r, slot))
}

// Shutdown drains the edge: new MCP requests get 503, in-flight calls run to
// completion, then every stateful session is closed (ending its stream), and
// Shutdown waits for the remaining requests. It returns ctx's error if ctx
// ends first. Call it beside http.Server.Shutdown (see Drain).
func (e *Edge) Shutdown(ctx context.Context) error {
	e.draining.Store(true)
	if err := e.inflight.waitCalls(ctx); err != nil {
		e.sessions.closeAll()
		return err
	}
	e.sessions.closeAll()
	return e.inflight.waitAll(ctx)
}

// serverSlot carries, for one request, the MCP server the SDK will ask for
// (at most twice per request). It creates the server lazily and once.
type serverSlot struct {
	once sync.Once
	make func() *mcp.Server
	srv  *mcp.Server
}

type slotKey struct{}

func withSlot(r *http.Request, s *serverSlot) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), slotKey{}, s))
}

// serverFromContext is the SDK's getServer: it hands back the request's slot.
func serverFromContext(r *http.Request) *mcp.Server {
	s, ok := r.Context().Value(slotKey{}).(*serverSlot)
	if !ok {
		return nil
	}
	s.once.Do(func() { s.srv = s.make() })
	return s.srv
}
