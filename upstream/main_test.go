package upstream_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tetratelabs/wazero"

	"github.com/bastion-mcp/bastion/internal/testmcp"
	"github.com/bastion-mcp/bastion/internal/testmcp/wasmcache"
	"github.com/bastion-mcp/bastion/upstream"
)

// Built once per test binary by TestMain.
var (
	nativeBin string // internal/testmcp/cmd/testmcp for this machine
	wasmBin   string // the same for GOOS=wasip1 GOARCH=wasm
	buildErr  error
	wasmCache wazero.CompilationCache
)

// Variables TestMain puts in this process's environment: a child must never
// see the first, and sees the second only through an env: reference.
const (
	secretVar = "BASTION_UPSTREAM_TEST_SECRET"
	tokenVar  = "BASTION_UPSTREAM_TEST_TOKEN"
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "upstream-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Setenv(secretVar, "bastion-own-secret")
	os.Setenv(tokenVar, "configured-token")

	bins, err := testmcp.Build(dir, true)
	nativeBin, wasmBin, buildErr = bins.Native, bins.Wasm, err
	if buildErr == nil {
		wasmCache, buildErr = wasmcache.Warm("bastion-upstream-test-wazero", wasmBin)
	}
	return m.Run()
}

func needBuild(t testing.TB) {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

// envRef is an env:NAME reference, as gateway/config.Ref spells it.
type envRef string

func (r envRef) Resolve(getenv func(string) (string, bool)) (string, error) {
	v, ok := getenv(string(r))
	if !ok {
		return "", fmt.Errorf("env:%s is not set", string(r))
	}
	return v, nil
}

// open starts a Conn and waits for its first session.
func open(t testing.TB, spec upstream.Spec, deps upstream.Deps) *upstream.Conn {
	t.Helper()
	needBuild(t)
	if deps.Logger == nil && os.Getenv("UPSTREAM_TEST_LOG") != "" {
		deps.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if deps.Backoff.Min == 0 {
		deps.Backoff = upstream.Backoff{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond}
	}
	if spec.Kind == upstream.Wasm {
		deps.WasmCache = wasmCache
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := upstream.New(ctx, spec, deps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Session(ctx); err != nil {
		t.Fatalf("first session: %v (last error: %s)", err, c.Health().LastError)
	}
	return c
}

func stdioSpec(name string) upstream.Spec {
	return upstream.Spec{Name: name, Kind: upstream.Stdio, Command: nativeBin, StopGrace: 500 * time.Millisecond}
}

func wasmSpec(name string) upstream.Spec {
	return upstream.Spec{Name: name, Kind: upstream.Wasm, Module: wasmBin, Timeout: 10 * time.Second}
}

// call calls tool with args and returns the text of a successful result.
func call(ctx context.Context, t testing.TB, c *upstream.Conn, tool string, args map[string]any) (string, error) {
	t.Helper()
	res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	txt := resultText(res)
	if res.IsError {
		return txt, fmt.Errorf("tool error: %s", txt)
	}
	return txt, nil
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func mustCall(t testing.TB, c *upstream.Conn, tool string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := call(ctx, t, c, tool, args)
	if err != nil {
		t.Fatalf("%s %s: %v", c.Name(), tool, err)
	}
	return s
}
