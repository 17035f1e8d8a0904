package loop

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/upstream"
)

// An in-process server that acts for the principal of its session (the
// review server scopes every job to it) cannot share one upstream session
// among the gateway's clients: it would act for whoever opened it. For
// such a server (Deps.ForPrincipal) each principal has a Conn of its own,
// opened on first use and closed when idle: its calls go through the
// server's tool handler made for it when the server offers one
// (PrincipalServer.Call), its other requests over a session made for it
// (with a handler, opened only when such a request comes).
// Listing, which no principal's rights change, stays on the shared session.

// principalIdle is how long a principal's session stays open unused.
const principalIdle = 10 * time.Minute

// maxPrincipalConns bounds the open per-principal sessions of one server;
// past it the longest idle one is closed.
const maxPrincipalConns = 1024

type principalConns struct {
	name    string
	timeout time.Duration
	server  PrincipalServer
	deps    upstream.Deps

	mu     sync.Mutex
	conns  map[principalKey]*principalConn
	swept  time.Time
	closed bool
}

type principalKey struct{ tenant, id string }

type principalConn struct {
	conn *upstream.Conn
	used time.Time // guarded by principalConns.mu
}

// connFor returns the session s's calls for p go over.
func (l *Loop) connFor(ctx context.Context, s *serverState, p principal.Principal) (*upstream.Conn, error) {
	if s.perP == nil {
		return s.conn, nil
	}
	return s.perP.get(ctx, p)
}

func (pc *principalConns) get(ctx context.Context, p principal.Principal) (*upstream.Conn, error) {
	k := principalKey{p.Tenant(), p.ID()}
	now := time.Now()
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.closed {
		return nil, upstream.ErrClosed
	}
	if c, ok := pc.conns[k]; ok {
		c.used = now
		return c.conn, nil
	}
	if now.Sub(pc.swept) > time.Minute || len(pc.conns) >= maxPrincipalConns {
		pc.sweepLocked(now)
	}
	// New only starts the Conn's supervisor (a session of its own comes
	// at once, or with a tool handler on first need); holding the lock
	// keeps two first calls of one principal from making two Conns.
	spec := upstream.Spec{
		Name: pc.name, Kind: upstream.InProcess, Timeout: pc.timeout,
		Connect: func(ctx context.Context) (mcp.Transport, error) { return pc.server.Connect(ctx, p) },
	}
	if pc.server.Call != nil {
		spec.Call = pc.server.Call(p)
	}
	conn, err := upstream.New(ctx, spec, pc.deps)
	if err != nil {
		return nil, err
	}
	pc.conns[k] = &principalConn{conn: conn, used: now}
	return conn, nil
}

// sweepLocked closes sessions idle past principalIdle and, at the bound,
// the longest idle one.
func (pc *principalConns) sweepLocked(now time.Time) {
	pc.swept = now
	var oldest principalKey
	var oldestAt time.Time
	for k, c := range pc.conns {
		if now.Sub(c.used) > principalIdle {
			delete(pc.conns, k)
			go c.conn.Close()
			continue
		}
		if oldestAt.IsZero() || c.used.Before(oldestAt) {
			oldest, oldestAt = k, c.used
		}
	}
	if len(pc.conns) >= maxPrincipalConns {
		c := pc.conns[oldest]
		delete(pc.conns, oldest)
		go c.conn.Close()
	}
}

func (pc *principalConns) close() {
	pc.mu.Lock()
	pc.closed = true
	conns := pc.conns
	pc.conns = nil
	pc.mu.Unlock()
	for _, c := range conns {
		c.conn.Close()
	}
}

// logsOnly passes an upstream's log messages on and drops its change
// announcements: a principal's session lists what the shared one does.
type logsOnly struct{ upstream.Events }

func (logsOnly) Changed(context.Context, string, upstream.Change) {}
