package edge

import (
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/principal"
)

const sessionHeader = "Mcp-Session-Id"

// session is one stateful MCP session the edge has seen issued: its owner and
// the server instance that serves it (which may serve the owner's other
// sessions too).
type session struct {
	owner  principal.Principal
	server *mcp.Server
	bound  time.Time
}

// sessions binds session ids to their owners. The SDK keeps the sessions
// themselves; this table only decides who may address them.
type sessions struct {
	mu        sync.Mutex
	byID      map[string]*session
	lastSweep time.Time
}

func (s *sessions) init() { s.byID = make(map[string]*session) }

// sweepEvery bounds how often bind looks for sessions the SDK has closed
// (idle timeout, failed initialize) to forget their ids.
const sweepEvery = 10 * time.Second

func (s *sessions) bind(id string, owner principal.Principal, srv *mcp.Server) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.lastSweep) > sweepEvery {
		s.lastSweep = now
		s.sweepLocked(now)
	}
	s.byID[id] = &session{owner: owner, server: srv, bound: now}
}

// sweepLocked forgets the ids of sessions their server no longer has. A
// server may hold many sessions, so each is asked once for all its ids.
func (s *sessions) sweepLocked(now time.Time) {
	live := make(map[string]bool)
	asked := make(map[*mcp.Server]bool)
	for _, v := range s.byID {
		if asked[v.server] {
			continue
		}
		asked[v.server] = true
		for ss := range v.server.Sessions() {
			live[ss.ID()] = true
		}
	}
	for k, v := range s.byID {
		if now.Sub(v.bound) > sweepEvery && !live[k] {
			delete(s.byID, k)
		}
	}
}

// lookup returns the session id names if p owns it. Another principal's
// session and an unknown id are refused alike (the reason differs only in the
// metric).
func (s *sessions) lookup(id string, p principal.Principal) (*session, rejection) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.byID[id]
	if !ok {
		return nil, reasonUnknownSession
	}
	if !v.owner.Same(p) {
		return nil, reasonSessionOwner
	}
	return v, ""
}

func (s *sessions) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, id)
}

func (s *sessions) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

// closeAll closes every bound session, ending its streams, and forgets it.
func (s *sessions) closeAll() {
	s.mu.Lock()
	all := s.byID
	s.byID = make(map[string]*session)
	s.mu.Unlock()
	// A server may hold many of these sessions: close each server's once.
	closed := make(map[*mcp.Server]bool)
	for _, v := range all {
		if closed[v.server] {
			continue
		}
		closed[v.server] = true
		for ss := range v.server.Sessions() {
			_ = ss.Close()
		}
	}
}

// sessionCapture calls onHeader with the response headers just before they
// are sent, so a new session id is bound before the client can use it.
type sessionCapture struct {
	http.ResponseWriter
	onHeader func(http.Header)
	once     sync.Once
}

func (c *sessionCapture) header() { c.once.Do(func() { c.onHeader(c.ResponseWriter.Header()) }) }

func (c *sessionCapture) WriteHeader(code int) {
	c.header()
	c.ResponseWriter.WriteHeader(code)
}

func (c *sessionCapture) Write(b []byte) (int, error) {
	c.header()
	return c.ResponseWriter.Write(b)
}

func (c *sessionCapture) Flush() {
	c.header()
	_ = http.NewResponseController(c.ResponseWriter).Flush()
}

func (c *sessionCapture) Unwrap() http.ResponseWriter { return c.ResponseWriter }
