package reviewmcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review/reviewtest"
	"github.com/bastion-mcp/bastion/reviewmcp"
)

// TestToolHandlerMatchesServer: NewToolHandler answers each call with the
// result the server's tool gives for it, acts for its own principal only,
// and refuses an unknown tool as the SDK's server does.
func TestToolHandlerMatchesServer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, "", false) // no workers: jobs stay queued
	alice := reviewtest.NewPrincipal(t, "acme", "alice", principal.AllScopes()...)
	c := h.connect(t, alice, clientOpts{})
	handler := func(p principal.Principal) mcp.ToolHandler {
		return reviewmcp.NewToolHandler(h.Service, reviewmcp.Options{Logger: quiet,
			PrincipalFrom: func(context.Context) (principal.Principal, bool) { return p, true }})
	}
	direct := func(p principal.Principal, tool string, args any) *mcp.CallToolResult {
		t.Helper()
		raw, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		res, err := handler(p)(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool, Arguments: raw}})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return res
	}
	submit := map[string]any{"url": "https://preview.example.com/pricing", "client_request_id": "key-handler-1"}
	var first submitOut
	decodeInto(t, direct(alice, reviewmcp.ToolReview, submit), &first)
	if first.Job.Status != "queued" {
		t.Fatalf("submit through the handler: %+v", first)
	}
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{reviewmcp.ToolReview, submit}, // a replay: the same job, reused
		{reviewmcp.ToolGet, map[string]any{"job_id": first.Job.JobID}},
		{reviewmcp.ToolGet, map[string]any{"job_id": first.Job.JobID, "view": "summary"}},
		{reviewmcp.ToolGet, map[string]any{"job_id": first.Job.JobID, "view": "evidence"}},
	} {
		viaServer, viaHandler := comparable(t, c.call(call.tool, call.args)), comparable(t, direct(alice, call.tool, call.args))
		if viaServer != viaHandler {
			t.Errorf("%s %v:\nserver  %s\nhandler %s", call.tool, call.args, viaServer, viaHandler)
		}
	}
	bob := reviewtest.NewPrincipal(t, "globex", "bob", principal.AllScopes()...)
	wantError(t, direct(bob, reviewmcp.ToolGet, map[string]any{"job_id": first.Job.JobID}), fault.JobNotFound)
	wantError(t, direct(alice, reviewmcp.ToolGet, map[string]any{"job_id": 7}), fault.InvalidArgument)

	_, err := handler(alice)(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "design_nope"}})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("unknown tool: %v; want the SDK's invalid-params error", err)
	}
}

// comparable is res as JSON with sorted keys and without what the SDK's
// server adds to every result on the wire (its serverInfo in _meta and the
// result type), which a gateway's own server adds for its client.
func comparable(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(mustJSON(res)), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "_meta")
	delete(m, "resultType")
	return mustJSON(m)
}
