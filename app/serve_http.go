package app

import (
	"context"
	"errors"
	"fmt"
	"github.com/bastion-mcp/bastion/review"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/edge"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/rest"
	"github.com/bastion-mcp/bastion/tracing"
)

// ServeConfig is what `bastion serve` decides about the HTTP side. The zero
// value serves loopback only, with personal access tokens.
type ServeConfig struct {
	// Addr is the MCP and REST listener (default 127.0.0.1:8080). A
	// non-loopback address needs authentication (always on unless
	// UnsafeNoAuth).
	Addr string
	// AdminAddr is the /metrics listener (default 127.0.0.1:9090); "-"
	// disables it. A non-loopback address needs AdminPublic.
	AdminAddr   string
	AdminPublic bool
	// Path is the MCP path (default /mcp).
	Path string

	AllowedHosts   []string
	AllowedOrigins []string
	TrustedProxy   bool

	// Resource is this server's canonical MCP URI (RFC 8707), e.g.
	// https://bastion.example.com/mcp. Set, it turns on RFC 9728 metadata
	// and, with Issuer and JWKSURL, OAuth access tokens.
	Resource string
	Issuer   string
	JWKSURL  string
	// Audience is the required "aud"; "" means Resource.
	Audience string
	// TenantClaim names the JWT claim holding the tenant (default tenant_id).
	TenantClaim string
	// RolesClaim names the JWT claim holding the caller's roles, which the
	// gateway's policy reads (default roles). Personal access tokens carry
	// no roles.
	RolesClaim string
	// JWKSAllowPrivate lets the JWKS fetch reach a loopback or private
	// issuer. For tests and local development only: it opens the egress
	// guard of that one client to private addresses. It never allows plain
	// http: the JWKS is fetched over https, always.
	JWKSAllowPrivate bool
	// RequireAccessTokenType refuses a JWT whose "typ" is not at+jwt (RFC
	// 9068), so an ID token or another JWT the issuer signs with the same
	// keys is not taken for an access token. Off by default: many issuers
	// do not set it. Personal access tokens are not JWTs and are unaffected.
	RequireAccessTokenType bool
	// MethodScopes, if non-nil, is a per-method scope policy for the MCP
	// path (see auth.MethodScopes; its "initialize" entry applies to every
	// MCP request). A request lacking a scope is answered 403 with an
	// insufficient_scope step-up challenge, before any MCP server sees it.
	MethodScopes auth.MethodScopes

	// UnsafeNoAuth serves every request as DevPrincipal without any
	// credential. It is honoured only on a loopback bind; it exists for the
	// MCP conformance suite, which cannot send a token.
	UnsafeNoAuth bool
	DevPrincipal principal.Principal

	// Gateway, when set, is a governing gateway configuration
	// (bastion.toml): RunServe opens it (OpenGateway, with this App as its
	// kind = "review" servers) and the MCP path serves the gateway for the
	// authenticated principal instead of the design-review tools directly.
	// Every refusal the edge counts is appended to the gateway's audit
	// ledger, and the gateway's metrics are served on the admin listener
	// with the edge's. REST, health, the kill switch, agent access and the
	// limits are unchanged.
	Gateway *config.File
	// Version is the gateway's serverInfo version.
	Version string

	// Off, if non-nil, is the kill switch: true makes /mcp answer 404.
	Off func() bool
	// AgentAccessOff lists tenants whose agent access is switched off: /mcp
	// answers them 404, as if it did not exist, while REST keeps working.
	AgentAccessOff []string
	// Timeouts bound each connection; zero fields mean edge's defaults.
	Timeouts edge.Timeouts
	// DrainTimeout bounds the graceful stop (default 20 s).
	DrainTimeout time.Duration
	// Prepare, if non-nil, runs once the composition is open and before
	// anything listens (`serve --dev` creates its token here).
	Prepare func(ctx context.Context, a *App) error
	// Listening, if non-nil, is called once both listeners are bound, with
	// the MCP URL and the admin address ("" when disabled).
	Listening func(mcpURL, adminAddr string)
}

