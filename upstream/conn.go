//lint:file-ignore SA1019 sampling, roots and logging are part of MCP 2025-11-25, the revision bastion targets and must relay; deprecated only from 2026-07-28.

package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tetratelabs/wazero"

	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/fault"
)

// Kind is an upstream transport.
type Kind string

// The upstream kinds.
const (
	Stdio     Kind = "stdio"     // a child process speaking newline-delimited JSON-RPC
	HTTP      Kind = "http"      // Streamable HTTP
	SSE       Kind = "sse"       // legacy HTTP+SSE (2024-11-05)
	Wasm      Kind = "wasm"      // a WASI preview 1 module speaking stdio, under wazero
	InProcess Kind = "inprocess" // a server in this process, through Spec.Connect
)

// Defaults for the zero values of Spec and Deps.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultConnectTimeout   = 30 * time.Second
	DefaultStopGrace        = 2 * time.Second
	DefaultMaxResponseBytes = 64 << 20
	DefaultWasmMemoryMB     = 64
	DefaultBackoffMin       = 100 * time.Millisecond
	DefaultBackoffMax       = 30 * time.Second
	// DefaultProtocolVersion is the MCP revision bastion targets; a newer
	// one is negotiated only when a Spec asks for it.
	DefaultProtocolVersion = "2025-11-25"
)

// Errors wrapped by the *fault.Error values a Conn returns, for errors.Is.
// An upstream's own JSON-RPC errors (*jsonrpc.Error) are returned unwrapped.
var (
	// ErrTimeout means the call outlived its deadline.
	ErrTimeout = errors.New("upstream: call deadline exceeded")
	// ErrLost means the session ended during the call (a crash, a dropped
	// stream); the supervisor is replacing it.
	ErrLost = errors.New("upstream: session lost during the call")
	// ErrTrapped means a Wasm instance trapped or exited during the call; it
	// has been discarded.
	ErrTrapped = errors.New("upstream: wasm instance trapped")
	// ErrUnavailable means no session could be had within the deadline.
	ErrUnavailable = errors.New("upstream: not connected")
	// ErrClosed means the Conn was closed.
	ErrClosed = errors.New("upstream: closed")
	// ErrAmbiguous means a server-to-client request could not be attributed
	// to a single downstream client and was refused.
	ErrAmbiguous = errors.New("upstream: server request cannot be attributed to one client")
	// ErrNoMultiRoundTrip means the upstream does not speak a protocol with
	// multi-round-trip requests (it negotiated an older revision).
	ErrNoMultiRoundTrip = errors.New("upstream: the server does not speak multi-round-trip requests")
)

// MultiRoundTripVersion is the first MCP revision in which a server returns
// its questions as input requests in a result instead of asking during a
// call (SEP-2322), and in which each request carries the client's
// capabilities (SEP-2575).
const MultiRoundTripVersion = "2026-07-28"

// Value is a configured value resolved when an upstream (re)starts.
// gateway/config.Ref satisfies it ("env:NAME", "file:PATH" or a literal).
type Value interface {
	Resolve(getenv func(string) (string, bool)) (string, error)
}

// Literal is a Value that is itself.
type Literal string

// Resolve implements Value.
func (l Literal) Resolve(func(string) (string, bool)) (string, error) { return string(l), nil }

// Spec describes one upstream. Fields apply to the kinds named in their
// group; the zero value of an optional field means its default.
type Spec struct {
	Name string // the server's key, used in logs, errors and events
	Kind Kind
	// Timeout bounds each call; zero means DefaultTimeout.
	Timeout time.Duration
	// ConnectTimeout bounds starting and initializing one session; zero
	// means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// ProtocolVersion is offered in initialize; empty means
	// DefaultProtocolVersion. From 2026-07-28 a server may not send
	// sampling or elicitation requests during a call; it returns them as
	// input requests, which the SDK fulfils in the call's own context.
	ProtocolVersion string
	// Env is the child's (or module's) whole environment besides PATH.
	Env map[string]Value

	// Stdio.
	Command string
	Args    []string // also the Wasm module's argv[1:]
	Dir     string
	// Path is the child's PATH; empty means bastion's PATH.
	Path string
	// StopGrace is how long a child gets after stdin closes, and again after
	// SIGTERM, before its process group is killed; zero means
	// DefaultStopGrace.
	StopGrace time.Duration

	// HTTP and SSE.
	URL string
	// Headers are sent with every request to the upstream, and nothing
	// else a downstream client sent ever is.
	Headers map[string]Value
	// MaxResponseBytes caps one HTTP response body (a long-lived event
	// stream included; when it is exceeded the session is replaced); zero
	// means DefaultMaxResponseBytes.
	MaxResponseBytes int64

	// Wasm.
	Module   string   // path of the .wasm file
	MemoryMB int      // memory cap; zero means DefaultWasmMemoryMB
	ReadOnly []string // host directories mounted read-only at the same path

	// InProcess: Connect returns a fresh transport to the server for each
	// session (for example one end of mcp.NewInMemoryTransports).
	Connect func(ctx context.Context) (mcp.Transport, error)
	// InProcess, optional: Call answers tools/call without the session, as
	// the server's own tool handler would (see Conn.CallTool). Everything
	// else still goes over a session from Connect, started on first need.
	Call mcp.ToolHandler
}

