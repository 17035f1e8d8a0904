package loop_test

import (
	"context"
	"errors"
	"maps"
	"net"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/edge"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/gateway/loop"
	"github.com/bastion-mcp/bastion/internal/mcpfixture"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/upstream"
)

// roundsGateway serves the conformance fixture, in process, behind the
// gateway as server "fx" (tools fx__NAME, prompts fx__NAME).
func roundsGateway(t *testing.T) *bundle {
	t.Helper()
	fx := mcpfixture.New()
	inproc := inProcess(fx.NewServer)
	return setup(t, `
[server.fx]
kind = "review"

[[policy.rule]]
name = "all"
action = "allow"
match = ["fx__*"]

[pin]
mode = "warn"
`, setupOpts{inProcess: map[string]func(context.Context) (mcp.Transport, error){"fx": inproc}})
}

// manualClient connects a client on version that answers input requests
// itself, round by round (the SDK's automatic rounds off), declaring
// elicitation only.
func manualClient(t *testing.T, b *bundle, p principal.Principal, version string, answer map[string]any) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := b.loop.NewServer(ctx, p).Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "rounds", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: answer}, nil
		},
	})
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callRaw(t *testing.T, cs *mcp.ClientSession, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return cs.CallTool(ctx, p)
}

func accept(content map[string]any) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: content}
}