func (sc *ServeConfig) defaults() {
	if sc.Addr == "" {
		sc.Addr = "127.0.0.1:8080"
	}
	if sc.AdminAddr == "" {
		sc.AdminAddr = "127.0.0.1:9090"
	}
	if sc.Path == "" {
		sc.Path = edge.DefaultPath
	}
	if sc.Audience == "" {
		sc.Audience = sc.Resource
	}
	if sc.DrainTimeout == 0 {
		sc.DrainTimeout = 20 * time.Second
	}
}

// HTTP is the composed HTTP side of an App: the edge (MCP, health,
// metadata), the REST API behind the same authentication, and the admin
// handler.
type HTTP struct {
	Edge    *edge.Edge
	Handler http.Handler
	Admin   http.Handler
}

// NewHTTP composes the HTTP side of a over sc: MCP at sc.Path through the
// edge with one server per principal (MCPServer, kept for its next clients), REST at /api/v1/ behind
// the same verifier, /livez, /readyz (store and browser) and RFC 9728
// metadata when sc.Resource is set. Personal access tokens are always
// accepted; JWTs when sc.Issuer and sc.JWKSURL are set.
func (a *App) NewHTTP(sc ServeConfig) (*HTTP, error) {
	return a.newHTTP(sc, nil)
}

// NewGatewayHTTP is NewHTTP with g on the MCP path: each client gets a
// gateway server for its principal (g.NewServer), every edge refusal is
// recorded in g's ledger, and the edge's metrics join g's registry.
// sc.Gateway is ignored (g is already open).
func (a *App) NewGatewayHTTP(sc ServeConfig, g *Gateway) (*HTTP, error) {
	if g == nil {
		return nil, fault.New(fault.InvalidArgument, "app: NewGatewayHTTP needs a gateway")
	}
	return a.newHTTP(sc, g)
}

func (a *App) newHTTP(sc ServeConfig, g *Gateway) (*HTTP, error) {
	sc.defaults()
	authn, err := a.authenticator(sc)
	if err != nil {
		return nil, err
	}
	var md http.Handler
	if sc.Resource != "" {
		var issuers []string
		if sc.Issuer != "" {
			issuers = []string{sc.Issuer}
		}
		md = auth.MetadataHandler(auth.ProtectedResourceMetadata{Resource: sc.Resource, AuthorizationServers: issuers, ResourceName: "bastion"})
	}
	o := edge.Options{
		Enabled:        true,
		Off:            sc.Off,
		Path:           sc.Path,
		BindAddr:       sc.Addr,
		Authenticate:   authn,
		DevPrincipal:   sc.DevPrincipal,
		Permit:         permitMethods(sc.MethodScopes, auth.MetadataURL(sc.Resource)),
		AllowedHosts:   sc.AllowedHosts,
		AllowedOrigins: sc.AllowedOrigins,
		TrustedProxy:   sc.TrustedProxy,
		AgentAccess:    agentAccess(sc.AgentAccessOff),
		Ready: []edge.Check{
			{Name: "store", Check: a.Ping},
			{Name: "migrations", Check: a.Migrated},
			{Name: readyName(a.engine), Check: a.engine.Ready},
		},
		Metadata: md,
		// A registry of the edge's own (an App may serve more than one
		// edge, in tests), gathered with the App's.
		Registry: prometheus.NewRegistry(),
		Logger:   a.Log,
	}
	servers := newPrincipalServers(a.MCPServer)
	newServer := func(_ context.Context, p principal.Principal) *mcp.Server { return servers.For(p) }
	if g != nil {
		newServer = g.NewServer
		o.Ready = append(o.Ready, g.ReadyChecks()...)
		o.Registry = g.Registry
		o.Rejected = g.EdgeRejected
		g.InFlight(&o)
	}
	if o.Registry != a.Registry {
		o.Gatherer = prometheus.Gatherers{a.Registry, o.Registry}
	}
	e, err := edge.New(o, newServer)
	if err != nil {
		return nil, fault.Wrap(err, fault.InvalidArgument, "the MCP edge could not be configured")
	}
	restAuth := authn
	if restAuth == nil {
		restAuth = injectPrincipal(sc.DevPrincipal)
	}
	api := rest.NewHandler(a.Service, review.NewTargets(a.Targets), rest.Options{MetadataURL: auth.MetadataURL(sc.Resource), Logger: a.Log})
	mux := http.NewServeMux()
	// The edge's Guard (forwarding headers, Host, Origin) wraps REST as it
	// wraps MCP: one answer to DNS rebinding on both paths.
	mux.Handle(rest.Prefix+"/", e.Guard(restAuth(api)))
	mux.Handle("/", e)
	return &HTTP{Edge: e, Handler: TraceHTTP(a.Config.Tracing, e, mux), Admin: e.AdminHandler()}, nil
}