// Change is what an Events.Changed call reports.
type Change int

// The changes.
const (
	ToolsChanged Change = iota + 1
	PromptsChanged
	ResourcesChanged
	// Reconnected: a new session replaced one that ended; everything the
	// gateway learned from the old one (tools, pins) must be re-checked.
	Reconnected
	// Connected: the Conn's first session is ready (every later one is
	// Reconnected). A gateway that stopped waiting for it at start-up
	// lists it now.
	Connected
	// Down: the live session ended; calls wait for its replacement (within
	// ConnectTimeout) while the supervisor restarts it with backoff.
	Down
)

func (c Change) String() string {
	switch c {
	case ToolsChanged:
		return "tools_changed"
	case PromptsChanged:
		return "prompts_changed"
	case ResourcesChanged:
		return "resources_changed"
	case Reconnected:
		return "reconnected"
	case Connected:
		return "connected"
	case Down:
		return "down"
	}
	return "change(" + strconv.Itoa(int(c)) + ")"
}

// Events receives what an upstream announces. Methods are called from the
// session's goroutines and must not block for long.
type Events interface {
	Changed(ctx context.Context, server string, c Change)
	Log(ctx context.Context, server string, p *mcp.LoggingMessageParams)
	// Updated reports notifications/resources/updated for a resource the
	// gateway subscribed to on this upstream.
	Updated(ctx context.Context, server string, p *mcp.ResourceUpdatedNotificationParams)
}

// Downstream is the client a call is made for: where the upstream's
// server-to-client requests and progress go. *mcp.ServerSession satisfies
// it. Implementations must be comparable (a pointer), since in-flight calls
// are grouped by downstream.
type Downstream interface {
	CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	ListRoots(ctx context.Context, p *mcp.ListRootsParams) (*mcp.ListRootsResult, error)
	NotifyProgress(ctx context.Context, p *mcp.ProgressNotificationParams) error
}

type downstreamKey struct{}

// WithDownstream returns a context whose calls are made for d.
func WithDownstream(ctx context.Context, d Downstream) context.Context {
	return context.WithValue(ctx, downstreamKey{}, d)
}

// DownstreamFrom returns the Downstream of ctx, if any.
func DownstreamFrom(ctx context.Context) (Downstream, bool) {
	d, ok := ctx.Value(downstreamKey{}).(Downstream)
	return d, ok && d != nil
}

// Backoff spaces restarts: the nth consecutive failure waits about
// Min·2ⁿ⁻¹, capped at Max, with equal jitter (half fixed, half random) so
// upstreams that failed together do not restart together.
type Backoff struct {
	Min, Max time.Duration // zero means DefaultBackoffMin, DefaultBackoffMax
}

// Delay returns the wait before restart attempt n (n ≥ 1).
func (b Backoff) Delay(n int) time.Duration {
	lo, hi := b.Min, b.Max
	if lo <= 0 {
		lo = DefaultBackoffMin
	}
	if hi <= 0 {
		hi = DefaultBackoffMax
	}
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	return d/2 + rand.N(d/2+1)
}

// Deps are a Conn's collaborators. Guard is required for HTTP and SSE.
type Deps struct {
	Logger *slog.Logger                // nil discards
	Guard  *egress.Guard               // dials HTTP and SSE upstreams
	Events Events                      // nil ignores announcements
	Getenv func(string) (string, bool) // resolves env: values; nil means os.LookupEnv
	// WasmCache shares compiled Wasm code across Conns (and, with
	// wazero.NewCompilationCacheWithDir, across runs); nil means one
	// in-memory cache per Conn.
	WasmCache wazero.CompilationCache
	Backoff   Backoff
}

// State is a Conn's lifecycle state.
type State string

// The states.
const (
	// Idle: a Conn whose tool calls need no session (Spec.Call) has not
	// needed one yet; its supervisor has not connected.
	Idle       State = "idle"
	Starting   State = "starting"
	Ready      State = "ready"
	Restarting State = "restarting"
	Closed     State = "closed"
)

// Health is a snapshot of a Conn for metrics and readiness.
type Health struct {
	State    State
	Restarts int       // sessions that ended and were (or are being) replaced
	Failures int       // start attempts that failed, in total
	Since    time.Time // when State was entered
	// LastError is why the last session ended or failed to start; it is
	// for operators and may name local paths.
	LastError string
	// Connect is how long the last successful start plus initialize took.
	Connect time.Duration
}

