//lint:file-ignore SA1019 logging is part of MCP 2025-11-25, the revision bastion targets and must relay; deprecated only from 2026-07-28.

package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/upstream"
)

// slowLogs relays log messages slowly, as a busy downstream client would
// take them, counting each once relayed.
type slowLogs struct {
	events
	relayed atomic.Int32
}

func (s *slowLogs) Log(context.Context, string, *mcp.LoggingMessageParams) {
	time.Sleep(2 * time.Millisecond)
	s.relayed.Add(1)
}

// TestLogsBeforeResult: the log messages an upstream sends during a call
// are relayed before the call returns, so a client sees them before the
// result, as it would talking to the upstream directly. Without the fence
// the SDK hands the result over while the messages still wait for their
// handler.
func TestLogsBeforeResult(t *testing.T) {
	t.Parallel()
	const logs = 5
	srv := mcp.NewServer(&mcp.Implementation{Name: "logs", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "chatty", Description: "Logs, then answers."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			for i := range logs {
				if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: fmt.Sprintf("step %d", i)}); err != nil {
					return nil, nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	ev := &slowLogs{events: *newEvents()}
	c, err := upstream.New(context.Background(), upstream.Spec{
		Name: "logs", Kind: upstream.InProcess,
		Connect: func(ctx context.Context) (mcp.Transport, error) { return upstream.ServeInProcess(ctx, srv) },
	}, upstream.Deps{Events: ev})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sess, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A server sends log messages only at or above the level its client set.
	if err := sess.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= 3; round++ {
		if _, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "chatty"}); err != nil {
			t.Fatal(err)
		}
		if got := ev.relayed.Load(); got != int32(round*logs) {
			t.Fatalf("after call %d, %d log messages relayed, want %d: the result overtook them", round, got, round*logs)
		}
	}
}

// TestMalformedLogIsWrittenOff: a log message the SDK refuses before any
// handler (its params do not decode) is never relayed; the call it preceded
// waits a bounded time for it, and the next call does not wait at all.
func TestMalformedLogIsWrittenOff(t *testing.T) {
	t.Parallel()
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go rawServer(ctx, t, st)
	connected := false
	c, err := upstream.New(context.Background(), upstream.Spec{
		Name: "raw", Kind: upstream.InProcess,
		Connect: func(context.Context) (mcp.Transport, error) {
			if connected {
				return nil, errors.New("the raw server serves one session")
			}
			connected = true
			return ct, nil
		},
	}, upstream.Deps{Events: &slowLogs{events: *newEvents()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "bad-log"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "plain"}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 250*time.Millisecond {
		t.Errorf("the call after a written-off log message took %s: it waited for it again", took)
	}
}

// rawServer answers initialize and tools/call on st by hand; before
// answering bad-log it sends a notifications/message whose params are not
// an object.
func rawServer(ctx context.Context, t *testing.T, st mcp.Transport) {
	conn, err := st.Connect(ctx)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close()
	for {
		m, err := conn.Read(ctx)
		if err != nil {
			return
		}
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			continue
		}
		var result string
		switch req.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"raw","version":"1"}}`
		case "tools/call":
			var p struct{ Name string }
			_ = json.Unmarshal(req.Params, &p)
			if p.Name == "bad-log" {
				_ = conn.Write(ctx, &jsonrpc.Request{Method: "notifications/message", Params: json.RawMessage(`5`)})
			}
			result = `{"content":[{"type":"text","text":"ok"}]}`
		default:
			result = `{}`
		}
		if err := conn.Write(ctx, &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(result)}); err != nil {
			return
		}
	}
}
