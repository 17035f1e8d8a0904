//lint:file-ignore SA1019 sampling, elicitation, roots and logging are part of MCP 2025-11-25, the revision bastion targets and must relay; deprecated only from 2026-07-28.

// Package loop is the governing gateway's MCP loop: it merges the tools,
// prompts and resources of every configured upstream into one namespaced
// catalog, serves it to each client through its own *mcp.Server, and runs
// every tools/call through the gates (routing → policy with approval → pin →
// rate limit → inspect), the upstream, the result inspection and the audit
// ledger.
//
// Invariants:
//   - Names are stable: a tool or prompt is "NAMESPACE__name"; a collision
//     between servers is refused at start and never resolved by suffixing (a
//     later collision after list_changed keeps the first owner and is
//     logged). Resource URIs are not rewritten; a URI two servers offer is
//     served by the first server in key order.
//   - Nothing is dispatched unrecorded: an allowed tools/call, prompts/get
//     or resources/read first appends an attempt record (durable, group
//     committed) and is forwarded only once it is; if that append fails the
//     request is denied "audit ledger unavailable" without reaching the
//     upstream. Every outcome (allowed, denied with gate and rule, parked
//     for approval, upstream error, timeout, trap) then appends exactly one
//     record under context.WithoutCancel, completing the attempt (same
//     request id, its seq in attempt), before the client sees the result;
//     a failed append replaces whatever the call produced with that denial.
//     Findings that did not deny (warn mode) ride in the record's warnings,
//     are counted by rule and logged once per request.
//   - A denial is a tool result with isError and "bastion denied: <reason>",
//     never a protocol error; an unknown tool name is a denial too. The one
//     protocol error of the gateway's own is a request state it did not
//     issue to that principal for that name (invalid params, as an upstream
//     answers a state it cannot verify), recorded like a denial.
//   - The protocol passes through on both revisions: a 2025-11-25 client is
//     asked the upstream's questions during its call; a 2026-07-28 client
//     gets the upstream's input-required results with their own keys over
//     the upstream's 2026-07-28 session (upstream.Conn.MultiRoundTrip), its
//     capabilities reach the upstream, and the upstream's request state is
//     sealed to the caller, the method and the name (rounds.go). An upstream
//     that speaks only 2025-11-25 reaches such a client through the bridge
//     (mrtr.go). Each round is a governed, recorded request of its own.
//   - A server in Deps.ForPrincipal is called as the caller: over a session
//     of the caller's own, or through its tool handler made for the caller,
//     never over one that acts for someone else (principals.go).
//   - One upstream never takes the gateway down: start-up waits a bounded
//     time ([gateway] startup_wait) for the upstreams, then serves the ones
//     that are up. An upstream without a live session is absent from every
//     list, calls to its names are denied ("upstream NAME is unavailable",
//     recorded), and its supervisor retries it with backoff; when it comes
//     or goes, clients get list_changed (availability.go).
//   - Clients share no protocol state: NewServer builds a fresh *mcp.Server
//     per client, filled only with what that principal may see.
//   - The call path holds no lock shared between upstreams: the catalog is an
//     immutable snapshot behind an atomic pointer and each upstream Conn
//     multiplexes its own calls, so a slow upstream never delays another.
package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/bastion-mcp/bastion/audit"
	"github.com/bastion-mcp/bastion/gateway"
	"github.com/bastion-mcp/bastion/gateway/approval"
	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/gateway/gates"
	"github.com/bastion-mcp/bastion/gateway/inspect"
	"github.com/bastion-mcp/bastion/gateway/pin"
	"github.com/bastion-mcp/bastion/gateway/policy"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/upstream"
)

// Ledger is where outcomes are recorded; *audit.Ledger satisfies it.
type Ledger interface {
	Append(ctx context.Context, e audit.Entry) (audit.Record, error)
}

// healthReporter is a Ledger that can say whether it takes records now
// (*audit.Ledger's Err), for the ledger_up gauge between requests.
type healthReporter interface {
	Err() error
}

// ledgerHealthy reports whether the ledger takes records: its own word
// when it has one, else whether the last append succeeded.
func (l *Loop) ledgerHealthy() bool {
	if h, ok := l.ledger.(healthReporter); ok {
		return h.Err() == nil
	}
	return !l.ledgerDown.Load()
}