// Conn is a supervised client session to one upstream. It is safe for
// concurrent use; calls never hold its lock while talking to the upstream.
type Conn struct {
	// Set once by New.
	spec    Spec
	deps    Deps
	log     *slog.Logger
	client  *mcp.Client
	dial    func(ctx context.Context) (mcp.Transport, error)
	wasm    *wasmModule // or nil
	stop    context.CancelFunc
	done    chan struct{} // closed when the supervisor exits
	nextTok atomic.Uint64
	// wanted is closed by the first Session of a Conn whose tool calls
	// need no session (Spec.Call); the supervisor connects only then.
	// Nil when the supervisor connects at once.
	wanted     chan struct{}
	wantedOnce sync.Once
	// attempted is closed when the first start attempt has finished;
	// firstErr, written before, is its error or nil.
	attempted chan struct{}
	firstErr  error

	mu     sync.Mutex
	sess   *mcp.ClientSession // the live session, or nil
	ready  chan struct{}      // closed when sess is set or the Conn closes; replaced when sess is cleared
	closed bool
	health Health
	calls  map[*mcp.ClientSession]map[uint64]Downstream // in-flight calls per session
	prog   map[string]progressRoute                     // rewritten progress token → caller
	lost   map[*mcp.ClientSession]error                 // why a session ended, for ErrTrapped

	fence *fence // orders relayed notifications before results (fence.go)

	mrtrMu sync.Mutex // guards mrtr and noMRTR; held while the sibling's first session starts
	mrtr   *Conn      // the multi-round-trip sibling, once started
	noMRTR bool       // the upstream negotiated an older revision
}

// progressGrace is how long a call's progress route outlives the call.
const progressGrace = 2 * time.Second

type progressRoute struct {
	d     Downstream
	token any
}

// New validates spec, prepares its transport (compiling a Wasm module) and
// starts the supervisor, which connects in the background. Call Session to
// wait for the first session (and fail fast at startup). When spec.Call is
// set, tool calls need no session, so the supervisor waits for the first
// Session before it connects: a Conn only ever called stays without one.
func New(ctx context.Context, spec Spec, deps Deps) (*Conn, error) {
	if spec.Name == "" {
		return nil, fault.New(fault.InvalidArgument, "an upstream needs a name")
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Getenv == nil {
		deps.Getenv = os.LookupEnv
	}
	if spec.Timeout <= 0 {
		spec.Timeout = DefaultTimeout
	}
	if spec.ConnectTimeout <= 0 {
		spec.ConnectTimeout = DefaultConnectTimeout
	}
	if spec.StopGrace <= 0 {
		spec.StopGrace = DefaultStopGrace
	}
	if spec.MaxResponseBytes <= 0 {
		spec.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if spec.MemoryMB <= 0 {
		spec.MemoryMB = DefaultWasmMemoryMB
	}
	if spec.ProtocolVersion == "" {
		spec.ProtocolVersion = DefaultProtocolVersion
	}
	c := &Conn{
		spec:      spec,
		deps:      deps,
		log:       deps.Logger.With(slog.String("upstream", spec.Name), slog.String("kind", string(spec.Kind))),
		done:      make(chan struct{}),
		ready:     make(chan struct{}),
		attempted: make(chan struct{}),
		calls:     map[*mcp.ClientSession]map[uint64]Downstream{},
		prog:      map[string]progressRoute{},
		lost:      map[*mcp.ClientSession]error{},
		fence:     newFence(),
	}
	c.health = Health{State: Starting, Since: time.Now()}
	if spec.Call != nil {
		c.health.State = Idle
	}
	var err error
	switch spec.Kind {
	case Stdio:
		c.dial, err = c.stdioDialer()
	case HTTP, SSE:
		c.dial, err = c.httpDialer()
	case Wasm:
		c.wasm, err = compileWasm(ctx, spec, deps.WasmCache)
		c.dial = c.wasmDialer
	case InProcess:
		if spec.Connect == nil {
			err = fault.New(fault.InvalidArgument, "in-process upstream %s has no Connect", spec.Name)
		}
		c.dial = spec.Connect
	default:
		err = fault.New(fault.InvalidArgument, "upstream %s has unknown kind %q", spec.Name, spec.Kind)
	}
	if err == nil && spec.Call != nil && spec.Kind != InProcess {
		err = fault.New(fault.InvalidArgument, "upstream %s: only an in-process server can be called without a session", spec.Name)
	}
	if err != nil {
		return nil, err
	}
	c.client = mcp.NewClient(&mcp.Implementation{Name: "bastion", Version: "0"}, &mcp.ClientOptions{
		Logger: deps.Logger,
		// Input requests in results belong to the downstream client, which
		// answers them itself on its next round (see MultiRoundTrip): the
		// gateway must not answer them on its behalf.
		MultiRoundTrip:              &mcp.MultiRoundTripOptions{Disabled: true},
		CreateMessageHandler:        c.onCreateMessage,
		ElicitationHandler:          c.onElicit,
		ToolListChangedHandler:      func(ctx context.Context, _ *mcp.ToolListChangedRequest) { c.changed(ctx, ToolsChanged) },
		PromptListChangedHandler:    func(ctx context.Context, _ *mcp.PromptListChangedRequest) { c.changed(ctx, PromptsChanged) },
		ResourceListChangedHandler:  func(ctx context.Context, _ *mcp.ResourceListChangedRequest) { c.changed(ctx, ResourcesChanged) },
		LoggingMessageHandler:       c.onLog,
		ResourceUpdatedHandler:      c.onUpdated,
		ProgressNotificationHandler: c.onProgress,
	})
	c.client.AddReceivingMiddleware(c.serverRequests)
	// The supervisor outlives ctx and keeps none of its values: New may be
	// called while serving a client's request (a sibling, a principal's
	// session), and neither that request's SDK state nor its Downstream
	// may become the upstream sessions' own.
	sctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	if spec.Call != nil {
		c.wanted = make(chan struct{})
	}
	go c.supervise(sctx)
	return c, nil
}

// Name returns the upstream's name.
func (c *Conn) Name() string { return c.spec.Name }

// Kind returns the upstream's kind.
func (c *Conn) Kind() Kind { return c.spec.Kind }

// Timeout returns the per-call deadline.
func (c *Conn) Timeout() time.Duration { return c.spec.Timeout }

// Health returns a snapshot of the Conn's state.
func (c *Conn) Health() Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.health
}

// Close stops the supervisor and the live session (stopping a child
// gracefully, then by force; discarding a Wasm instance) and waits for both.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.done
		return nil
	}
	c.closed = true
	sess := c.sess
	if sess == nil {
		close(c.ready) // wake Session waiters; a live session's ready is already closed
	}
	c.sess = nil
	c.setStateLocked(Closed, nil)
	c.mu.Unlock()
	c.stop()
	if sess != nil {
		_ = sess.Close()
	}
	<-c.done
	c.mrtrMu.Lock()
	sib := c.mrtr
	c.mrtrMu.Unlock()
	if sib != nil {
		_ = sib.Close()
	}
	if c.wasm != nil {
		return c.wasm.close(context.Background())
	}
	return nil
}

