//lint:file-ignore SA1019 sampling, roots and logging are part of MCP 2025-11-25, the revision bastion targets and must relay; deprecated only from 2026-07-28.

package upstream

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tetratelabs/wazero"

	"github.com/bastion-mcp/bastion/egress"
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
