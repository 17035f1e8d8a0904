package loop_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/internal/testmcp"
	"github.com/bastion-mcp/bastion/upstream"
)

// BenchmarkGovernedCall is one tools/call through every gate, an
// in-process upstream and the durable ledger, from a real SDK client, so a
// profile of it shows the gateway's own per-call costs beside the SDK's.
// Run it with -cpuprofile; the ledger sits in the test's temporary
// directory: TMPDIR=/dev/shm takes the disk out of the figure. Clients
// offer the revision the gateway targets, as bench/gateway's do.
func BenchmarkGovernedCall(b *testing.B) {
	g := setup(b, `
[server.echo]
kind = "review"

[[policy.rule]]
name = "echo"
action = "allow"
match = ["echo__echo"]
args = [{ path = "text", exists = true }]

[ratelimit]
global = { rate = 1000000.0, burst = 1000000 }
per_principal = { rate = 1000000.0, burst = 1000000 }
per_tool = { rate = 1000000.0, burst = 1000000 }

[inspect]
mode = "enforce"

[pin]
mode = "strict"
`, setupOpts{inProcess: map[string]func(context.Context) (mcp.Transport, error){
		"echo": inProcess(func() *mcp.Server { return testmcp.New(testmcp.Options{Name: "echo"}) }),
	}})
	ctx := context.Background()
	p := &mcp.CallToolParams{Name: "echo__echo", Arguments: map[string]any{"text": "hello, gateway"}}
	b.Run("callers=1", func(b *testing.B) {
		cs := g.connect(b, alice, clientOpts{version: upstream.DefaultProtocolVersion})
		b.ReportAllocs()
		for b.Loop() {
			res, err := cs.CallTool(ctx, p)
			if err != nil || res.IsError {
				b.Fatalf("CallTool: %v %v", err, res)
			}
		}
	})
	b.Run("callers=16", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(8) // 16 on 2 cores
		b.RunParallel(func(pb *testing.PB) {
			cs := g.connect(b, alice, clientOpts{version: upstream.DefaultProtocolVersion})
			for pb.Next() {
				res, err := cs.CallTool(ctx, p)
				if err != nil || res.IsError {
					b.Errorf("CallTool: %v %v", err, res)
					return
				}
			}
		})
	})
}