func (c *Conn) setStateLocked(s State, err error) {
	if c.health.State != s {
		c.health.State = s
		c.health.Since = time.Now()
	}
	if err != nil {
		c.health.LastError = err.Error()
	}
}

// supervise keeps one session alive until ctx ends: connect (for a Conn
// with Spec.Call, once a session is first wanted), wait for the session to
// end, back off, reconnect.
func (c *Conn) supervise(ctx context.Context) {
	defer close(c.done)
	tried := false
	defer func() {
		if !tried { // closed before any attempt
			c.firstErr = ErrClosed
			close(c.attempted)
		}
	}()
	if c.wanted != nil {
		select {
		case <-c.wanted:
		case <-ctx.Done():
			return
		}
		c.mu.Lock()
		if c.health.State == Idle {
			c.setStateLocked(Starting, nil)
		}
		c.mu.Unlock()
	}
	fails := 0
	first := true
	for ctx.Err() == nil {
		start := time.Now()
		sess, err := c.connect(ctx)
		if !tried {
			tried = true
			c.firstErr = err
			close(c.attempted)
		}
		if err == nil {
			took := time.Since(start)
			if !c.publish(sess, took) {
				_ = sess.Close()
				return
			}
			c.log.LogAttrs(ctx, slog.LevelInfo, "upstream ready", slog.Duration("connect", took), slog.Bool("restart", !first))
			if first {
				c.changed(ctx, Connected)
			} else {
				c.changed(ctx, Reconnected)
			}
			first = false
			err = sess.Wait()
			if err == nil {
				err = errors.New("session ended")
			}
			c.unpublish(sess, err)
			if ctx.Err() == nil {
				c.changed(ctx, Down)
			}
			if time.Since(start) > c.backoffMax() {
				fails = 0 // it was healthy for a while: start the backoff over
			}
		}
		if ctx.Err() != nil {
			return
		}
		if sess == nil {
			c.failed(err)
		}
		fails++
		wait := c.deps.Backoff.Delay(fails)
		c.log.LogAttrs(ctx, slog.LevelWarn, "upstream down; restarting", slog.String("err", err.Error()), slog.Int("attempt", fails), slog.Duration("backoff", wait))
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

func (c *Conn) backoffMax() time.Duration {
	if c.deps.Backoff.Max > 0 {
		return c.deps.Backoff.Max
	}
	return DefaultBackoffMax
}

// connect starts one session and initializes it within ConnectTimeout.
func (c *Conn) connect(ctx context.Context) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(ctx, c.spec.ConnectTimeout)
	defer cancel()
	t, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	sess, err := c.client.Connect(ctx, fencedTransport{t, c.fence}, &mcp.ClientSessionOptions{ProtocolVersion: c.spec.ProtocolVersion})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("upstream %s did not complete its initialize handshake within %s: %w", c.spec.Name, c.spec.ConnectTimeout, err)
		}
		return nil, fmt.Errorf("upstream %s: initialize: %w", c.spec.Name, err)
	}
	return sess, nil
}