// TestRoundsPassThrough: a 2026-07-28 client sees the upstream's own
// input requests (its keys, not the gateway's), answers them, and the
// upstream's request state makes the trip sealed; each round is governed
// and recorded.
func TestRoundsPassThrough(t *testing.T) {
	t.Parallel()
	b := roundsGateway(t)
	a := manualClient(t, b, alice, "2026-07-28", nil)

	res, err := callRaw(t, a, &mcp.CallToolParams{Name: "fx__test_input_required_result_elicitation"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || !slices.Equal(slices.Sorted(maps.Keys(res.InputRequests)), []string{"user_name"}) {
		t.Fatalf("first round: needs input %v, requests %v; want the upstream's key user_name", res.NeedsInput(), res.InputRequests)
	}
	if !strings.HasPrefix(res.RequestState, "bastion-rt1.") {
		t.Errorf("request state %q is not sealed by the gateway", res.RequestState)
	}
	res, err = callRaw(t, a, &mcp.CallToolParams{Name: "fx__test_input_required_result_elicitation",
		InputResponses: mcp.InputResponseMap{"user_name": accept(map[string]any{"name": "Ada"})}, RequestState: res.RequestState})
	if err != nil || text(res) != "Hello, Ada!" {
		t.Fatalf("second round: %v %q", err, text(res))
	}

	// Two rounds carried by the upstream's own signed, evolving state.
	tool := "fx__test_input_required_result_multi_round"
	res, err = callRaw(t, a, &mcp.CallToolParams{Name: tool})
	if err != nil || !res.NeedsInput() || res.InputRequests["step1"] == nil {
		t.Fatalf("round 1: %v %+v", err, res)
	}
	res, err = callRaw(t, a, &mcp.CallToolParams{Name: tool, RequestState: res.RequestState,
		InputResponses: mcp.InputResponseMap{"step1": accept(map[string]any{"name": "Ada"})}})
	if err != nil || !res.NeedsInput() || res.InputRequests["step2"] == nil {
		t.Fatalf("round 2: %v %+v", err, res)
	}
	res, err = callRaw(t, a, &mcp.CallToolParams{Name: tool, RequestState: res.RequestState,
		InputResponses: mcp.InputResponseMap{"step2": accept(map[string]any{"color": "blue"})}})
	if err != nil || text(res) != "Multi-round complete: Ada likes blue" {
		t.Fatalf("round 3: %v %q", err, text(res))
	}
	if n := len(b.records(t)); n != 5 {
		t.Errorf("%d ledger records, want one per round (5)", n)
	}
	b.verify(t)
}

// TestRoundsStateIsBound: a request state works only for the principal and
// the tool it was issued for, and a modified one never reaches the
// upstream; each refusal is recorded.
func TestRoundsStateIsBound(t *testing.T) {
	t.Parallel()
	b := roundsGateway(t)
	a := manualClient(t, b, alice, "2026-07-28", nil)
	bo := manualClient(t, b, bob, "2026-07-28", nil)
	tool := "fx__test_input_required_result_request_state"
	res, err := callRaw(t, a, &mcp.CallToolParams{Name: tool})
	if err != nil || !res.NeedsInput() {
		t.Fatalf("first round: %v %+v", err, res)
	}
	state := res.RequestState
	answer := mcp.InputResponseMap{"confirm": accept(map[string]any{"confirmed": true})}
	tag, inner, _ := strings.Cut(strings.TrimPrefix(state, "bastion-rt1."), ".")
	flip := func(s string) string {
		if s == "" {
			return "x"
		}
		b := []byte(s)
		if b[len(b)-1] == 'A' {
			b[len(b)-1] = 'B'
		} else {
			b[len(b)-1] = 'A'
		}
		return string(b)
	}
	for _, tc := range []struct {
		name  string
		cs    *mcp.ClientSession
		tool  string
		state string
	}{
		{"another principal", bo, tool, state},
		{"another tool", a, "fx__test_input_required_result_tampered_state", state},
		{"modified upstream state", a, tool, "bastion-rt1." + tag + "." + flip(inner)},
		{"modified seal", a, tool, "bastion-rt1." + flip(tag) + "." + inner},
		{"unsealed upstream state", a, tool, inner},
	} {
		_, err := callRaw(t, tc.cs, &mcp.CallToolParams{Name: tc.tool, RequestState: tc.state, InputResponses: answer})
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s: err %v, want invalid params", tc.name, err)
		}
	}
	// The owner's own round still works: the refusals consumed nothing.
	res, err = callRaw(t, a, &mcp.CallToolParams{Name: tool, RequestState: state, InputResponses: answer})
	if err != nil || !strings.HasPrefix(text(res), "state-ok") {
		t.Fatalf("owner's round: %v %q", err, text(res))
	}
	refused := 0
	for _, r := range b.records(t) {
		if r.Rule == "routing:bad-request-state" {
			refused++
		}
	}
	if refused != 5 {
		t.Errorf("%d refusals recorded, want 5", refused)
	}
}

// TestRoundsCarryClientCapabilities: the upstream decides what to ask by
// the capabilities of the client that will answer, not the gateway's (its
// upstream client declares sampling, elicitation and roots).
func TestRoundsCarryClientCapabilities(t *testing.T) {
	t.Parallel()
	b := roundsGateway(t)
	a := manualClient(t, b, alice, "2026-07-28", nil)
	res, err := callRaw(t, a, &mcp.CallToolParams{Name: "fx__test_input_required_result_capabilities"})
	if err != nil || !res.NeedsInput() {
		t.Fatalf("%v %+v", err, res)
	}
	if _, ok := res.InputRequests["greeting"]; ok {
		t.Errorf("the upstream asked for sampling, which the client did not declare: %v", slices.Collect(maps.Keys(res.InputRequests)))
	}
	if _, ok := res.InputRequests["user_name"]; !ok {
		t.Errorf("the upstream did not ask for the elicitation the client declared: %v", slices.Collect(maps.Keys(res.InputRequests)))
	}
}

// TestRoundsOlderClientAndPrompts: a 2025-11-25 client reaches the same
// multi-round-trip tool (the gateway asks it during the call), and a
// prompts/get with input requests makes the trip like a tool call.
func TestRoundsOlderClientAndPrompts(t *testing.T) {
	t.Parallel()
	b := roundsGateway(t)
	old := manualClient(t, b, alice, "2025-11-25", map[string]any{"name": "Grace"})
	res, err := callRaw(t, old, &mcp.CallToolParams{Name: "fx__test_input_required_result_elicitation"})
	if err != nil || text(res) != "Hello, Grace!" {
		t.Fatalf("2025-11-25 client: %v %+v", err, res)
	}

	a := manualClient(t, b, alice, "2026-07-28", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pr, err := a.GetPrompt(ctx, &mcp.GetPromptParams{Name: "fx__test_input_required_result_prompt"})
	if err != nil || !pr.NeedsInput() || pr.InputRequests["user_context"] == nil {
		t.Fatalf("prompt round 1: %v %+v", err, pr)
	}
	promptState := pr.RequestState
	pr, err = a.GetPrompt(ctx, &mcp.GetPromptParams{Name: "fx__test_input_required_result_prompt", RequestState: promptState,
		InputResponses: mcp.InputResponseMap{"user_context": accept(map[string]any{"context": "testing"})}})
	if err != nil || pr.NeedsInput() || len(pr.Messages) == 0 {
		t.Fatalf("prompt round 2: %v %+v", err, pr)
	}
	// A prompt state is not a tool state.
	_, err = callRaw(t, a, &mcp.CallToolParams{Name: "fx__test_input_required_result_elicitation", RequestState: promptState})
	if err == nil {
		t.Error("a prompt's request state was accepted for a tool")
	}
}

// TestRoundsOverHTTPUpstream: the fixture as a Streamable HTTP upstream on
// loopback, reachable only because its server block says allow_private:
// a 2026-07-28 client's rounds go over the upstream's own 2026-07-28
// session beside the default one.
func TestRoundsOverHTTPUpstream(t *testing.T) {
	t.Parallel()
	// The fixture behind bastion's edge, which serves both wires on one URL
	// (the SDK's own handler negotiates only 2025-11-25).
	fx := mcpfixture.New()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e, err := edge.New(edge.Options{Enabled: true, BindAddr: ln.Addr().String()},
		func(context.Context, principal.Principal) *mcp.Server { return fx.NewServer() })
	if err != nil {
		t.Fatal(err)
	}
	web := &httptest.Server{Listener: ln, Config: edge.NewServer(ln.Addr().String(), e, edge.Timeouts{})}
	web.Start()
	t.Cleanup(web.Close)
	conf := `
[server.fx]
kind = "http"
url = "` + web.URL + `/mcp"
%PRIVATE%

[[policy.rule]]
name = "all"
action = "allow"
match = ["fx__*"]
`
	strict := upstream.Deps{Guard: egress.NewGuard(egress.Policy{}, nil)}

	// Without allow_private the guard refuses the loopback upstream.
	cfg, err := config.Parse("t.toml", []byte(strings.Replace(conf, "%PRIVATE%", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := loop.StandardDialer(cfg, strict, nil)(ctx, "fx", nil)
	if err == nil {
		err = conn.WaitFirst(ctx)
		conn.Close()
	}
	if err == nil {
		t.Fatal("a loopback upstream was dialed without allow_private")
	}

	b := setup(t, strings.Replace(conf, "%PRIVATE%", "allow_private = true", 1), setupOpts{base: strict})
	a := manualClient(t, b, alice, "2026-07-28", nil)
	res, err := callRaw(t, a, &mcp.CallToolParams{Name: "fx__test_input_required_result_elicitation"})
	if err != nil || !res.NeedsInput() || res.InputRequests["user_name"] == nil {
		t.Fatalf("first round: %v %+v", err, res)
	}
	res, err = callRaw(t, a, &mcp.CallToolParams{Name: "fx__test_input_required_result_elicitation", RequestState: res.RequestState,
		InputResponses: mcp.InputResponseMap{"user_name": accept(map[string]any{"name": "Lin"})}})
	if err != nil || text(res) != "Hello, Lin!" {
		t.Fatalf("second round: %v %q", err, text(res))
	}
	// Requests without rounds from such a client go over that session too.
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	if _, err := a.Complete(cctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "fx__test_prompt_with_arguments"},
		Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "a"}}); err != nil {
		t.Errorf("completion from a 2026-07-28 client: %v", err)
	}
	// A 2025-11-25 client's elicitation during a call still works over the
	// default session.
	old := manualClient(t, b, alice, "2025-11-25", map[string]any{"username": "lin"})
	res, err = callRaw(t, old, &mcp.CallToolParams{Name: "fx__test_elicitation", Arguments: map[string]any{"message": "who?"}})
	if err != nil || res.IsError {
		t.Fatalf("2025-11-25 elicitation: %v %+v", err, res)
	}
}
