package mcpfixture

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func connect(t *testing.T, s *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("no content: %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("first block %T", res.Content[0])
	}
	return tc.Text
}

func TestFixtureCatalog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cs := connect(t, New().NewServer())
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		names[tl.Name] = true
	}
	for _, want := range []string{"test_simple_text", "test_image_content", "test_sampling", "test_elicitation",
		"test_tool_with_progress", "json_schema_2020_12_tool", "test_input_required_result_multi_round"} {
		if !names[want] {
			t.Errorf("tool %s missing", want)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"})
	if err != nil || text(t, res) != "This is a simple text response for testing." {
		t.Errorf("test_simple_text: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_error_handling"})
	if err != nil || !res.IsError {
		t.Errorf("test_error_handling: %v %+v", err, res)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/42/data"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, `"id": "42"`) {
		t.Errorf("template read: %v %+v", err, rr)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/a/b/data"}); err == nil {
		t.Error("template matched a nested path")
	}
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": "x", "arg2": "y"}})
	if err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != "Prompt with arguments: arg1='x', arg2='y'" {
		t.Errorf("prompt: %v %+v", err, pr)
	}
}

// TestRequestState: the signed requestState round-trips, and any change to it
// is refused.
func TestRequestState(t *testing.T) {
	t.Parallel()
	f := New()
	st := f.signState("round=1")
	if p, ok := f.openState(st); !ok || p != "round=1" {
		t.Fatalf("openState(signState) = %q, %v", p, ok)
	}
	for _, bad := range []string{st + "-TAMPERED", "round=2" + st[len("round=1"):], "", "no-signature", New().signState("round=1")} {
		if _, ok := f.openState(bad); ok {
			t.Errorf("openState(%q) accepted", bad)
		}
	}
}

func TestGeneric(t *testing.T) {
	t.Parallel()
	cs := connect(t, Generic())
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || text(t, res) != "hi" {
		t.Errorf("echo: %v %+v", err, res)
	}
}