// TraceHTTP serves h, whose MCP side is e, with a server span per request
// (tracing.Middleware) named by e's route labels, REST as "rest"; with
// tracing off it returns h.
func TraceHTTP(tp *tracing.Provider, e *edge.Edge, h http.Handler) http.Handler {
	return tracing.Middleware(tp.Tracer(), func(r *http.Request) string {
		if strings.HasPrefix(r.URL.Path, rest.Prefix+"/") {
			return "rest"
		}
		return e.Route(r)
	})(h)
}

// authenticator returns the request authenticator sc asks for, or nil for
// the unauthenticated loopback edge (UnsafeNoAuth).
func (a *App) authenticator(sc ServeConfig) (func(http.Handler) http.Handler, error) {
	if sc.UnsafeNoAuth {
		if edge.CheckBind(sc.Addr, false) != nil {
			return nil, fault.New(fault.InvalidArgument, "serving without authentication is allowed on a loopback address only")
		}
		if !sc.DevPrincipal.IsValid() {
			return nil, fault.New(fault.InvalidArgument, "serving without authentication needs a development principal")
		}
		return nil, nil
	}
	pat := auth.PATVerifier(a.Store, nil)
	onFetch, err := jwksFetches(a.Registry)
	if err != nil {
		return nil, fault.Wrap(err, fault.InternalError, "the JWKS metrics could not be registered")
	}
	jwt, err := jwtVerifier(sc, egress.Policy{Logger: a.Log, Refused: a.Config.egressRefused}, onFetch)
	if err != nil {
		return nil, err
	}
	return auth.Middleware(auth.Combined(pat, jwt), auth.MetadataURL(sc.Resource)), nil
}

// jwtVerifier returns the OAuth access-token verifier sc configures, or nil
// when sc names no issuer. It fetches nothing: RunServe calls it before
// opening anything, so a bad configuration fails at once.
func jwtVerifier(sc ServeConfig, policy egress.Policy, onFetch func(string)) (auth.Verifier, error) {
	if sc.Issuer == "" && sc.JWKSURL == "" {
		return nil, nil
	}
	if sc.Issuer == "" || sc.JWKSURL == "" || sc.Audience == "" {
		return nil, fault.New(fault.InvalidArgument, "OAuth access tokens need --issuer, --jwks-url and --resource together")
	}
	// JWKSAllowPrivate opens the addresses, never the scheme: the verifier
	// refuses a plain-http JWKS (and a redirect to one) itself.
	policy.AllowPrivate = sc.JWKSAllowPrivate
	client := egress.NewGuard(policy, net.DefaultResolver).HTTPClient(egress.ClientOptions{})
	v, err := auth.NewJWTVerifier(auth.JWTConfig{
		Issuer: sc.Issuer, Audience: sc.Audience, JWKSURL: sc.JWKSURL, TenantClaim: sc.TenantClaim,
		RolesClaim: sc.RolesClaim, RequireTyp: requireTyp(sc.RequireAccessTokenType), OnFetch: onFetch,
	}, client)
	if errors.Is(err, auth.ErrInsecureJWKS) {
		return nil, fault.Wrap(err, fault.InvalidArgument,
			"--jwks-url must be an https URL: a plain-http JWKS is refused, with --jwks-allow-private too (it opens private addresses, not plain http); serve a test issuer with TLS and trust its CA (SSL_CERT_FILE)")
	}
	if err != nil {
		return nil, fault.Wrap(err, fault.InvalidArgument, "bad OAuth configuration: check --issuer, --jwks-url, --resource and --audience")
	}
	return v.Verify, nil
}