// Dialer opens the upstream keyed name, delivering its announcements to ev.
// The loop calls it once per configured server at New. It returns once the
// Conn exists, without waiting for its first session (New waits, boundedly);
// an error is a configuration fault and fails New.
type Dialer func(ctx context.Context, name string, ev upstream.Events) (*upstream.Conn, error)

// Deps are the loop's collaborators.
type Deps struct {
	// Dial opens each configured server (see StandardDialer). Required.
	Dial Dialer
	// Ledger records every outcome. Required: a gateway without a ledger
	// would govern unaudited.
	Ledger Ledger
	// PinStore keeps approved tool hashes; nil means an in-memory store.
	PinStore pin.Store
	// Approvals keeps parked calls; nil means an in-memory queue.
	Approvals approval.Queue
	// Metrics receives the loop's collectors; nil means a private registry.
	Metrics prometheus.Registerer
	// Logger; nil discards.
	Logger *slog.Logger
	// Version is reported as the gateway's serverInfo version.
	Version string
	// PageSize bounds list pages; zero means the SDK's default.
	PageSize int
	// PinRefresh is how often the pins store is re-read, so an approval
	// made by another process (`bastion pin approve`) reaches running
	// clients; zero means DefaultPinRefresh, negative never.
	PinRefresh time.Duration
	// ForPrincipal names in-process servers that act for the principal of
	// their session: a call made for p goes to the server made for p,
	// opened on first use and closed when idle. Listing still uses the
	// shared session Dial opened.
	ForPrincipal map[string]PrincipalServer
	// Tracer starts a span per governed tools/call, with a child per gate,
	// for the upstream call and for each ledger append; nil (tracing off)
	// starts none and costs nothing per call.
	Tracer trace.Tracer
}

// PrincipalServer is an in-process server that acts for a principal.
type PrincipalServer struct {
	// Connect returns a fresh transport to a session of the server made
	// as p. Required.
	Connect func(ctx context.Context, p principal.Principal) (mcp.Transport, error)
	// Call, when set, returns the server's tools made as p, called without
	// a session (upstream.Spec.Call): a governed tools/call then costs no
	// second protocol hop. Resources and prompts still use a session.
	Call func(p principal.Principal) mcp.ToolHandler
}

// DefaultPinRefresh is how often a Loop re-reads its pins store.
const DefaultPinRefresh = 2 * time.Second

// Loop is the gateway. Create it with New; it is safe for concurrent use.
type Loop struct {
	// Fixed at New; cfg is the configuration after WithDefaults.
	cfg       *config.File
	servers   map[string]*serverState // by [server.X] key
	order     []string                // server keys, sorted
	chain     *gateway.Chain
	policy    *policy.Policy
	pins      *pin.Gate
	inspect   *inspect.Gate
	ledger    Ledger
	approvals approval.Queue
	log       *slog.Logger
	met       *metrics
	version   string
	pageSize  int
	tracer    trace.Tracer // or nil

	cat     atomic.Pointer[catalog] // the live merged catalog
	rebuild sync.Mutex              // serializes catalog rebuilds (never held by calls)

	rounds   roundKey      // seals the request states of upstream rounds
	subs     subscriptions // upstream resource subscriptions
	bridges  sync.Map      // request state → *bridge, for multi-round-trip clients
	awaiting sync.Map      // principal and server → *bridge waiting for answers

	clientsMu sync.Mutex // guards clients and swept
	clients   map[*client]struct{}
	swept     time.Time

	stop       chan struct{} // closed by Close: background work ends
	started    atomic.Bool   // New has waited for the upstreams; their events are acted on
	closing    atomic.Bool
	ledgerDown atomic.Bool    // the last ledger append failed; logged once per failure
	logsWanted atomic.Bool    // a client set a logging level; upstreams send everything
	wg         sync.WaitGroup // refreshes in flight
}

// serverState is one upstream and what it last listed.
type serverState struct {
	name string // [server.X] key
	ns   string // client-facing namespace
	bare bool   // names are served unprefixed
	conn *upstream.Conn
	perP *principalConns // calls per principal (Deps.ForPrincipal), or nil

	refresh sync.Mutex // serializes re-listing this server

	mu        sync.Mutex // guards the fields below
	up        bool       // listed from a live session: in the catalog
	logged    bool       // up, as last logged (logTransition)
	lastErr   string     // why it is not up, for readiness; "" when up
	tools     []*mcp.Tool
	prompts   []*mcp.Prompt
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate

	flight inflight // client sessions with calls in flight, for log routing

	drifted atomic.Int32 // tools whose definition differs from its pin, for metrics
}