// publish makes sess the live session, unless the Conn closed meanwhile.
func (c *Conn) publish(sess *mcp.ClientSession, took time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.sess = sess
	c.health.Connect = took
	c.setStateLocked(Ready, nil)
	close(c.ready)
	return true
}

// unpublish retires sess, which ended with err.
func (c *Conn) unpublish(sess *mcp.ClientSession, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lost[sess] = err
	if c.closed {
		return
	}
	if c.sess == sess {
		c.sess = nil
		c.ready = make(chan struct{})
	}
	c.health.Restarts++
	c.setStateLocked(Restarting, err)
}

// failed records a session that could not be started.
func (c *Conn) failed(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.health.Failures++
		c.setStateLocked(c.health.State, err)
	}
}

// retire stops handing out sess and closes it; the supervisor, seeing it
// end, counts the restart and replaces it.
func (c *Conn) retire(sess *mcp.ClientSession) {
	c.mu.Lock()
	if c.sess == sess && !c.closed {
		c.sess = nil
		c.ready = make(chan struct{})
		c.setStateLocked(Restarting, nil)
	}
	c.mu.Unlock()
	_ = sess.Close()
}

// Session returns the live session, waiting within ctx for one while the
// upstream (re)starts.
func (c *Conn) Session(ctx context.Context) (*mcp.ClientSession, error) {
	if c.wanted != nil {
		c.wantedOnce.Do(func() { close(c.wanted) })
	}
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, c.closedErr()
		}
		if c.sess != nil {
			s := c.sess
			c.mu.Unlock()
			return s, nil
		}
		ready := c.ready
		c.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, c.unavailable(ctx.Err())
		}
	}
}

// unavailable is the error of a wait for a session that ended with err,
// naming the last start error when there is one.
func (c *Conn) unavailable(err error) error {
	cause := errors.Join(ErrUnavailable, err)
	if last := c.Health().LastError; last != "" {
		cause = errors.Join(cause, errors.New(last))
	}
	return fault.Wrap(cause, fault.UpstreamUnavailable, "upstream %s is not available", c.spec.Name).WithNext(fault.Wait)
}

// WaitFirst waits within ctx for the outcome of the Conn's first start
// attempt: nil once a session was made, else why the attempt failed (the
// supervisor goes on retrying with backoff) or ctx's error. It lets a
// gateway stop waiting at start-up for an upstream that is down now rather
// than merely slow.
func (c *Conn) WaitFirst(ctx context.Context) error {
	if c.wanted != nil {
		c.wantedOnce.Do(func() { close(c.wanted) })
	}
	select {
	case <-c.attempted:
		if c.firstErr != nil {
			return fault.Wrap(errors.Join(ErrUnavailable, c.firstErr), fault.UpstreamUnavailable, "upstream %s is not available: %v", c.spec.Name, c.firstErr).WithNext(fault.Wait)
		}
		return nil
	case <-ctx.Done():
		return c.unavailable(ctx.Err())
	}
}

// Discard ends the live session so the supervisor replaces it (for a Wasm
// upstream, a fresh instance). The gateway uses it after a protocol failure
// it cannot recover from.
func (c *Conn) Discard() {
	c.mu.Lock()
	s := c.sess
	c.mu.Unlock()
	if s != nil {
		c.retire(s)
	}
}

