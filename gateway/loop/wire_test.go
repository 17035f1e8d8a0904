package loop_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/gateway/loop"
)

// rawResults is a client transport that keeps the raw result of every
// response it reads, as the bytes came over the wire.
type rawResults struct {
	mcp.Transport
	mu  sync.Mutex
	got []string
}

func (r *rawResults) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := r.Transport.Connect(ctx)
	return &rawConn{Connection: c, r: r}, err
}

func (r *rawResults) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[len(r.got)-1]
}

type rawConn struct {
	mcp.Connection
	r *rawResults
}

func (c *rawConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if resp, ok := m.(*jsonrpc.Response); ok && resp.Result != nil {
		c.r.mu.Lock()
		c.r.got = append(c.r.got, string(resp.Result))
		c.r.mu.Unlock()
	}
	return m, err
}

// connectRaw connects a real SDK client offering version, through a
// transport that keeps the raw results.
func (b *bundle) connectRaw(ctx context.Context, t *testing.T, version string) (*mcp.ClientSession, *rawResults) {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := b.loop.NewServer(ctx, alice).Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	raw := &rawResults{Transport: ct}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "wire", Version: "1"}, nil).Connect(ctx, raw, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, raw
}

// TestDenialsCarryResultType: on 2026-07-28 every tools/call result the
// gateway writes itself (a routing denial, a policy denial of a hidden
// tool, the ledger's denial) carries resultType "complete" as allowed
// results do; on 2025-11-25 none does.
func TestDenialsCarryResultType(t *testing.T) {
	t.Parallel()
	b := setup(t, `
[server.t]
kind = "stdio"
command = "%BIN%"

[[policy.rule]]
name = "no-crash"
action = "deny"
match = ["t__crash"]

[[policy.rule]]
name = "all"
action = "allow"
match = ["t__*"]
`, setupOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		cs, raw := b.connectRaw(ctx, t, version)
		for _, tc := range []struct {
			tool string
			args map[string]any
			text string
		}{
			{"t__echo", map[string]any{"text": "hi"}, "hi"},
			{"nope__x", nil, "bastion denied: "},
			{"t__crash", map[string]any{"code": 1}, "bastion denied: "},
		} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil || !strings.HasPrefix(text(res), tc.text) {
				t.Fatalf("%s %s: %v %q", version, tc.tool, err, text(res))
			}
			has := strings.Contains(raw.last(), `"resultType":"complete"`)
			if want := version == "2026-07-28"; has != want {
				t.Errorf("%s %s: resultType present %v, want %v: %s", version, tc.tool, has, want, raw.last())
			}
		}
	}
	// The ledger's own denial too.
	b.ledger.Close()
	cs, raw := b.connectRaw(ctx, t, "2026-07-28")
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope__x"}); err != nil || text(res) != "bastion denied: "+loop.ReasonLedger {
		t.Fatalf("ledger denial: %v %q", err, text(res))
	}
	if !strings.Contains(raw.last(), `"resultType":"complete"`) {
		t.Errorf("the ledger's denial lacks resultType: %s", raw.last())
	}
}