// New connects every configured server (through deps.Dial), waits up to
// [gateway] startup_wait for their first sessions, observes the tools of
// those that are up for pins and inspection, and builds the merged catalog
// and the gate chain (gates.Compile, as `bastion validate` does). It reads
// cfg.WithDefaults(), never cfg's own empty fields. A server not up by then
// is served when it connects.
// New fails when a server cannot be configured, two servers that are up
// list a colliding name, or the policy does not compile.
func New(ctx context.Context, cfg *config.File, deps Deps) (*Loop, error) {
	if deps.Dial == nil || deps.Ledger == nil {
		return nil, errors.New("loop: Dial and Ledger are required")
	}
	cfg = cfg.WithDefaults() // every default is decided there, once
	l := &Loop{
		cfg:       cfg,
		servers:   map[string]*serverState{},
		ledger:    deps.Ledger,
		approvals: deps.Approvals,
		log:       deps.Logger,
		version:   deps.Version,
		pageSize:  deps.PageSize,
		clients:   map[*client]struct{}{},
		stop:      make(chan struct{}),
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if l.approvals == nil {
		l.approvals = approval.NewMem()
	}
	if l.version == "" {
		l.version = "0"
	}
	var err error
	if l.rounds, err = newRoundKey(); err != nil {
		return nil, err
	}
	g, err := gates.Compile(cfg, gates.Options{Routing: routingGate{l}, PinStore: deps.PinStore})
	if err != nil {
		return nil, err
	}
	l.chain, l.policy, l.pins, l.inspect = g.Chain.WithTracer(deps.Tracer), g.Policy, g.Pins, g.Inspect
	l.tracer = deps.Tracer
	for name := range cfg.Servers {
		l.order = append(l.order, name)
	}
	sort.Strings(l.order)
	fail := func(err error) (*Loop, error) {
		l.Close()
		return nil, err
	}
	for _, name := range l.order {
		s := &serverState{name: name, ns: cfg.Servers[name].Namespace, bare: cfg.Servers[name].Unprefixed}
		conn, err := deps.Dial(ctx, name, events{l})
		if err != nil {
			return fail(fmt.Errorf("loop: server %s: %w", name, err))
		}
		s.conn = conn
		if ps, ok := deps.ForPrincipal[name]; ok {
			if ps.Connect == nil {
				return fail(fmt.Errorf("loop: server %s: ForPrincipal has no Connect", name))
			}
			s.perP = &principalConns{
				name: name, timeout: time.Duration(cfg.Servers[name].Timeout), server: ps,
				deps:  upstream.Deps{Logger: l.log, Events: logsOnly{events{l}}},
				conns: map[principalKey]*principalConn{},
			}
		}
		l.servers[name] = s
	}
	if l.met, err = newMetrics(deps.Metrics, l); err != nil {
		return fail(err)
	}
	l.await(ctx)
	cat, collisions := l.build()
	var fatal []string
	for _, c := range collisions {
		if strings.HasPrefix(c, "tool ") || strings.HasPrefix(c, "prompt ") {
			fatal = append(fatal, c)
		}
	}
	if len(fatal) > 0 {
		return fail(fmt.Errorf("loop: name collisions between servers (rename a namespace): %v", fatal))
	}
	if len(collisions) > 0 {
		l.log.Warn("resource URIs offered by several servers; the first server (by key) serves each", "uris", collisions)
	}
	l.cat.Store(cat)
	if every := deps.PinRefresh; every >= 0 {
		if every == 0 {
			every = DefaultPinRefresh
		}
		l.wg.Add(1)
		go l.watchPins(every)
	}
	l.catchUp()
	return l, nil
}

// watchPins re-reads the pins store every interval and republishes the
// catalog when an approval changed, so clients see a re-approved tool (and
// get tools/list_changed) without waiting for the upstream to re-list.
func (l *Loop) watchPins(every time.Duration) {
	defer l.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		changed := false
		for _, name := range l.order {
			ctx, cancel := context.WithTimeout(context.Background(), every)
			ch, err := l.pins.Reload(ctx, name)
			cancel()
			if err != nil {
				l.log.Warn("re-reading pins failed; the pins in force stay", "server", name, "err", err)
			}
			changed = changed || ch
		}
		if changed {
			l.publish()
		}
	}
}

