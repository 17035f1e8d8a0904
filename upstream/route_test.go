//lint:file-ignore SA1019 sampling, roots and logging are part of MCP 2025-11-25, the revision bastion targets and must relay; deprecated only from 2026-07-28.

package upstream_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/upstream"
)

// events records what a Conn announces.
type events struct{ ch chan upstream.Change }

func newEvents() *events { return &events{ch: make(chan upstream.Change, 64)} }

func (e *events) Changed(_ context.Context, _ string, c upstream.Change) {
	select {
	case e.ch <- c:
	default:
	}
}

func (e *events) Log(context.Context, string, *mcp.LoggingMessageParams) {}

func (e *events) Updated(context.Context, string, *mcp.ResourceUpdatedNotificationParams) {}

func (e *events) wait(t testing.TB, want upstream.Change) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case c := <-e.ch:
			if c == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %v event", want)
		}
	}
}

// RelayIn is the front server's relay tool input.
type RelayIn struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
}

// front is a stand-in for the gateway's client-facing side: an MCP server
// whose relay tool calls the upstream on behalf of the calling session,
// which is the Downstream.
func front(c *upstream.Conn) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "front", Version: "0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "relay"}, func(ctx context.Context, req *mcp.CallToolRequest, in RelayIn) (*mcp.CallToolResult, any, error) {
		p := &mcp.CallToolParams{Name: in.Tool, Arguments: in.Args}
		if tok := req.Params.GetProgressToken(); tok != nil {
			p.SetProgressToken(tok)
		}
		res, err := c.CallTool(upstream.WithDownstream(ctx, req.Session), p)
		if err != nil {
			return nil, nil, err
		}
		return res, nil, nil
	})
	return s
}

// downstream is a real MCP client of front, answering sampling, elicitation
// and roots, and recording progress.
type downstream struct {
	cs *mcp.ClientSession

	// held receives once each time an elicitation arrives while hold is
	// set; the elicitation is then answered only when hold is closed, so a
	// test can keep this client's call in flight at the upstream.
	held chan struct{}

	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
	hold     chan struct{}
}

// holdElicitations makes the next elicitations wait until release is called.
func (d *downstream) holdElicitations() (release func()) {
	ch := make(chan struct{})
	d.mu.Lock()
	d.hold = ch
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		d.hold = nil
		d.mu.Unlock()
		close(ch)
	}
}

func connectDownstream(t *testing.T, srv *mcp.Server, reply string) *downstream {
	t.Helper()
	d := &downstream{held: make(chan struct{}, 1)}
	cl := mcp.NewClient(&mcp.Implementation{Name: "agent-" + reply, Version: "0"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			in := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: reply + "(" + in + ")"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			d.mu.Lock()
			hold := d.hold
			d.mu.Unlock()
			if hold != nil {
				d.held <- struct{}{}
				<-hold
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": reply}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			d.mu.Lock()
			d.progress = append(d.progress, req.Params)
			d.mu.Unlock()
		},
	})
	cl.AddRoots(&mcp.Root{URI: "file:///work/" + reply})
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	// Before 2026-07-28 a server may send sampling and elicitation requests
	// while it serves a call, which is what the front relays.
	d.cs, err = cl.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.cs.Close() })
	return d
}

func (d *downstream) relay(t *testing.T, tool string, args map[string]any, progress any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := &mcp.CallToolParams{Name: "relay", Arguments: RelayIn{Tool: tool, Args: args}}
	if progress != nil {
		p.SetProgressToken(progress)
	}
	res, err := d.cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("relay %s: %v", tool, err)
	}
	return resultText(res), res.IsError
}

func TestServerRequestsReachTheCallingClient(t *testing.T) {
	t.Parallel()
	for _, spec := range []upstream.Spec{stdioSpec("route-stdio"), wasmSpec("route-wasm")} {
		t.Run(string(spec.Kind), func(t *testing.T) {
			t.Parallel()
			ev := newEvents()
			c := open(t, spec, upstream.Deps{Events: ev})
			srv := front(c)
			a := connectDownstream(t, srv, "alice")
			b := connectDownstream(t, srv, "bob")

			if got, isErr := a.relay(t, "sample", map[string]any{"text": "ping"}, nil); isErr || got != "model said: alice(ping)" {
				t.Errorf("sample via alice = %q (error %v)", got, isErr)
			}
			if got, isErr := b.relay(t, "sample", map[string]any{"text": "ping"}, nil); isErr || got != "model said: bob(ping)" {
				t.Errorf("sample via bob = %q (error %v)", got, isErr)
			}
			if got, isErr := a.relay(t, "elicit", map[string]any{"text": "answer?"}, nil); isErr || got != "accept:alice" {
				t.Errorf("elicit via alice = %q (error %v)", got, isErr)
			}
			if got, isErr := b.relay(t, "roots", map[string]any{}, nil); isErr || got != "file:///work/bob" {
				t.Errorf("roots via bob = %q (error %v)", got, isErr)
			}

			// Progress comes back under the caller's own token.
			if got, isErr := a.relay(t, "progress", map[string]any{"steps": 3}, "alice-token"); isErr || got != "3 steps" {
				t.Errorf("progress = %q (error %v)", got, isErr)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				a.mu.Lock()
				n := len(a.progress)
				a.mu.Unlock()
				if n == 3 || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			a.mu.Lock()
			if len(a.progress) != 3 {
				t.Errorf("alice got %d progress notifications, want 3", len(a.progress))
			}
			for _, p := range a.progress {
				if p.ProgressToken != "alice-token" {
					t.Errorf("progress token = %v, want alice-token", p.ProgressToken)
				}
			}
			a.mu.Unlock()

			// With calls from two clients in flight, an unattributable
			// sampling request is refused, never guessed. Alice's call is
			// in flight at the upstream once its elicitation reaches her,
			// and stays so until she answers.
			release := a.holdElicitations()
			done := make(chan string, 1)
			go func() {
				got, _ := a.relay(t, "elicit", map[string]any{"text": "wait"}, nil)
				done <- got
			}()
			<-a.held
			got, isErr := b.relay(t, "sample", map[string]any{"text": "ping"}, nil)
			if !isErr || strings.Contains(got, "alice") || strings.Contains(got, "model said") {
				t.Errorf("sample with two clients in flight = %q (error %v), want a refusal", got, isErr)
			}
			release()
			if got := <-done; got != "accept:alice" {
				t.Errorf("alice's held elicitation = %q, want accept:alice", got)
			}

			// tools/list_changed reaches Events.
			if got, isErr := a.relay(t, "addtool", map[string]any{"text": "fresh"}, nil); isErr || got != "ok" {
				t.Errorf("addtool = %q (error %v)", got, isErr)
			}
			ev.wait(t, upstream.ToolsChanged)
		})
	}
}
