package loop_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/principal"
)

// whoServer is an in-process server that knows which principal its session
// was made for, as the review server does.
func whoServer(name string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "who", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "who", Description: "Says whom this session acts for."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
		})
	return s
}

func connectWho(ctx context.Context, name string) (mcp.Transport, error) {
	return inProcess(func() *mcp.Server { return whoServer(name) })(ctx)
}

// TestForPrincipal: calls to a server named in Deps.ForPrincipal go over a
// session made for the caller (one per principal, reused), never over the
// shared listing session.
func TestForPrincipal(t *testing.T) {
	t.Parallel()
	var opened atomic.Int32
	b := setup(t, `
[server.w]
kind = "review"

[[policy.rule]]
name = "all"
action = "allow"
match = ["w__*"]
`, setupOpts{
		inProcess: map[string]func(context.Context) (mcp.Transport, error){
			"w": func(ctx context.Context) (mcp.Transport, error) { return connectWho(ctx, "shared") },
		},
		forPrincipal: map[string]func(context.Context, principal.Principal) (mcp.Transport, error){
			"w": func(ctx context.Context, p principal.Principal) (mcp.Transport, error) {
				opened.Add(1)
				return connectWho(ctx, p.String())
			},
		},
	})
	a := b.connect(t, alice, clientOpts{})
	bo := b.connect(t, bob, clientOpts{})
	for range 3 {
		if got, _ := call(t, a, "w__who", nil); got != "acme/alice" {
			t.Fatalf("alice's call went to %q", got)
		}
		if got, _ := call(t, bo, "w__who", nil); got != "acme/bob" {
			t.Fatalf("bob's call went to %q", got)
		}
	}
	// Per principal: its default session and, since these clients speak
	// 2026-07-28, its multi-round-trip one; reused across calls.
	if n := opened.Load(); n != 4 {
		t.Errorf("%d per-principal sessions opened, want 4 (two each, reused)", n)
	}
}
