package edge

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/principal"
)

// TestSweepForgetsClosedSessionOfSharedServer checks that the sweep forgets
// a closed session's id even while the server that served it still holds
// another session of the same principal (one server serves all of a
// principal's clients), and keeps the live one.
func TestSweepForgetsClosedSessionOfSharedServer(t *testing.T) {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "sweep-test", Version: "1"}, nil)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	connect := func() *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	live, gone := connect(), connect()
	defer live.Close()

	var s sessions
	s.init()
	p := principal.Local()
	s.bind(live.ID(), p, srv)
	s.bind(gone.ID(), p, srv)
	if err := gone.Close(); err != nil { // DELETE: the server ends the session before it answers
		t.Fatal(err)
	}
	s.mu.Lock()
	s.sweepLocked(time.Now().Add(2 * sweepEvery))
	s.mu.Unlock()
	if _, reason := s.lookup(gone.ID(), p); reason != reasonUnknownSession {
		t.Errorf("closed session: lookup reason %q, want it forgotten", reason)
	}
	if _, reason := s.lookup(live.ID(), p); reason != "" {
		t.Errorf("live session: lookup reason %q, want it kept", reason)
	}
}
