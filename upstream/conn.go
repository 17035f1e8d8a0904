//lint:file-ignore SA1019 sampling, roots and logging are part of MCP 2025-11-25, the revision bastion targets and must relay; deprecated only from 2026-07-28.

package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/fault"
)

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

// live returns the live session, or nil while there is none (or the Conn
// is closed): Session's fast path, without a deadline of its own to set up.
func (c *Conn) live() *mcp.ClientSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	return c.sess
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