// requireTyp is the JWS typ JWTConfig.RequireTyp wants, if any.
func requireTyp(accessTokensOnly bool) string {
	if accessTokensOnly {
		return auth.AccessTokenType
	}
	return ""
}

// permitMethods is the edge's Permit for a method scope policy: nil (no
// check) without one, else a 403 step-up challenge naming every scope the
// request's methods need when the caller lacks one.
func permitMethods(policy auth.MethodScopes, metadataURL string) func(http.ResponseWriter, *http.Request, []string) bool {
	if len(policy) == 0 {
		return nil
	}
	return func(w http.ResponseWriter, r *http.Request, methods []string) bool {
		if err := auth.RequireScope(r.Context(), policy.Required(methods)...); err != nil {
			auth.Challenge(w, metadataURL, err)
			return false
		}
		return true
	}
}

// injectPrincipal serves every request as p (the unauthenticated loopback
// edge's REST side, matching the edge's DevPrincipal).
func injectPrincipal(p principal.Principal) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(principal.NewContext(r.Context(), p)))
		})
	}
}

// RunServe is `bastion serve`: it checks sc, binds both listeners (so a
// port in use fails before anything is opened or any token minted), opens
// the composition in cfg, starts the job workers (unless noWorkers), serves
// sc until ctx ends (SIGTERM), then drains: the listener closes, in-flight
// calls finish, sessions end, and the workers stop (StopGrace).
func RunServe(ctx context.Context, cfg Config, sc ServeConfig, noWorkers bool) error {
	sc.defaults()
	authOn := !sc.UnsafeNoAuth
	if err := edge.CheckBind(sc.Addr, authOn); err != nil {
		return fault.Wrap(err, fault.InvalidArgument, "refusing to serve on %s without authentication", sc.Addr)
	}
	if sc.AdminAddr != "-" {
		if err := edge.CheckAdminBind(sc.AdminAddr, sc.AdminPublic); err != nil {
			return fault.Wrap(err, fault.InvalidArgument, "refusing a public metrics listener on %s", sc.AdminAddr)
		}
	}
	if authOn {
		if _, err := jwtVerifier(sc, egress.Policy{Logger: cfg.Logger}, nil); err != nil {
			return err
		}
	}
	ln, aln, err := listen(sc)
	if err != nil {
		return err
	}
	closeListeners := func() {
		ln.Close()
		if aln != nil {
			aln.Close()
		}
	}
	a, err := Open(ctx, cfg)
	if err != nil {
		closeListeners()
		return err
	}
	if edge.CheckBind(sc.Addr, false) != nil && len(sc.AllowedHosts) == 0 { // not a loopback bind
		a.Log.Warn("bastion serve: non-loopback address without --allowed-hosts: only loopback Host names are accepted", "addr", sc.Addr)
	}
	stop := func() error {
		closeListeners()
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), StopGrace)
		defer cancel()
		return a.Close(stopCtx)
	}
	h, stop, err := a.prepareServe(ctx, sc, noWorkers, stop)
	if err != nil {
		return errors.Join(err, stop())
	}
	// Launch the browser before serving, so /readyz is ready at once and
	// no launch is in flight when a SIGTERM closes the pool (capture.Pool's
	// Close waits for a launch to unwind, which can take long under load).
	// Connections made meanwhile wait in the listener's backlog.
	if err := a.engine.Ready(ctx); err != nil && ctx.Err() == nil {
		a.Log.Warn("bastion serve: the engine is not ready; /readyz reports it", "engine", readyName(a.engine), "err", err)
	}
	return a.serve(ctx, sc, h, ln, aln, noWorkers, stop)
}