// MultiRoundTrip returns a Conn to the same upstream whose session speaks
// MultiRoundTripVersion or later: its server returns sampling, elicitation
// and roots questions as input requests in results (which come back to the
// caller unanswered, for its own client to answer) and reads the client's
// capabilities from each request's _meta. A client on that revision needs
// such a session to see the upstream as it is: the question keys, the
// request state and its own capabilities. c itself serves older clients,
// to which a server may still send questions during a call.
//
// The sibling is a second session to an HTTP or in-process upstream,
// started on first use and closed with c. A stdio or Wasm upstream is one
// process (or instance) with its own state and is never started twice; it,
// and the legacy SSE transport, get ErrNoMultiRoundTrip, as does an
// upstream that negotiated an older revision (that answer is kept). An
// upstream that cannot be reached now is an error that is not kept.
func (c *Conn) MultiRoundTrip(ctx context.Context) (*Conn, error) {
	if c.spec.ProtocolVersion >= MultiRoundTripVersion {
		return c, nil
	}
	switch c.spec.Kind {
	case Stdio, Wasm:
		// A session is a whole process or instance with its own state: a
		// second one would diverge from the first behind the operator's
		// back.
		return nil, ErrNoMultiRoundTrip
	case SSE:
		return nil, ErrNoMultiRoundTrip // the legacy transport predates it
	}
	c.mrtrMu.Lock()
	defer c.mrtrMu.Unlock()
	switch {
	case c.mrtr != nil:
		return c.mrtr, nil
	case c.noMRTR:
		return nil, ErrNoMultiRoundTrip
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, c.closedErr()
	}
	spec := c.spec
	spec.ProtocolVersion = MultiRoundTripVersion
	sib, err := New(ctx, spec, c.deps)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, spec.ConnectTimeout)
	sess, err := sib.Session(sctx)
	cancel()
	if err != nil {
		sib.Close()
		return nil, err
	}
	if v := sess.InitializeResult().ProtocolVersion; v < MultiRoundTripVersion {
		sib.Close()
		c.noMRTR = true
		c.log.LogAttrs(ctx, slog.LevelInfo, "upstream speaks no multi-round-trip revision; its questions are bridged", slog.String("negotiated", v))
		return nil, ErrNoMultiRoundTrip
	}
	c.mrtr = sib
	return sib, nil
}

// hopContext carries a request from the gateway's client side to an
// upstream: the caller's deadline, cancellation and Downstream, and none of
// its other values. The SDK keeps per-request state in context values (the
// protocol version of the request being served, which its HTTP client
// would then send upstream); state of the client's hop must not leak into
// the upstream's.
type hopContext struct{ context.Context }

func (h hopContext) Value(key any) any {
	if key == (downstreamKey{}) {
		return h.Context.Value(key)
	}
	return nil
}

// AfterFunc lets contexts derived from h follow its cancellation without a
// goroutine each (see context.AfterFunc).
func (h hopContext) AfterFunc(f func()) func() bool { return context.AfterFunc(h.Context, f) }

// do runs one request on the live session under the per-call deadline
// (the caller's context may be shorter),
// recording it as in flight for the ctx's Downstream.
func (c *Conn) do(ctx context.Context, what string, fn func(ctx context.Context, s *mcp.ClientSession) error) error {
	ctx = hopContext{ctx}
	// Waiting for a (re)starting session is bounded like a start, not by
	// the call's own budget: a replaced Wasm instance or a restarted child
	// must not make the next call time out before it is sent.
	sctx, scancel := context.WithTimeout(ctx, c.spec.ConnectTimeout)
	sess, err := c.Session(sctx)
	scancel()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.spec.Timeout)
	defer cancel()
	d, _ := DownstreamFrom(ctx)
	untrack := c.track(sess, d)
	err = fn(ctx, sess)
	if err == nil {
		// Still in flight for routing: the log messages and progress
		// sent before the answer reach the caller's client before it.
		c.fence.wait(ctx)
	}
	untrack()
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return err // the upstream's own answer
	}
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		if c.spec.Kind == Wasm {
			// The guest may be spinning: its instance is never reused.
			c.retire(sess)
			c.log.LogAttrs(ctx, slog.LevelWarn, "wasm instance overran a call deadline; replaced", slog.String("op", what))
		}
		return c.timedOut(what, err)
	case ctx.Err() != nil:
		return ctx.Err() // the caller cancelled
	}
	c.log.LogAttrs(ctx, slog.LevelWarn, "upstream session failed during a call", slog.String("op", what), slog.String("err", err.Error()))
	// The session is gone: retire it now, so calls that follow wait for
	// its replacement instead of racing the supervisor to the dead one.
	c.retire(sess)
	cause := errors.Join(ErrLost, err)
	if c.spec.Kind == Wasm {
		cause = errors.Join(ErrTrapped, err)
	}
	return fault.Wrap(cause, fault.UpstreamUnavailable, "upstream %s failed during %s", c.spec.Name, what).WithNext(fault.Wait)
}

// track records a call in flight on sess for d and returns its release.
func (c *Conn) track(sess *mcp.ClientSession, d Downstream) func() {
	id := c.nextTok.Add(1)
	c.mu.Lock()
	m := c.calls[sess]
	if m == nil {
		m = map[uint64]Downstream{}
		c.calls[sess] = m
	}
	m[id] = d
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(m, id)
		if len(m) == 0 {
			delete(c.calls, sess)
			delete(c.lost, sess)
		}
		c.mu.Unlock()
	}
}

