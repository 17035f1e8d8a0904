package upstream_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/upstream"
)

// BenchmarkWasmInstantiateInitialize measures a fresh Wasm instance: what
// replacing a trapped or timed-out one costs (instantiate, the guest's
// runtime start, and the MCP initialize handshake). Compilation is cached.
func BenchmarkWasmInstantiateInitialize(b *testing.B) {
	c := open(b, wasmSpec("bench-wasm"), upstream.Deps{})
	ctx := context.Background()
	var total time.Duration
	n := 0
	for b.Loop() {
		c.Discard()
		if _, err := c.Session(ctx); err != nil {
			b.Fatal(err)
		}
		total += c.Health().Connect
		n++
	}
	// ns/op includes the supervisor's restart backoff; this is the
	// instantiate+initialize time alone.
	b.ReportMetric(float64(total.Milliseconds())/float64(n), "connect-ms/op")
}

func BenchmarkCallEcho(b *testing.B) {
	for _, spec := range []upstream.Spec{stdioSpec("bench-stdio"), wasmSpec("bench-wasm-echo")} {
		b.Run(string(spec.Kind), func(b *testing.B) {
			c := open(b, spec, upstream.Deps{})
			ctx := context.Background()
			p := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}
			for b.Loop() {
				if _, err := c.CallTool(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