// Close closes every upstream. Clients' servers stop answering calls.
func (l *Loop) Close() error {
	if l.closing.Swap(true) {
		return nil
	}
	close(l.stop)
	// Bridged calls waiting for a client's answers end now, not at their
	// deadline: nobody will answer them.
	l.bridges.Range(func(_, v any) bool {
		v.(*bridge).cancel()
		return true
	})
	var errs []error
	for _, s := range l.servers {
		if s.perP != nil {
			s.perP.close()
		}
		if s.conn != nil {
			errs = append(errs, s.conn.Close())
		}
	}
	l.wg.Wait()
	return errors.Join(errs...)
}

// Pins returns the pin gate (for `bastion pin approve` wired in process).
func (l *Loop) Pins() *pin.Gate { return l.pins }

// Approvals returns the approval queue.
func (l *Loop) Approvals() approval.Queue { return l.approvals }

// Refresh re-lists srv and republishes the catalog; the loop does this on
// every list_changed and reconnection. After pin.Approve, call it so the
// approved tools reappear for connected clients.
func (l *Loop) Refresh(ctx context.Context, srv string) error {
	s, ok := l.servers[srv]
	if !ok {
		return fmt.Errorf("loop: unknown server %q", srv)
	}
	if err := l.list(ctx, s); err != nil {
		return err
	}
	l.publish()
	return nil
}

// Republish rebuilds the catalog from what the servers last listed and
// resynchronizes every client (after a pin approval, for example).
func (l *Loop) Republish() { l.publish() }

// list re-reads what s offers and observes its tools for pins and
// inspection.
func (l *Loop) list(ctx context.Context, s *serverState) error {
	s.refresh.Lock()
	defer s.refresh.Unlock()
	return l.listLocked(ctx, s)
}

// listLocked is list with s.refresh held; a listing that succeeds puts s
// in the catalog.
func (l *Loop) listLocked(ctx context.Context, s *serverState) error {
	tools, err := s.conn.Tools(ctx)
	if err != nil {
		return fmt.Errorf("loop: server %s: listing tools: %w", s.name, err)
	}
	raw := make([]json.RawMessage, 0, len(tools))
	for _, t := range tools {
		b, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("loop: server %s: tool %q: %w", s.name, t.Name, err)
		}
		raw = append(raw, b)
	}
	rep, err := l.pins.Observe(ctx, s.name, raw)
	if err != nil {
		return fmt.Errorf("loop: server %s: pins: %w", s.name, err)
	}
	s.drifted.Store(int32(len(rep.Changed)))
	if len(rep.Changed) > 0 || len(rep.Added) > 0 && rep.Pinned {
		l.log.LogAttrs(ctx, slog.LevelWarn, "tool definitions differ from their pins; held until `bastion pin approve`",
			slog.String("server", s.name), slog.Any("changed", rep.Changed), slog.Any("added", rep.Added))
	}
	for _, f := range l.inspect.ObserveTools(s.name, raw) {
		l.log.LogAttrs(ctx, slog.LevelWarn, "tool description flagged", slog.String("server", s.name), slog.Any("finding", f))
	}
	// Prompts and resources are optional capabilities: a server without
	// them answers "method not found", which is not a failure.
	prompts, _ := s.conn.Prompts(ctx)
	resources, _ := s.conn.Resources(ctx)
	templates, _ := s.conn.ResourceTemplates(ctx)
	s.mu.Lock()
	s.tools, s.prompts, s.resources, s.templates = tools, prompts, resources, templates
	s.up, s.lastErr = true, ""
	s.mu.Unlock()
	return nil
}

// publish rebuilds the catalog and pushes it to every client.
func (l *Loop) publish() {
	l.rebuild.Lock()
	cat, collisions := l.build()
	if len(collisions) > 0 {
		l.log.Warn("name collisions after a list change; the first owner keeps each name", "names", collisions)
	}
	l.cat.Store(cat)
	l.rebuild.Unlock()
	for _, c := range l.liveClients() {
		c.sync(cat)
	}
}

// catalog is an immutable snapshot of everything the upstreams offer,
// under client-facing names. Visibility per principal is decided when a
// client syncs, since pins and inspection can change between snapshots.
type catalog struct {
	gen       uint64
	tools     map[string]*toolEntry // by client-facing name
	absent    absentServers         // servers not up, for their calls' denial
	prompts   map[string]*promptEntry
	resources map[string]*resourceEntry // by URI
	templates map[string]*templateEntry // by URI template
}

