// Command gateway measures what the governing gateway costs per tools/call:
// the same in-process echo upstream is called directly and through the full
// loop (routing, policy, pins, rate limit, inspection and the fsynced audit
// ledger), in one run, sequentially (latency) and with concurrent callers
// (throughput). It prints, per row, both throughputs and their ratio, both
// p50s and p99s, and the p50 overhead.
//
// The ledger goes to a fresh directory under the working directory by
// default, not under $TMPDIR, which is often tmpfs: fsync there is free and
// the numbers would flatter the gateway. -ledger DIR puts it elsewhere; the
// file system type is printed either way.
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
	elapsed time.Duration
	cpu     time.Duration   // process CPU time (user+system) over the measurement
	lat     []time.Duration // one per call
}

// cpuPerCall is the whole process's CPU time per call: upstream, client and
// (for the gateway) the gateway and its ledger.
func (r result) cpuPerCall() time.Duration { return r.cpu / time.Duration(max(1, len(r.lat))) }

func (r result) rate() float64 { return float64(len(r.lat)) / r.elapsed.Seconds() }

func (r result) quantile(q float64) time.Duration {
	s := slices.Sorted(slices.Values(r.lat))
	return s[int(q*float64(len(s)-1))]
}

// add merges another round of the same measurement into r.
func (r *result) add(o result) {
	r.elapsed += o.elapsed
	r.cpu += o.cpu
	r.lat = append(r.lat, o.lat...)
}

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
	start, cpu0 := time.Now(), cpuTime()
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
	el, cpu := time.Since(start), cpuTime()-cpu0
	if err, _ := firstErr.Load().(error); err != nil {
		return result{}, err
	}
	return result{elapsed: el, cpu: cpu, lat: lat}, nil
}

func main() {
	n := flag.Int("n", 5000, "calls per measurement")
	rounds := flag.Int("rounds", 5, "alternate direct and gateway this many times per row, n/rounds calls each, so load from elsewhere on the machine hits both alike")
	c := flag.Int("c", 8, "concurrent callers for the throughput measurement")
	ledgerDir := flag.String("ledger", "", "ledger directory (default a fresh directory under the working directory, removed afterwards)")
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
	if err := run(*n, *c, max(1, min(*rounds, *n)), *ledgerDir); err != nil {
		fmt.Fprintln(os.Stderr, "bench/gateway:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(n, c, rounds int, ledgerDir string) error {
	ctx := context.Background()
	if ledgerDir == "" {
		d, err := os.MkdirTemp(".", "bench-gateway-ledger-")
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
	timed := &timedLedger{Ledger: led}
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
		Ledger: timed,
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
		app  result // the ledger's Appends during the gateway rounds
	}
	var rows []row
	for _, conc := range []int{1, c} {
		var d, g, app result
		for i := range rounds {
			k := n/rounds + boolInt(i < n%rounds)
			rd, err := drive(ctx, direct, "echo", k, conc)
			if err != nil {
				return fmt.Errorf("direct: %w", err)
			}
			timed.start()
			rg, err := drive(ctx, governed, "echo__echo", k, conc)
			if err != nil {
				return fmt.Errorf("gateway: %w", err)
			}
			d.add(rd)
			g.add(rg)
			app.add(timed.stop())
		}
		rows = append(rows, row{fmt.Sprintf("%d caller(s)", conc), d, g, app})
	}
	fmt.Printf("tools/call, in-process echo upstream, %d calls per row, ledger in %s (%s, fsync on)\n", n, ledgerDir, fsType(ledgerDir))
	fmt.Printf("%-12s %12s %12s %12s %12s %12s %12s %12s %10s\n", "", "direct/s", "gateway/s", "direct p50", "gateway p50", "overhead p50", "direct p99", "gateway p99", "ratio")
	for _, r := range rows {
		dp50, gp50 := r.d.quantile(0.5), r.g.quantile(0.5)
		fmt.Printf("%-12s %12.0f %12.0f %12s %12s %12s %12s %12s %9.0f%%\n", r.name, r.d.rate(), r.g.rate(),
			dp50.Round(time.Microsecond), gp50.Round(time.Microsecond), (gp50 - dp50).Round(time.Microsecond),
			r.d.quantile(0.99).Round(time.Microsecond), r.g.quantile(0.99).Round(time.Microsecond), 100*r.g.rate()/r.d.rate())
	}
	for _, r := range rows {
		fmt.Printf("%-12s CPU per call: direct %s, gateway %s; ledger Append inside the gateway: p50 %s, p99 %s (%d appends)\n", r.name,
			r.d.cpuPerCall().Round(time.Microsecond), r.g.cpuPerCall().Round(time.Microsecond),
			r.app.quantile(0.5).Round(time.Microsecond), r.app.quantile(0.99).Round(time.Microsecond), len(r.app.lat))
	}
	rep, err := audit.Verify(ledgerDir, led.PublicKey())
	if err != nil {
		return err
	}
	fmt.Printf("ledger: %d records, broken=%v\n", rep.Records, rep.Broken)
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// timedLedger records how long each Append takes, to split the gateway's
// overhead into the durable write and everything else.
type timedLedger struct {
	*audit.Ledger
	mu  sync.Mutex
	lat []time.Duration
	t0  time.Time
}

func (t *timedLedger) Append(ctx context.Context, e audit.Entry) (audit.Record, error) {
	t0 := time.Now()
	r, err := t.Ledger.Append(ctx, e)
	d := time.Since(t0)
	t.mu.Lock()
	t.lat = append(t.lat, d)
	t.mu.Unlock()
	return r, err
}

func (t *timedLedger) start() {
	t.mu.Lock()
	t.lat, t.t0 = nil, time.Now()
	t.mu.Unlock()
}

func (t *timedLedger) stop() result {
	t.mu.Lock()
	defer t.mu.Unlock()
	return result{elapsed: time.Since(t.t0), lat: t.lat}
}
