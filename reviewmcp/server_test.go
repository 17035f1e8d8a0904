package reviewmcp_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/reviewmcp"
)

// connectBare connects an SDK client to srv over in-memory transports.
func connectBare(t *testing.T, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "server-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

// TestCapabilitiesMatchServedMethods holds the declared capabilities to what
// the server answers: the SDK answers prompts/list on every server, so the
// prompts capability is declared (with its always-empty list), and the
// tools and resources capabilities cover the five tools, the panel
// template and the MCP App, and the extensions capability declares MCP Apps
// (TestAppIsDiscoverable). Logging and completions are not served and not
// declared.
func TestCapabilitiesMatchServedMethods(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cs := connectBare(t, reviewmcp.NewServer(nil, reviewmcp.Options{Logger: quiet}))
	caps := cs.InitializeResult().Capabilities
	if caps == nil {
		t.Fatal("initialize result has no capabilities")
	}

	if caps.Prompts == nil {
		t.Error("prompts/list is answered but the prompts capability is not declared")
	} else if caps.Prompts.ListChanged {
		t.Error("prompts.listChanged is declared, but the prompt list never changes")
	}
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	if len(prompts.Prompts) != 0 {
		t.Errorf("prompts/list = %d prompts, want none", len(prompts.Prompts))
	}

	if caps.Tools == nil {
		t.Error("tools are served but the tools capability is not declared")
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if len(tools.Tools) != 5 {
		t.Errorf("tools/list = %d tools, want 5", len(tools.Tools))
	}

	if caps.Resources == nil {
		t.Error("the panel template is served but the resources capability is not declared")
	}
	templates, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatalf("resources/templates/list: %v", err)
	}
	if len(templates.ResourceTemplates) != 1 {
		t.Errorf("resources/templates/list = %d templates, want 1", len(templates.ResourceTemplates))
	}

	// Exactly these: no logging (the server sends no log messages), no
	// completions (it has no completion handler).
	b, err := json.Marshal(caps)
	if err != nil {
		t.Fatal(err)
	}
	var declared map[string]json.RawMessage
	if err := json.Unmarshal(b, &declared); err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(declared)), []string{"extensions", "prompts", "resources", "tools"}; !slices.Equal(got, want) {
		t.Errorf("declared capabilities = %v, want %v", got, want)
	}
}

// BenchmarkNewServer measures building one server, which the stateless
// 2026-07-28 wire does for every request.
func BenchmarkNewServer(b *testing.B) {
	o := reviewmcp.Options{Logger: quiet}
	b.ReportAllocs()
	for b.Loop() {
		if reviewmcp.NewServer(nil, o) == nil {
			b.Fatal("NewServer returned nil")
		}
	}
}