// prepareServe runs sc.Prepare, opens the gateway sc names, composes the
// HTTP side and starts the workers. The returned stop closes everything
// opened so far, the gateway first; call it on error too.
func (a *App) prepareServe(ctx context.Context, sc ServeConfig, noWorkers bool, stop func() error) (*HTTP, func() error, error) {
	if sc.Prepare != nil {
		if err := sc.Prepare(ctx, a); err != nil {
			return nil, stop, err
		}
	}
	var g *Gateway
	if sc.Gateway != nil {
		var err error
		g, err = OpenGateway(ctx, sc.Gateway, GatewayOptions{Review: a, Logger: a.Log, Version: sc.Version})
		if err != nil {
			return nil, stop, err
		}
		a.Log.Info("bastion serve: governing gateway", "servers", len(sc.Gateway.Servers), "audit", g.Paths.AuditDir)
		inner := stop
		// The gateway goes first: its review sessions run on this App.
		stop = func() error {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), StopGrace)
			defer cancel()
			return errors.Join(g.Close(stopCtx), inner())
		}
	}
	h, err := a.newHTTP(sc, g)
	if err != nil {
		return nil, stop, err
	}
	if !noWorkers {
		if err := a.Start(ctx); err != nil {
			return nil, stop, err
		}
	}
	return h, stop, nil
}

// serve serves h on the bound listeners until ctx ends or a listener
// fails, then drains and stops.
func (a *App) serve(ctx context.Context, sc ServeConfig, h *HTTP, ln, aln net.Listener, noWorkers bool, stop func() error) error {
	// The edge and the admin listener are never a review target, even
	// under --allow-private where every other loopback port is.
	defer a.Guard.ExcludeListener(ln.Addr())()
	adminAddr := ""
	if aln != nil {
		adminAddr = aln.Addr().String()
		defer a.Guard.ExcludeListener(aln.Addr())()
	}
	mcpURL := fmt.Sprintf("http://%s%s", ln.Addr(), sc.Path)
	a.Log.Info("bastion serve: listening", "mcp", mcpURL, "admin", adminAddr, "postgres", a.PG != nil, "workers", !noWorkers)
	if sc.Listening != nil {
		sc.Listening(mcpURL, adminAddr)
	}
	err := Serve(ctx, Listeners{Edge: h.Edge, Handler: h.Handler, Listener: ln, Admin: h.Admin, AdminListener: aln,
		Timeouts: sc.Timeouts, DrainTimeout: sc.DrainTimeout})
	a.Log.Info("bastion serve: stopped")
	return errors.Join(err, stop())
}

// listen binds the MCP listener and, unless disabled, the admin listener.
func listen(sc ServeConfig) (ln, aln net.Listener, err error) {
	ln, err = net.Listen("tcp", sc.Addr)
	if err != nil {
		return nil, nil, listenError(err, sc.Addr, "--addr")
	}
	if sc.AdminAddr == "-" {
		return ln, nil, nil
	}
	aln, err = net.Listen("tcp", sc.AdminAddr)
	if err != nil {
		ln.Close()
		return nil, nil, listenError(err, sc.AdminAddr, "--admin-addr")
	}
	return ln, aln, nil
}

// listenError says why addr could not be bound and which flag fixes it.
func listenError(err error, addr, flag string) error {
	var fix string
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		fix = "another process is listening there: stop it, or pass " + flag + " with a free address"
	case errors.Is(err, syscall.EACCES):
		fix = "this user may not bind that port: pass " + flag + " with a port above 1023"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		fix = "that host is not an address of this machine: pass " + flag + " with one of its addresses"
	default:
		fix = "pass " + flag + " with a host:port this machine can bind"
	}
	return fault.Wrap(err, fault.Unavailable, "cannot listen on %s: %s", addr, fix).WithNext(fault.None)
}

// agentAccess is the per-tenant agent-access flag: nil (everyone) when no
// tenant is switched off.
func agentAccess(off []string) func(context.Context, string) bool {
	if len(off) == 0 {
		return nil
	}
	denied := make(map[string]bool, len(off))
	for _, t := range off {
		denied[t] = true
	}
	return func(_ context.Context, tenant string) bool { return !denied[tenant] }
}
