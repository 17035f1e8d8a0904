// Command gateway measures what the governing gateway costs per tools/call:
// the same in-process echo upstream is called directly and through the full
// loop (routing, policy, pins, rate limit, inspection and the fsynced audit
// ledger), in one run, sequentially (latency) and with concurrent callers
// (throughput).
//
//	go run ./bench/gateway [-n 5000] [-c 8] [-ledger DIR]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/audit"
	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/gateway/loop"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/upstream"
)

const gatewayTOML = `
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
`

type echoIn struct {
	Text string `json:"text"`
}

func echoServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text argument back."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	return s
}

func connect(ctx context.Context, s *mcp.Server) (*mcp.ClientSession, error) {
	st, ct := mcp.NewInMemoryTransports()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		return nil, err
	}
	return mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
}

type result struct {
	calls    int
	elapsed  time.Duration
	p50, p99 time.Duration
}

func (r result) rate() float64 { return float64(r.calls) / r.elapsed.Seconds() }

// drive makes n calls of tool spread over c concurrent callers (each with
// its own session from open) and measures each call.
func drive(ctx context.Context, open func() (*mcp.ClientSession, error), tool string, n, c int) (result, error) {
	sessions := make([]*mcp.ClientSession, c)
	for i := range sessions {
		cs, err := open()
		if err != nil {
			return result{}, err
		}
		defer cs.Close()
		sessions[i] = cs
	}
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for _, cs := range sessions {
		wg.Go(func() {
			p := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "hello, gateway"}}
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				t0 := time.Now()
				res, err := cs.CallTool(ctx, p)
				lat[i] = time.Since(t0)
				if err == nil && res.IsError {
					err = fmt.Errorf("tool error: %v", res.Content)
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	if err, _ := firstErr.Load().(error); err != nil {
		return result{}, err
	}
	slices.Sort(lat)
	return result{calls: n, elapsed: el, p50: lat[n/2], p99: lat[n*99/100]}, nil
}

func main() {
	n := flag.Int("n", 5000, "calls per measurement")
	c := flag.Int("c", 8, "concurrent callers for the throughput measurement")
	ledgerDir := flag.String("ledger", "", "ledger directory (default a fresh temporary directory on disk)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench/gateway:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(*n, *c, *ledgerDir); err != nil {
		fmt.Fprintln(os.Stderr, "bench/gateway:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(n, c int, ledgerDir string) error {
	ctx := context.Background()
	if ledgerDir == "" {
		d, err := os.MkdirTemp("", "bench-gateway-ledger-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		ledgerDir = d
	}
	led, err := audit.Open(ledgerDir, audit.Options{})
	if err != nil {
		return err
	}
	defer led.Close()
	cfg, err := config.Parse("bench.toml", []byte(gatewayTOML))
	if err != nil {
		return err
	}
	up := echoServer()
	inproc := func(ctx context.Context) (mcp.Transport, error) {
		st, ct := mcp.NewInMemoryTransports()
		if _, err := up.Connect(context.WithoutCancel(ctx), st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
	l, err := loop.New(ctx, cfg, loop.Deps{
		Dial:   loop.StandardDialer(cfg, upstream.Deps{}, map[string]func(context.Context) (mcp.Transport, error){"echo": inproc}),
		Ledger: led,
	})
	if err != nil {
		return err
	}
	defer l.Close()
	p, err := principal.New("bench", "agent", principal.ReviewsRead)
	if err != nil {
		return err
	}
	direct := func() (*mcp.ClientSession, error) { return connect(ctx, up) }
	governed := func() (*mcp.ClientSession, error) { return connect(ctx, l.NewServer(ctx, p)) }

	// Warm up both paths (schema caches, the ledger's first segment).
	if _, err := drive(ctx, direct, "echo", 200, 1); err != nil {
		return err
	}
	if _, err := drive(ctx, governed, "echo__echo", 200, 1); err != nil {
		return err
	}
	type row struct {
		name string
		d, g result
	}
	var rows []row
	for _, conc := range []int{1, c} {
		d, err := drive(ctx, direct, "echo", n, conc)
		if err != nil {
			return fmt.Errorf("direct: %w", err)
		}
		g, err := drive(ctx, governed, "echo__echo", n, conc)
		if err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
		rows = append(rows, row{fmt.Sprintf("%d caller(s)", conc), d, g})
	}
	fmt.Printf("tools/call, in-process echo upstream, %d calls per row, ledger in %s (fsync on)\n", n, ledgerDir)
	fmt.Printf("%-12s %12s %12s %12s %12s %12s %12s %12s %10s\n", "", "direct/s", "gateway/s", "direct p50", "gateway p50", "overhead p50", "direct p99", "gateway p99", "ratio")
	for _, r := range rows {
		fmt.Printf("%-12s %12.0f %12.0f %12s %12s %12s %12s %12s %9.0f%%\n", r.name, r.d.rate(), r.g.rate(),
			r.d.p50.Round(time.Microsecond), r.g.p50.Round(time.Microsecond), (r.g.p50 - r.d.p50).Round(time.Microsecond),
			r.d.p99.Round(time.Microsecond), r.g.p99.Round(time.Microsecond), 100*r.g.rate()/r.d.rate())
	}
	rep, err := audit.Verify(ledgerDir, led.PublicKey())
	if err != nil {
		return err
	}
	fmt.Printf("ledger: %d records, broken=%v\n", rep.Records, rep.Broken)
	return nil
}