type toolEntry struct {
	server, tool string
	def          *mcp.Tool // with the client-facing name
}

type promptEntry struct {
	server, prompt string
	def            *mcp.Prompt
}

type resourceEntry struct {
	server string
	def    *mcp.Resource
}

type templateEntry struct {
	server string
	def    *mcp.ResourceTemplate
}

var generation atomic.Uint64

// build merges the last listing of every server that is up. Servers are
// visited in key order, so the first owner of a colliding name is
// deterministic, except that a name already served keeps its owner.
func (l *Loop) build() (*catalog, []string) {
	c := &catalog{
		gen:       generation.Add(1),
		tools:     map[string]*toolEntry{},
		prompts:   map[string]*promptEntry{},
		resources: map[string]*resourceEntry{},
		templates: map[string]*templateEntry{},
	}
	type listing struct {
		up      bool
		tools   []*mcp.Tool
		prompts []*mcp.Prompt
		res     []*mcp.Resource
		tmpl    []*mcp.ResourceTemplate
	}
	snap := make(map[string]listing, len(l.order))
	for _, name := range l.order {
		s := l.servers[name]
		s.mu.Lock()
		snap[name] = listing{s.up, s.tools, s.prompts, s.resources, s.templates}
		s.mu.Unlock()
	}
	// A name keeps the owner it had in the live catalog while that owner is
	// up: an upstream that connects late never takes over another's name.
	owner := map[string]string{}
	if prev := l.cat.Load(); prev != nil {
		for q, e := range prev.tools {
			if ls := snap[e.server]; ls.up && slices.ContainsFunc(ls.tools, func(t *mcp.Tool) bool { return t.Name == e.tool }) {
				owner["tool "+q] = e.server
			}
		}
		for q, e := range prev.prompts {
			if ls := snap[e.server]; ls.up && slices.ContainsFunc(ls.prompts, func(p *mcp.Prompt) bool { return p.Name == e.prompt }) {
				owner["prompt "+q] = e.server
			}
		}
	}
	taken := func(key, name string) bool {
		o, ok := owner[key]
		return ok && o != name
	}
	var collisions []string
	for _, name := range l.order {
		s := l.servers[name]
		ls := snap[name]
		up, tools, prompts, resources, templates := ls.up, ls.tools, ls.prompts, ls.res, ls.tmpl
		if !up {
			c.absent.add(s, tools)
			continue
		}
		for _, t := range tools {
			q := s.qualify(t.Name)
			if _, dup := c.tools[q]; dup || taken("tool "+q, name) {
				collisions = append(collisions, "tool "+q)
				continue
			}
			def := *t
			def.Name = q
			c.tools[q] = &toolEntry{server: name, tool: t.Name, def: &def}
		}
		for _, p := range prompts {
			q := s.qualify(p.Name)
			if _, dup := c.prompts[q]; dup || taken("prompt "+q, name) {
				collisions = append(collisions, "prompt "+q)
				continue
			}
			def := *p
			def.Name = q
			c.prompts[q] = &promptEntry{server: name, prompt: p.Name, def: &def}
		}
		// Resource URIs are global identifiers the upstream's own content
		// refers to, so they are not rewritten; a URI two servers claim
		// belongs to the first.
		for _, r := range resources {
			if _, dup := c.resources[r.URI]; dup {
				collisions = append(collisions, "resource "+r.URI)
				continue
			}
			c.resources[r.URI] = &resourceEntry{server: name, def: r}
		}
		for _, t := range templates {
			if _, dup := c.templates[t.URITemplate]; dup {
				collisions = append(collisions, "resource template "+t.URITemplate)
				continue
			}
			c.templates[t.URITemplate] = &templateEntry{server: name, def: t}
		}
	}
	slices.Sort(collisions)
	return c, collisions
}

// qualify returns the client-facing name of the server's tool or prompt.
func (s *serverState) qualify(name string) string {
	if s.bare {
		return name
	}
	return gateway.QualifiedName(s.ns, name)
}

// router resolves client-facing tool names against the live catalog.
type router struct{ l *Loop }

func (r router) Route(name string) (string, string, bool) {
	e, ok := r.l.cat.Load().tools[name]
	if !ok {
		return "", "", false
	}
	return e.server, e.tool, true
}

// events receives the upstreams' announcements.
type events struct{ l *Loop }

