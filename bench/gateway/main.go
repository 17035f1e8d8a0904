// Command gateway measures what the governing gateway costs per tools/call:
// the same upstream is called directly and through the full loop (routing,
// policy, pins, rate limit, inspection and the fsynced audit ledger), in one
// run, alternating rounds, sequentially (latency) and with concurrent callers
// (throughput). It prints, per upstream kind and row, both throughputs and
// their ratio, both p50s and p99s, and the p50 overhead.
//
// Three upstream kinds, selected with -upstreams:
//
//   - inproc: a zero-work echo server in this process over in-memory
//     transports; the gateway's cost with nothing to hide it.
//   - stdio: the project's testmcp binary as a child process. Direct is one
//     SDK client over mcp.CommandTransport to one child; the gateway dials
//     its own child of the same binary (kind "stdio").
//   - http: testmcp behind bastion's edge on loopback Streamable HTTP (the
//     server runs in this process, the wire is real TCP). Direct is one SDK
//     client over mcp.StreamableClientTransport; the gateway dials it
//     through the egress guard (kind "http", allow_private).
//
// Out of process, an upstream holds one session: the concurrent direct
// callers share one session, as the gateway's callers share its one
// upstream session; each gateway caller still has its own gateway session.
//
// The ledger goes to a fresh directory under the working directory by
// default, not under $TMPDIR, which is often tmpfs: fsync there is free and
// the numbers would flatter the gateway. -ledger DIR puts it elsewhere; the
// file system type is printed either way.
//
//	go run ./bench/gateway [-n 5000] [-c 8] [-rounds 5] [-upstreams inproc,stdio,http] [-ledger DIR]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
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

// gatewayTOML is the configuration every kind runs under, all gates on;
// %SERVER% is replaced by the kind's [server.echo] block.
const gatewayTOML = `
[server.echo]
%SERVER%

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

func newClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
}

// connect opens a client session to s offering revision version (empty:
// the SDK's latest).
func connect(ctx context.Context, s *mcp.Server, version string) (*mcp.ClientSession, error) {
	st, ct := mcp.NewInMemoryTransports()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		return nil, err
	}
	return newClient().Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
}

// opener gives a caller its session and what to do with it afterwards:
// close a session of its own, or nothing for a shared one.
type opener func() (cs *mcp.ClientSession, release func(), err error)

// own opens a fresh session per caller.
func own(open func() (*mcp.ClientSession, error)) opener {
	return func() (*mcp.ClientSession, func(), error) {
		cs, err := open()
		if err != nil {
			return nil, nil, err
		}
		return cs, func() { cs.Close() }, nil
	}
}

// shared hands every caller the same session.
func shared(cs *mcp.ClientSession) opener {
	return func() (*mcp.ClientSession, func(), error) { return cs, func() {}, nil }
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
// the session open gives it) and measures each call.
func drive(ctx context.Context, open opener, tool string, n, c int) (result, error) {
	sessions := make([]*mcp.ClientSession, c)
	for i := range sessions {
		cs, release, err := open()
		if err != nil {
			return result{}, err
		}
		defer release()
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
	version := flag.String("protocol", upstream.DefaultProtocolVersion, "MCP revision every client offers, direct and through the gateway (empty: the SDK's latest); from 2026-07-28 the gateway forwards over a per-revision upstream session, and bastion's edge serves that revision statelessly, building a server per request")
	kinds := flag.String("upstreams", "inproc,stdio,http", "comma-separated upstream kinds to measure: inproc, stdio, http")
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
	if err := run(*n, max(1, *c), max(1, min(*rounds, *n)), *kinds, *version, *ledgerDir); err != nil {
		fmt.Fprintln(os.Stderr, "bench/gateway:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(n, c, rounds int, kinds, version, ledgerDir string) error {
	ctx := context.Background()
	var selected []string
	for k := range strings.SplitSeq(kinds, ",") {
		k = strings.TrimSpace(k)
		if !known(k) {
			return fmt.Errorf("unknown upstream kind %q (inproc, stdio, http)", k)
		}
		if !slices.Contains(selected, k) {
			selected = append(selected, k)
		}
	}
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
	p, err := principal.New("bench", "agent", principal.ReviewsRead)
	if err != nil {
		return err
	}
	offered := version
	if offered == "" {
		offered = "the SDK's latest"
	}
	fmt.Printf("tools/call, %d calls per row in %d alternating rounds, clients offer %s, ledger in %s (%s, fsync on)\n", n, rounds, offered, ledgerDir, fsType(ledgerDir))
	for _, k := range selected {
		t, err := newTarget(ctx, k, c, version)
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		err = measure(ctx, t, timed, p, n, c, rounds, version)
		t.close()
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	rep, err := audit.Verify(ledgerDir, led.PublicKey())
	if err != nil {
		return err
	}
	fmt.Printf("\nledger: %d records, broken=%v\n", rep.Records, rep.Broken)
	return nil
}

// measure runs one kind's rows through a gateway of its own (sharing the
// ledger) and prints them.
func measure(ctx context.Context, t target, timed *timedLedger, p principal.Principal, n, c, rounds int, version string) error {
	cfg, err := config.Parse("bench.toml", []byte(strings.Replace(gatewayTOML, "%SERVER%", t.server, 1)))
	if err != nil {
		return err
	}
	l, err := loop.New(ctx, cfg, loop.Deps{Dial: loop.StandardDialer(cfg, t.deps, t.inProcess), Ledger: timed})
	if err != nil {
		return err
	}
	defer l.Close()
	governed := own(func() (*mcp.ClientSession, error) { return connect(ctx, l.NewServer(ctx, p), version) })

	// Warm up both paths (schema caches, connection pools, the ledger's
	// first segment).
	if _, err := drive(ctx, t.direct, "echo", 200, c); err != nil {
		return fmt.Errorf("direct: %w", err)
	}
	if _, err := drive(ctx, governed, "echo__echo", 200, c); err != nil {
		return fmt.Errorf("gateway: %w", err)
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
			rd, err := drive(ctx, t.direct, "echo", k, conc)
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
	fmt.Printf("\n%s\n", t.title)
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
