package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/upstream"
)

// TestCallDirect: an in-process server with Spec.Call answers tools/call
// through it, with arguments as JSON of the handler's own and no context
// value of the caller's; a caller's map is encoded, a raw message copied.
// Everything else still uses the session, which starts on first need.
func TestCallDirect(t *testing.T) {
	t.Parallel()
	type key struct{}
	var dials atomic.Int32
	var got *mcp.CallToolParamsRaw
	var gotArgs string
	var leaked any
	c, err := upstream.New(context.Background(), upstream.Spec{
		Name: "d", Kind: upstream.InProcess,
		Connect: func(ctx context.Context) (mcp.Transport, error) {
			dials.Add(1)
			return upstream.ServeInProcess(ctx, pipeServer())
		},
		Call: func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			got, gotArgs, leaked = req.Params, string(req.Params.Arguments), ctx.Value(key{})
			req.Params.Arguments[0] = 'X' // the caller's bytes must not change
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "direct"}}}, nil
		},
	}, upstream.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), key{}, "caller's"), 10*time.Second)
	defer cancel()

	raw := json.RawMessage(`{"text":"hi"}`)
	res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: raw, Meta: mcp.Meta{"progressToken": "p", "k": "v"}})
	if err != nil || resultText(res) != "direct" {
		t.Fatalf("CallTool = %v, %v; want the handler's answer", res, err)
	}
	if string(raw) != `{"text":"hi"}` {
		t.Errorf("the handler changed the caller's arguments: %s", raw)
	}
	if got.Name != "echo" || got.Meta["k"] != "v" || got.GetProgressToken() != nil || leaked != nil {
		t.Errorf("handler saw %+v (context value %v); want the name and _meta without a progress token or the caller's values", got, leaked)
	}
	if _, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "map"}}); err != nil || gotArgs != `{"text":"map"}` {
		t.Errorf("map arguments reached the handler as %s (%v)", gotArgs, err)
	}
	// Calls alone leave the Conn idle: its supervisor waits for a need.
	if h, n := c.Health(), dials.Load(); h.State != upstream.Idle || n != 0 {
		t.Errorf("after calls alone: state %s, %d sessions; want idle with none until something needs one", h.State, n)
	}
	// Listing still goes over the session.
	tools, err := c.Tools(ctx)
	if err != nil || len(tools) != 1 || tools[0].Name != "echo" {
		t.Errorf("Tools = %v, %v; want the session's echo", tools, err)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("listing opened %d sessions, want 1", n)
	}
	c.Close()
	if _, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "echo"}); !errors.Is(err, upstream.ErrClosed) {
		t.Errorf("a call after Close: %v, want ErrClosed", err)
	}
}

// TestCallDirectDeadline: a handler that ignores its deadline does not hold
// the caller past it; the call fails as a timeout.
func TestCallDirectDeadline(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	c, err := upstream.New(context.Background(), upstream.Spec{
		Name: "d", Kind: upstream.InProcess, Timeout: 100 * time.Millisecond,
		Connect: func(ctx context.Context) (mcp.Transport, error) { return upstream.ServeInProcess(ctx, pipeServer()) },
		Call: func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-release
			return nil, nil
		},
	}, upstream.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo"})
	if f, ok := fault.As(err); !errors.Is(err, upstream.ErrTimeout) || !ok || f.Code != fault.UpstreamUnavailable {
		t.Fatalf("CallTool = %v; want an UPSTREAM_UNAVAILABLE timeout", err)
	}
}

// TestCallOnlyInProcess: only an in-process server can be called without a
// session.
func TestCallOnlyInProcess(t *testing.T) {
	t.Parallel()
	_, err := upstream.New(context.Background(), upstream.Spec{
		Name: "s", Kind: upstream.Stdio, Command: "/bin/true",
		Call: func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil },
	}, upstream.Deps{})
	if f, ok := fault.As(err); !ok || f.Code != fault.InvalidArgument {
		t.Fatalf("New = %v; want INVALID_ARGUMENT", err)
	}
}

// TestCallDirectCloseUnused: a Conn that was only ever called, and so never
// connected, closes at once.
func TestCallDirectCloseUnused(t *testing.T) {
	t.Parallel()
	c, err := upstream.New(context.Background(), upstream.Spec{
		Name: "d", Kind: upstream.InProcess,
		Connect: func(ctx context.Context) (mcp.Transport, error) {
			t.Error("an unused Conn connected")
			return upstream.ServeInProcess(ctx, pipeServer())
		},
		Call: func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		},
	}, upstream.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo"}); err != nil {
		t.Fatal(err)
	}
	if h := c.Health(); h.State != upstream.Idle {
		t.Errorf("state %s after calls alone, want idle", h.State)
	}
	// Close waits for the supervisor to exit, so a dial it made has been
	// reported (Connect fails the test) by the time Close returns.
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close of a Conn that never connected did not return")
	}
	if h := c.Health(); h.State == upstream.Ready {
		t.Errorf("health %v; a Conn that never connected is not ready", h.State)
	}
}