// attribute finds the downstream a server-to-client request belongs to:
// the one in ctx (multi-round-trip requests run in the call's context), or
// the only downstream with calls in flight on sess.
func (c *Conn) attribute(ctx context.Context, sess *mcp.ClientSession) (Downstream, error) {
	if d, ok := DownstreamFrom(ctx); ok {
		return d, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var found Downstream
	for _, d := range c.calls[sess] {
		switch {
		case d == nil:
			continue
		case found == nil:
			found = d
		case found != d:
			return nil, fmt.Errorf("%w: calls from several clients are in flight on %s", ErrAmbiguous, c.spec.Name)
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%w: no client call is in flight on %s", ErrAmbiguous, c.spec.Name)
	}
	return found, nil
}

func (c *Conn) onCreateMessage(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	d, err := c.attribute(ctx, req.Session)
	if err != nil {
		return nil, err
	}
	return d.CreateMessage(ctx, req.Params)
}

func (c *Conn) onElicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	d, err := c.attribute(ctx, req.Session)
	if err != nil {
		return nil, err
	}
	return d.Elicit(ctx, req.Params)
}

// serverRequests answers the upstream's server-to-client requests that
// the SDK would otherwise answer on the gateway's own behalf or judge first:
// roots/list gets the attributed downstream's roots (not the gateway
// client's empty list), and elicitation/create goes to the downstream
// unjudged, since what a requested schema may say is for the client that
// renders it to decide, not for a hop in between.
func (c *Conn) serverRequests(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "roots/list":
			sess, _ := req.GetSession().(*mcp.ClientSession)
			d, err := c.attribute(ctx, sess)
			if err != nil {
				return nil, err
			}
			p, _ := req.GetParams().(*mcp.ListRootsParams)
			return d.ListRoots(ctx, p)
		case "elicitation/create":
			if r, ok := req.(*mcp.ElicitRequest); ok && r.Params != nil {
				return c.onElicit(ctx, r)
			}
		}
		return next(ctx, method, req)
	}
}

func (c *Conn) changed(ctx context.Context, ch Change) {
	if c.deps.Events != nil {
		c.deps.Events.Changed(ctx, c.spec.Name, ch)
	}
}

func (c *Conn) onLog(ctx context.Context, req *mcp.LoggingMessageRequest) {
	defer c.fence.done()
	if c.deps.Events != nil {
		c.deps.Events.Log(ctx, c.spec.Name, req.Params)
	}
}

func (c *Conn) onUpdated(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if c.deps.Events != nil && req.Params != nil {
		c.deps.Events.Updated(ctx, c.spec.Name, req.Params)
	}
}

func (c *Conn) onProgress(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
	defer c.fence.done()
	tok, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	c.mu.Lock()
	r, ok := c.prog[tok]
	c.mu.Unlock()
	if !ok {
		return // not ours, or the call already returned
	}
	p := *req.Params
	p.ProgressToken = r.token
	if err := r.d.NotifyProgress(ctx, &p); err != nil {
		c.log.LogAttrs(ctx, slog.LevelDebug, "progress not relayed", slog.String("err", err.Error()))
	}
}

// Tools lists all of the upstream's tools, every page.
func (c *Conn) Tools(ctx context.Context) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	err := c.do(ctx, "tools/list", func(ctx context.Context, s *mcp.ClientSession) error {
		out = out[:0]
		for t, err := range s.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return nil
	})
	return out, err
}

// CallTool calls a tool. A progress token in p is replaced by one unique to
// this Conn, and the upstream's progress is relayed to the ctx's Downstream
// under the caller's token. p is not modified.
func (c *Conn) CallTool(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	if p == nil {
		return nil, fault.New(fault.InvalidArgument, "a tool call needs params")
	}
	if c.spec.Call != nil {
		return c.callDirect(ctx, p)
	}
	if tok := p.GetProgressToken(); tok != nil {
		q := *p
		q.Meta = maps.Clone(p.Meta)
		if d, ok := DownstreamFrom(ctx); ok {
			ours := "bastion-" + strconv.FormatUint(c.nextTok.Add(1), 10)
			q.SetProgressToken(ours)
			c.mu.Lock()
			c.prog[ours] = progressRoute{d: d, token: tok}
			c.mu.Unlock()
			// Notifications are handled concurrently with the response, so
			// the route outlives the call briefly: progress the upstream sent
			// before its answer is still relayed.
			defer time.AfterFunc(progressGrace, func() {
				c.mu.Lock()
				delete(c.prog, ours)
				c.mu.Unlock()
			})
		} else {
			delete(q.Meta, "progressToken") // nowhere to relay it
		}
		p = &q
	}
	var res *mcp.CallToolResult
	err := c.do(ctx, "tools/call "+p.Name, func(ctx context.Context, s *mcp.ClientSession) (err error) {
		res, err = s.CallTool(ctx, p)
		return err
	})
	return res, err
}

