package loop_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/internal/testmcp"
	"github.com/bastion-mcp/bastion/upstream"
)

// TestUpstreamKinds: one gateway over a stdio child, a Streamable HTTP
// server on loopback (reached through the egress guard with an Allow hole),
// a wasip1 module under wazero, and an in-process server, each governed.
func TestUpstreamKinds(t *testing.T) {
	t.Parallel()
	web := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		return testmcp.New(testmcp.Options{Name: "web"})
	}, &mcp.StreamableHTTPOptions{DisableLocalhostProtection: true}))
	t.Cleanup(web.Close)
	_, portStr, _ := net.SplitHostPort(web.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	guard := egress.NewGuard(egress.Policy{
		AllowHTTP: true,
		Ports:     []uint16{uint16(port)},
		Allow:     []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
	}, egress.StaticResolver{"upstream.test": {netip.MustParseAddr("127.0.0.1")}})

	inproc := inProcess(func() *mcp.Server { return testmcp.New(testmcp.Options{Name: "inproc"}) })
	b := setup(t, `
[server.child]
kind = "stdio"
command = "%BIN%"

[server.web]
kind = "http"
url = "http://upstream.test:`+portStr+`/mcp"

[server.mod]
kind = "wasm"
wasm = "%WASM%"

[server.local]
kind = "review"

[[policy.rule]]
name = "echo-only"
action = "allow"
match = ["*__echo"]
`, setupOpts{base: upstream.Deps{Guard: guard}, inProcess: map[string]func(context.Context) (mcp.Transport, error){"local": inproc}})

	a := b.connect(t, alice, clientOpts{})
	want := []string{"child__echo", "local__echo", "mod__echo", "web__echo"}
	if got := sorted(toolNames(t, a)); !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	for _, tool := range want {
		if got, isErr := call(t, a, tool, map[string]any{"text": tool}); isErr || got != tool {
			t.Errorf("%s: %q (isError %v)", tool, got, isErr)
		}
		srv := tool[:len(tool)-len("__echo")]
		if got, isErr := call(t, a, srv+"__env", map[string]any{"names": []string{"PATH"}}); !isErr {
			t.Errorf("%s__env allowed: %q", srv, got)
		}
	}
	// Resources and prompts come through too; the resource URI is the
	// upstream's own (four servers offer it; the first by key serves it).
	ctx := context.Background()
	rr, err := a.ReadResource(ctx, &mcp.ReadResourceParams{URI: "testmcp://hello"})
	if err == nil {
		t.Fatalf("resource read allowed by a tools-only policy: %+v", rr)
	}
	if _, err := a.GetPrompt(ctx, &mcp.GetPromptParams{Name: "child__greet", Arguments: map[string]string{"who": "x"}}); err == nil {
		t.Fatal("prompt allowed by a tools-only policy")
	}
	b.verify(t)
}

// TestResourcesAndPrompts: with a policy that admits them, resources and
// prompts are listed, read and audited, prompts under namespaced names.
func TestResourcesAndPrompts(t *testing.T) {
	t.Parallel()
	b := setup(t, `
[server.child]
kind = "stdio"
command = "%BIN%"

[[policy.rule]]
name = "all"
action = "allow"
match = ["child__*"]
`, setupOpts{})
	a := b.connect(t, alice, clientOpts{})
	ctx := context.Background()
	rr, err := a.ReadResource(ctx, &mcp.ReadResourceParams{URI: "testmcp://hello"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "hello from testmcp" {
		t.Fatalf("read: %+v %v", rr, err)
	}
	pr, err := a.GetPrompt(ctx, &mcp.GetPromptParams{Name: "child__greet", Arguments: map[string]string{"who": "ann"}})
	if err != nil || len(pr.Messages) != 1 {
		t.Fatalf("prompt: %+v %v", pr, err)
	}
	var prompts []string
	for p, err := range a.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	if !slices.Equal(prompts, []string{"child__greet"}) {
		t.Errorf("prompts %v", prompts)
	}
	recs := b.records(t)
	if len(recs) != 2 || recs[0].Method != "resources/read" || recs[1].Method != "prompts/get" {
		t.Errorf("records %+v", recs)
	}
}
