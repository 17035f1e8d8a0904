package loop_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/audit"
	"github.com/bastion-mcp/bastion/gateway/loop"
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
		forPrincipal: map[string]loop.PrincipalServer{
			"w": {Connect: func(ctx context.Context, p principal.Principal) (mcp.Transport, error) {
				opened.Add(1)
				return connectWho(ctx, p.String())
			}},
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

// TestForPrincipalCall: a server that offers its tools as a handler
// (PrincipalServer.Call) is called without a session, on both revisions,
// still made for the caller and still behind every gate: a denied call
// never reaches it, and every outcome is recorded. The handler gets the
// arguments as the client sent them, no progress token (there is no
// session to report progress on), and a deadline.
func TestForPrincipalCall(t *testing.T) {
	t.Parallel()
	type seen struct {
		as       string
		args     string
		progress bool
		deadline bool
	}
	var mu sync.Mutex
	var calls []seen
	handlerFor := func(p principal.Principal) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_, hasDeadline := ctx.Deadline()
			mu.Lock()
			calls = append(calls, seen{as: p.String(), args: string(req.Params.Arguments), progress: req.Params.GetProgressToken() != nil, deadline: hasDeadline})
			mu.Unlock()
			if req.Params.Name == "slow" {
				<-ctx.Done() // a handler that outlives its deadline is not waited for
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "direct " + p.String()}}}, nil
		}
	}
	b := setup(t, `
[server.w]
kind = "review"
timeout = "1s"

[[policy.rule]]
name = "who"
action = "allow"
match = ["w__who", "w__slow"]
`, setupOpts{
		inProcess: map[string]func(context.Context) (mcp.Transport, error){
			"w": func(ctx context.Context) (mcp.Transport, error) { return inProcess(slowWhoServer)(ctx) },
		},
		forPrincipal: map[string]loop.PrincipalServer{
			"w": {
				Connect: func(ctx context.Context, p principal.Principal) (mcp.Transport, error) {
					return inProcess(slowWhoServer)(ctx)
				},
				Call: handlerFor,
			},
		},
	})
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		a := b.connect(t, alice, clientOpts{version: version})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		p := &mcp.CallToolParams{Name: "w__who", Arguments: map[string]any{"n": 1}}
		p.SetProgressToken("tok")
		res, err := a.CallTool(ctx, p)
		cancel()
		if err != nil || res.IsError || text(res) != "direct acme/alice" {
			t.Fatalf("%s: w__who = %v, %v; want the handler made for alice", version, res, err)
		}
		if got, denied := call(t, a, "w__never", nil); !denied {
			t.Fatalf("%s: an unlisted tool was not denied: %q", version, got)
		}
		if got, isErr := call(t, a, "w__slow", nil); !isErr {
			t.Fatalf("%s: a handler past its deadline answered %q", version, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 4 {
		t.Fatalf("the handler got %d calls, want 4 (who and slow on each revision; never is denied before it): %+v", len(calls), calls)
	}
	for _, c := range calls {
		var args map[string]any
		_ = json.Unmarshal([]byte(c.args), &args)
		if c.as != "acme/alice" || c.progress || !c.deadline || (c.args != "" && args == nil) {
			t.Errorf("handler saw %+v; want alice's call, no progress token, a deadline", c)
		}
	}
	var decisions []audit.Decision
	for _, r := range b.records(t) {
		if r.Method == "tools/call" {
			decisions = append(decisions, r.Decision)
		}
	}
	want := []audit.Decision{audit.Allowed, audit.Denied, audit.Timeout, audit.Allowed, audit.Denied, audit.Timeout}
	if len(decisions) != len(want) {
		t.Fatalf("ledger decisions %v, want %v", decisions, want)
	}
	for i := range want {
		if decisions[i] != want[i] {
			t.Fatalf("ledger decisions %v, want %v", decisions, want)
		}
	}
	b.verify(t)
}

// slowWhoServer lists who and slow, as the handler in TestForPrincipalCall
// answers them.
func slowWhoServer() *mcp.Server {
	s := whoServer("session")
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Never answers in time."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	return s
}