// Changed re-lists the server in the background (Events must not block)
// and republishes the catalog, so pins and descriptions are re-checked on
// every list_changed and every reconnection.
//
// Until New has waited for the upstreams, events are left to New, which
// catches up on what they announced (catchUp).
func (e events) Changed(ctx context.Context, server string, c upstream.Change) {
	l := e.l
	if !l.started.Load() || l.closing.Load() {
		return
	}
	s, ok := l.servers[server]
	if !ok {
		return
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if (c == upstream.Reconnected || c == upstream.Connected) && l.logsWanted.Load() {
			l.setUpstreamLevel(rctx, s)
		}
		l.resync(rctx, s, c)
	}()
}

// Updated tells every client that may see the resource; each client's
// server passes it on to its sessions subscribed to that URI and to no
// other.
func (e events) Updated(ctx context.Context, server string, p *mcp.ResourceUpdatedNotificationParams) {
	l := e.l
	r, ok := l.cat.Load().resources[p.URI]
	if !ok || r.server != server {
		return // not a resource this server is listed as serving
	}
	for _, c := range l.liveClients() {
		if !l.nameVisible(c.p, server, r.def.Name) {
			continue
		}
		if err := c.srv.ResourceUpdated(context.WithoutCancel(ctx), &mcp.ResourceUpdatedNotificationParams{URI: p.URI}); err != nil {
			l.log.Debug("resource update not relayed", "server", server, "err", err)
		}
	}
}

// Log forwards an upstream's log message to the one client with calls in
// flight on that server, on the stream of one of those calls; with none or
// several clients it stays in bastion's log, since a message may carry one
// client's data. Each client's own level filters what it receives.
func (e events) Log(ctx context.Context, server string, p *mcp.LoggingMessageParams) {
	s, ok := e.l.servers[server]
	if !ok {
		return
	}
	if ss, cctx := s.flight.only(); ss != nil {
		_ = ss.Log(context.WithoutCancel(cctx), p)
		return
	}
	e.l.log.LogAttrs(ctx, slog.LevelDebug, "upstream log message not attributable to one client", slog.String("server", server))
}

// wantLogs asks every upstream for all its log messages, once a client has
// set a logging level (each client's level then filters per client).
func (l *Loop) wantLogs(ctx context.Context) {
	if l.logsWanted.Swap(true) {
		return
	}
	for _, s := range l.servers {
		l.setUpstreamLevel(ctx, s)
	}
}

func (l *Loop) setUpstreamLevel(ctx context.Context, s *serverState) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if sess, err := s.conn.Session(ctx); err == nil {
		if err := sess.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			l.log.LogAttrs(ctx, slog.LevelDebug, "upstream does not take a logging level", slog.String("server", s.name), slog.String("err", err.Error()))
		}
	}
}

// inflight tracks the client calls in flight on one server.
type inflight struct {
	mu    sync.Mutex // guards calls
	calls map[*callDown]struct{}
}

// callDown is the Downstream of one call: the client's session, with the
// call's own context, so what the upstream sends back during the call
// (progress, sampling, elicitation, roots, logs) travels on that call's
// stream and under its logging level.
type callDown struct {
	ss  *mcp.ServerSession
	ctx context.Context
}

func (d *callDown) CreateMessage(_ context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	return d.ss.CreateMessage(d.ctx, p)
}

func (d *callDown) Elicit(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return d.ss.Elicit(d.ctx, p)
}

func (d *callDown) ListRoots(_ context.Context, p *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	return d.ss.ListRoots(d.ctx, p)
}

// NotifyProgress keeps the call's values but not its cancellation: the
// upstream's notifications are delivered asynchronously and may trail the
// call's result by a moment.
func (d *callDown) NotifyProgress(_ context.Context, p *mcp.ProgressNotificationParams) error {
	return d.ss.NotifyProgress(context.WithoutCancel(d.ctx), p)
}

func (f *inflight) add(d *callDown) func() {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[*callDown]struct{}{}
	}
	f.calls[d] = struct{}{}
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		delete(f.calls, d)
		f.mu.Unlock()
	}
}

// only returns the session and a call context when every call in flight
// belongs to one client session.
func (f *inflight) only() (*mcp.ServerSession, context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ss *mcp.ServerSession
	var ctx context.Context
	for d := range f.calls {
		if ss != nil && d.ss != ss {
			return nil, nil
		}
		ss, ctx = d.ss, d.ctx
	}
	return ss, ctx
}
