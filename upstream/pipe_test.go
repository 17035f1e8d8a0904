package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/upstream"
)

type pipeIn struct {
	Text string `json:"text"`
}

// pipeServer echoes.
func pipeServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "pipe", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo."},
		func(_ context.Context, _ *mcp.CallToolRequest, in pipeIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	return s
}

func pipeConnect(t testing.TB) (*mcp.ServerSession, *mcp.ClientSession) {
	t.Helper()
	st, ct := upstream.Pipe()
	ss, err := pipeServer().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ss, cs
}

// TestPipe: the SDK's client and server speak over a Pipe, on concurrent
// calls, each getting its own answer.
func TestPipe(t *testing.T) {
	t.Parallel()
	_, cs := pipeConnect(t)
	defer cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			want := fmt.Sprintf("call %d", i)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": want}})
			switch {
			case err != nil:
				errs <- err
			case len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != want:
				errs <- fmt.Errorf("call %d answered %+v", i, res.Content)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestPipeClose: closing either end ends the other's session, and an end
// connects once.
func TestPipeClose(t *testing.T) {
	t.Parallel()
	ss, cs := pipeConnect(t)
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	cs.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the server session outlived the client's close")
	}
	st, _ := upstream.Pipe()
	if _, err := st.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Connect(context.Background()); err == nil {
		t.Error("a pipe end connected twice")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "late"}}); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a call on a closed pipe: %v, want a prompt connection error", err)
	}
}

// BenchmarkPipe compares one tools/call over a Pipe with the SDK's
// in-memory transport, which encodes and decodes every message.
func BenchmarkPipe(b *testing.B) {
	for _, tc := range []struct {
		name string
		pair func() (mcp.Transport, mcp.Transport)
	}{
		{"pipe", upstream.Pipe},
		{"inmemory", func() (mcp.Transport, mcp.Transport) { return mcp.NewInMemoryTransports() }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			st, ct := tc.pair()
			if _, err := pipeServer().Connect(context.Background(), st, nil); err != nil {
				b.Fatal(err)
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestPipeErrorsCrossAsOnAWire: a handler's Go error reaches the client as
// the JSON-RPC error a wire would carry, as over the SDK's own transport.
func TestPipeErrorsCrossAsOnAWire(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		pair func() (mcp.Transport, mcp.Transport)
	}{
		{"pipe", upstream.Pipe},
		{"inmemory", func() (mcp.Transport, mcp.Transport) { return mcp.NewInMemoryTransports() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mcp.NewServer(&mcp.Implementation{Name: "e", Version: "1"}, nil)
			s.AddPrompt(&mcp.Prompt{Name: "broken"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return nil, errors.New("prompt store unavailable")
			})
			st, ct := tc.pair()
			if _, err := s.Connect(context.Background(), st, nil); err != nil {
				t.Fatal(err)
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			_, err = cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "broken"})
			var rpc *jsonrpc.Error
			if !errors.As(err, &rpc) || rpc.Message != "prompt store unavailable" {
				t.Errorf("err = %#v, want a *jsonrpc.Error carrying the message", err)
			}
		})
	}
}