// callDirect answers a tools/call with Spec.Call: no session, no encoding,
// no goroutine of the SDK's on either side. What a session would give the
// call still holds: the per-call deadline (the call returns at it even if
// the handler does not), no context value of the caller's hop, arguments
// the handler cannot change under the caller, and no progress token, since
// there is no session to send progress on.
func (c *Conn) callDirect(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, c.closedErr()
	}
	args, err := rawArguments(p.Arguments)
	if err != nil {
		return nil, fault.Wrap(err, fault.InvalidArgument, "the arguments of %s could not be encoded", p.Name)
	}
	meta := maps.Clone(p.Meta)
	delete(meta, "progressToken")
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{
		Meta: meta, Name: p.Name, Arguments: args, InputResponses: p.InputResponses, RequestState: p.RequestState,
	}}
	ctx, cancel := context.WithTimeout(hopContext{ctx}, c.spec.Timeout)
	defer cancel()
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := c.spec.Call(ctx, req)
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		return a.res, a.err
	case <-ctx.Done():
		if ctx.Err() == context.DeadlineExceeded {
			return nil, c.timedOut("tools/call "+p.Name, ctx.Err())
		}
		return nil, ctx.Err()
	}
}

func (c *Conn) closedErr() error {
	return fault.Wrap(ErrClosed, fault.UpstreamUnavailable, "upstream %s is closed", c.spec.Name)
}

// timedOut is the error of a request (what) that outlived the per-call
// deadline.
func (c *Conn) timedOut(what string, err error) error {
	return fault.Wrap(errors.Join(ErrTimeout, err), fault.UpstreamUnavailable,
		"upstream %s did not answer %s within %s", c.spec.Name, what, c.spec.Timeout).WithNext(fault.Wait)
}

// rawArguments is a call's arguments as JSON the handler owns.
func rawArguments(v any) (json.RawMessage, error) {
	switch a := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return bytes.Clone(a), nil
	}
	return json.Marshal(v)
}

// Resources lists all of the upstream's resources.
func (c *Conn) Resources(ctx context.Context) ([]*mcp.Resource, error) {
	var out []*mcp.Resource
	err := c.do(ctx, "resources/list", func(ctx context.Context, s *mcp.ClientSession) error {
		out = out[:0]
		if s.InitializeResult().Capabilities.Resources == nil {
			return nil
		}
		for r, err := range s.Resources(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// ResourceTemplates lists all of the upstream's resource templates.
func (c *Conn) ResourceTemplates(ctx context.Context) ([]*mcp.ResourceTemplate, error) {
	var out []*mcp.ResourceTemplate
	err := c.do(ctx, "resources/templates/list", func(ctx context.Context, s *mcp.ClientSession) error {
		out = out[:0]
		if s.InitializeResult().Capabilities.Resources == nil {
			return nil
		}
		for r, err := range s.ResourceTemplates(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// ReadResource reads a resource.
func (c *Conn) ReadResource(ctx context.Context, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	var res *mcp.ReadResourceResult
	err := c.do(ctx, "resources/read", func(ctx context.Context, s *mcp.ClientSession) (err error) {
		res, err = s.ReadResource(ctx, p)
		return err
	})
	return res, err
}

// Prompts lists all of the upstream's prompts.
func (c *Conn) Prompts(ctx context.Context) ([]*mcp.Prompt, error) {
	var out []*mcp.Prompt
	err := c.do(ctx, "prompts/list", func(ctx context.Context, s *mcp.ClientSession) error {
		out = out[:0]
		if s.InitializeResult().Capabilities.Prompts == nil {
			return nil
		}
		for p, err := range s.Prompts(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// GetPrompt gets a prompt.
func (c *Conn) GetPrompt(ctx context.Context, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	var res *mcp.GetPromptResult
	err := c.do(ctx, "prompts/get", func(ctx context.Context, s *mcp.ClientSession) (err error) {
		res, err = s.GetPrompt(ctx, p)
		return err
	})
	return res, err
}

// Subscribe asks the upstream for notifications/resources/updated about
// uri (delivered to Events.Updated).
func (c *Conn) Subscribe(ctx context.Context, uri string) error {
	return c.do(ctx, "resources/subscribe", func(ctx context.Context, s *mcp.ClientSession) error {
		return s.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
}

// Unsubscribe ends a subscription to uri.
func (c *Conn) Unsubscribe(ctx context.Context, uri string) error {
	return c.do(ctx, "resources/unsubscribe", func(ctx context.Context, s *mcp.ClientSession) error {
		return s.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
}

// Complete asks for argument completions.
func (c *Conn) Complete(ctx context.Context, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	var res *mcp.CompleteResult
	err := c.do(ctx, "completion/complete", func(ctx context.Context, s *mcp.ClientSession) (err error) {
		res, err = s.Complete(ctx, p)
		return err
	})
	return res, err
}

// resolve resolves a map of configured values with the Conn's getenv; an
// error names the key, never a value.
func (c *Conn) resolve(what string, m map[string]Value) (map[string]string, error) {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if v == nil {
			continue
		}
		s, err := v.Resolve(c.deps.Getenv)
		if err != nil {
			return nil, fmt.Errorf("upstream %s: %s %s: %w", c.spec.Name, what, k, err)
		}
		out[k] = s
	}
	return out, nil
}
