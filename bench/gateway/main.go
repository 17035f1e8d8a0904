// Command gateway measures what the governing gateway costs per tools/call:
// the same upstream is called directly and through the full loop (routing,
// policy, pins, rate limit, inspection and the fsynced audit ledger), in one
// run, alternating rounds, sequentially (latency) and at each level of
// concurrent callers given (throughput). It prints, per upstream kind and
// row, the throughputs and their ratios, the p50s and p99s, and the p50
// overheads; then each path's peak throughput over the rows and the ratios
// of the peaks, a path's throughput being the most calls per second it
// sustains, at whatever concurrency that takes.
//
// A third path is the baseline that separates the gateway's own cost from
// the cost of being a hop at all: a relay, an SDK server whose one tool
// forwards each call over an SDK client session to the same upstream, the
// way the gateway does, with nothing in between. gateway/relay is what
// bastion's gates and ledger cost; relay/direct is what any MCP hop built
// on the SDK costs on this machine.
//
// Four in-process upstream kinds, selected with -upstreams:
//
//   - inproc: a zero-work echo server in this process over in-memory
//     transports; the gateway's cost with nothing to hide it.
//   - review: the gateway's first upstream as `bastion serve --gateway` runs
//     it, the design-review server in this process on a review.Service over
//     SQLite, answering design_review_get for a queued job (an agent's poll).
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
// the numbers would flatter the gateway. -ledger DIR puts it elsewhere, and
// -workdir DIR every fresh directory (the process kind's gateways' ledgers
// too); the file system type is printed either way.
//
// Besides throughput and latency, each row prints the whole process's CPU
// time and heap allocation per call; -cpuprofile samples carry the pprof
// label path=direct|relay|gateway, so `go tool pprof -tagfocus path=gateway`
// shows the gateway's share alone.
//
// A fifth kind, process, measures from outside: `bastion gateway` as a
// process of its own in front of testmcp on loopback HTTP, its CPU per call
// that process's alone (utime+stime over the window / calls). With -ab REF
// a gateway built from git REF (checked out with git worktree into a
// temporary directory) runs beside it, and every round drives direct, this
// build and the base in turn, so a regression shows as a same-run ratio.
//
//	go run ./bench/gateway [-n 5000] [-c 16] [-rounds 5] [-upstreams inproc,review,stdio,http,process] [-ab REF] [-bastion BIN] [-ledger DIR] [-workdir DIR] [-cpuprofile F] [-memprofile F]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
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
match = ["echo__%TOOL%"]
args = [{ path = "%ARG%", exists = true }]

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
	alloc   uint64          // bytes this process allocated on the heap over the measurement
	lat     []time.Duration // one per call
}

// cpuPerCall is the whole process's CPU time per call: upstream, client and
// (for the gateway) the gateway and its ledger.
func (r result) cpuPerCall() time.Duration { return r.cpu / time.Duration(max(1, len(r.lat))) }

// allocPerCall is the whole process's heap allocation per call, in bytes;
// the garbage collector's share of the CPU follows it.
func (r result) allocPerCall() uint64 { return r.alloc / uint64(max(1, len(r.lat))) }

func (r result) rate() float64 { return float64(len(r.lat)) / r.elapsed.Seconds() }

func (r result) quantile(q float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(r.lat))
	return s[int(q*float64(len(s)-1))]
}

// add merges another round of the same measurement into r.
func (r *result) add(o result) {
	r.elapsed += o.elapsed
	r.cpu += o.cpu
	r.alloc += o.alloc
	r.lat = append(r.lat, o.lat...)
}

// drive makes n calls of tool spread over c concurrent callers (each with
// the session open gives it) and measures each call.
// Its goroutines, and those the sessions it opens start, carry the pprof
// label path=PATH (direct, relay or gateway), so a profile can be split by
// path.
func drive(ctx context.Context, path string, open opener, tool string, args map[string]any, n, c int) (res result, err error) {
	pprof.Do(ctx, pprof.Labels("path", path), func(ctx context.Context) { res, err = drive1(ctx, open, tool, args, n, c) })
	return res, err
}

func drive1(ctx context.Context, open opener, tool string, args map[string]any, n, c int) (result, error) {
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
	start, cpu0, alloc0 := time.Now(), cpuTime(), heapAllocated()
	for _, cs := range sessions {
		wg.Go(func() {
			p := &mcp.CallToolParams{Name: tool, Arguments: args}
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
	el, cpu, alloc := time.Since(start), cpuTime()-cpu0, heapAllocated()-alloc0
	if err, _ := firstErr.Load().(error); err != nil {
		return result{}, err
	}
	return result{elapsed: el, cpu: cpu, alloc: alloc, lat: lat}, nil
}

// options is one run's settings, the command's flags.
type options struct {
	n, rounds int
	conc      []int  // the concurrent rows' callers, ascending
	kinds     string // comma-separated upstream kinds
	version   string // the revision clients offer; "" the SDK's latest
	ledgerDir string // "" means a fresh directory under workDir, removed afterwards
	workDir   string // where fresh directories go; "" means the working directory
	// The process kind's builds: bastionBin is this build's binary ("" means
	// built from the module being run), abRef a git ref whose build runs
	// beside it ("" none).
	bastionBin, abRef string
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 5000, "calls per measurement")
	flag.IntVar(&o.rounds, "rounds", 5, "alternate direct and gateway this many times per row, n/rounds calls each, so load from elsewhere on the machine hits both alike")
	o.conc = []int{16}
	flag.Func("c", "comma-separated numbers of concurrent callers, a throughput row each besides the sequential one (default 16)", func(v string) (err error) {
		o.conc, err = parseLevels(v)
		return err
	})
	flag.StringVar(&o.version, "protocol", upstream.DefaultProtocolVersion, "MCP revision every client offers, direct and through the gateway (empty: the SDK's latest); from 2026-07-28 the gateway forwards over a per-revision upstream session, and bastion's edge serves that revision statelessly, building a server per request")
	flag.StringVar(&o.kinds, "upstreams", "inproc,review,stdio,http,process", "comma-separated upstream kinds to measure: inproc, review, stdio, http, process (`bastion gateway` as its own process)")
	flag.StringVar(&o.bastionBin, "bastion", "", "the bastion binary the process kind runs (default: built from this checkout)")
	flag.StringVar(&o.abRef, "ab", "", "git ref of a base build: the process kind runs it beside this build, alternating rounds, and prints this/base")
	flag.StringVar(&o.ledgerDir, "ledger", "", "ledger directory of the in-process kinds (default a fresh directory under -workdir, removed afterwards)")
	flag.StringVar(&o.workDir, "workdir", "", "where the fresh ledger, data and gateway-process directories go (default the working directory); /dev/shm takes the disk out of every kind's figures, the process kind's included")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file (samples carry the label path=direct|relay|gateway)")
	memProfile := flag.String("memprofile", "", "write an allocation profile of the whole run to this file")
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
	if *memProfile != "" {
		runtime.MemProfileRate = 64 << 10
	}
	o.rounds = max(1, min(o.rounds, o.n))
	if _, err := run(context.Background(), os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench/gateway:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	if *memProfile != "" {
		if err := writeHeapProfile(*memProfile); err != nil {
			fmt.Fprintln(os.Stderr, "bench/gateway:", err)
			os.Exit(1)
		}
	}
}

// run measures every selected kind, prints the tables to w, and verifies
// the ledger all of them wrote.
func run(ctx context.Context, w io.Writer, o options) (audit.Report, error) {
	var selected []string
	for k := range strings.SplitSeq(o.kinds, ",") {
		k = strings.TrimSpace(k)
		if !known(k) {
			return audit.Report{}, fmt.Errorf("unknown upstream kind %q (inproc, review, stdio, http, process)", k)
		}
		if !slices.Contains(selected, k) {
			selected = append(selected, k)
		}
	}
	if o.workDir == "" {
		o.workDir = "."
	}
	if o.ledgerDir == "" {
		d, err := os.MkdirTemp(o.workDir, "bench-gateway-ledger-")
		if err != nil {
			return audit.Report{}, err
		}
		defer os.RemoveAll(d)
		o.ledgerDir = d
	}
	timed := &timedLedger{}
	led, err := audit.Open(o.ledgerDir, audit.Options{OnCommit: timed.committed})
	if err != nil {
		return audit.Report{}, err
	}
	defer led.Close()
	timed.Ledger = led
	p, err := principal.New("bench", "agent", principal.ReviewsRead, principal.ReviewsWrite)
	if err != nil {
		return audit.Report{}, err
	}
	offered := o.version
	if offered == "" {
		offered = "the SDK's latest"
	}
	fmt.Fprintf(w, "tools/call, %d calls per row in %d alternating rounds, clients offer %s, ledger in %s (%s, fsync on)\n", o.n, o.rounds, offered, o.ledgerDir, fsType(o.ledgerDir))
	for _, k := range selected {
		if k == "process" {
			if err := measureProcess(ctx, w, o); err != nil {
				return audit.Report{}, fmt.Errorf("%s: %w", k, err)
			}
			continue
		}
		t, err := newTarget(ctx, k, o, p)
		if err != nil {
			return audit.Report{}, fmt.Errorf("%s: %w", k, err)
		}
		err = measure(ctx, w, t, timed, p, o)
		t.close()
		if err != nil {
			return audit.Report{}, fmt.Errorf("%s: %w", k, err)
		}
	}
	rep, err := audit.Verify(o.ledgerDir, led.PublicKey())
	if err != nil {
		return rep, err
	}
	fmt.Fprintf(w, "\nledger: %d records, broken=%v\n", rep.Records, rep.Broken)
	return rep, nil
}

// measure runs one kind's rows through a gateway of its own (sharing the
// ledger) and prints them.
func measure(ctx context.Context, w io.Writer, t target, timed *timedLedger, p principal.Principal, o options) error {
	toml := strings.NewReplacer("%SERVER%", t.server, "%TOOL%", t.tool, "%ARG%", t.argRule).Replace(gatewayTOML)
	cfg, err := config.Parse("bench.toml", []byte(toml))
	if err != nil {
		return err
	}
	l, err := loop.New(ctx, cfg, loop.Deps{Dial: loop.StandardDialer(cfg, t.deps, t.inProcess), ForPrincipal: t.forPrincipal, Ledger: timed})
	if err != nil {
		return err
	}
	defer l.Close()
	governed := own(func() (*mcp.ClientSession, error) { return connect(ctx, l.NewServer(ctx, p), o.version) })
	relayUp, err := t.dialUp(ctx)
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	upCS, err := newClient().Connect(ctx, relayUp, &mcp.ClientSessionOptions{ProtocolVersion: o.version})
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	defer upCS.Close()
	relayed := own(func() (*mcp.ClientSession, error) { return connect(ctx, relayServer(upCS, t.tool), o.version) })

	// Warm up every path (schema caches, connection pools, the ledger's
	// first segment).
	for _, path := range []struct {
		name string
		open opener
		tool string
	}{{"direct", t.direct, t.tool}, {"relay", relayed, "echo__" + t.tool}, {"gateway", governed, "echo__" + t.tool}} {
		if _, err := drive(ctx, path.name, path.open, path.tool, t.args, warmup(o.n), o.callers()); err != nil {
			return fmt.Errorf("%s: %w", path.name, err)
		}
	}
	type row struct {
		name    string
		d, r, g result
		app     result // the ledger's Appends during the gateway rounds
		commits result // its durable writes (group commits) meanwhile
		records int    // the records those writes held
	}
	var rows []row
	for _, conc := range o.levels() {
		var d, r, g, app, commits result
		records := 0
		for i := range o.rounds {
			k := o.n/o.rounds + boolInt(i < o.n%o.rounds)
			rd, err := drive(ctx, "direct", t.direct, t.tool, t.args, k, conc)
			if err != nil {
				return fmt.Errorf("direct: %w", err)
			}
			rr, err := drive(ctx, "relay", relayed, "echo__"+t.tool, t.args, k, conc)
			if err != nil {
				return fmt.Errorf("relay: %w", err)
			}
			timed.start()
			rg, err := drive(ctx, "gateway", governed, "echo__"+t.tool, t.args, k, conc)
			if err != nil {
				return fmt.Errorf("gateway: %w", err)
			}
			d.add(rd)
			r.add(rr)
			g.add(rg)
			a, c, n := timed.stop()
			app.add(a)
			commits.add(c)
			records += n
		}
		rows = append(rows, row{fmt.Sprintf("%d caller(s)", conc), d, r, g, app, commits, records})
	}
	us := func(d time.Duration) string { return d.Round(time.Microsecond).String() }
	fmt.Fprintf(w, "\n%s\n", t.title)
	fmt.Fprintf(w, "%-12s %10s %10s %10s %16s %14s %16s\n", "calls/s", "direct", "relay", "gateway", "gateway/direct", "relay/direct", "gateway/relay")
	for _, r := range rows {
		fmt.Fprintf(w, "%-12s %10.0f %10.0f %10.0f %15.0f%% %13.0f%% %15.0f%%\n", r.name, r.d.rate(), r.r.rate(), r.g.rate(),
			100*r.g.rate()/r.d.rate(), 100*r.r.rate()/r.d.rate(), 100*r.g.rate()/r.r.rate())
	}
	// A path's throughput is its best row: the gateway's group commit, for
	// one, batches more as callers grow, where direct may peak earlier.
	var pd, pr, pg float64
	for _, r := range rows {
		pd, pr, pg = max(pd, r.d.rate()), max(pr, r.r.rate()), max(pg, r.g.rate())
	}
	fmt.Fprintf(w, "%-12s %10.0f %10.0f %10.0f %15.0f%% %13.0f%% %15.0f%%\n", "peak", pd, pr, pg, 100*pg/pd, 100*pr/pd, 100*pg/pr)
	fmt.Fprintf(w, "%-12s %10s %10s %10s %16s %14s %16s\n", "p50 / p99", "direct", "relay", "gateway", "gateway-direct", "relay-direct", "gateway-relay")
	for _, r := range rows {
		dp, rp, gp := r.d.quantile(0.5), r.r.quantile(0.5), r.g.quantile(0.5)
		fmt.Fprintf(w, "%-12s %10s %10s %10s %16s %14s %16s\n", r.name, us(dp), us(rp), us(gp), us(gp-dp), us(rp-dp), us(gp-rp))
		fmt.Fprintf(w, "%-12s %10s %10s %10s\n", "", us(r.d.quantile(0.99)), us(r.r.quantile(0.99)), us(r.g.quantile(0.99)))
	}
	for _, r := range rows {
		fmt.Fprintf(w, "%-12s CPU per call: direct %s, relay %s, gateway %s; heap per call: direct %d KB, relay %d KB, gateway %d KB; ledger Append in the gateway: p50 %s, p99 %s (%d appends)\n", r.name,
			us(r.d.cpuPerCall()), us(r.r.cpuPerCall()), us(r.g.cpuPerCall()), r.d.allocPerCall()>>10, r.r.allocPerCall()>>10, r.g.allocPerCall()>>10,
			us(r.app.quantile(0.5)), us(r.app.quantile(0.99)), len(r.app.lat))
		// The disk's own share: each durable write's write+fsync, and how
		// many records group commit put in each.
		fmt.Fprintf(w, "%-12s durable writes: %d for %d records (%.1f per write), write+fsync p50 %s, p99 %s\n", "",
			len(r.commits.lat), r.records, float64(r.records)/float64(max(1, len(r.commits.lat))),
			us(r.commits.quantile(0.5)), us(r.commits.quantile(0.99)))
	}
	return nil
}

// relayServer is the baseline a gateway is measured against besides the
// direct call: an SDK server whose one tool forwards every call to up over
// an SDK client session, the same two hops as the gateway with nothing of
// bastion in between (no gates, no inspection, no ledger). The forwarded
// call runs on a fresh context, so no per-request SDK state of the first
// hop reaches the second.
func relayServer(up *mcp.ClientSession, tool string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "relay", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo__" + tool, InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return up.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: req.Params.Arguments})
		})
	return s
}

// heapAllocated is the bytes this process has allocated on the heap so far.
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func writeHeapProfile(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// levels is the callers of each row: one, then o.conc.
func (o options) levels() []int {
	return append([]int{1}, slices.DeleteFunc(slices.Clone(o.conc), func(c int) bool { return c == 1 })...)
}

// callers is the most callers of any row.
func (o options) callers() int { return slices.Max(o.levels()) }

// maxCallers bounds -c: the http kind's direct callers share one session
// behind the edge, which admits at most 64 requests in flight per principal
// (the session's event stream is one of them).
const maxCallers = 60

// parseLevels reads -c: positive caller counts, comma-separated.
func parseLevels(v string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 || c > maxCallers {
			return nil, fmt.Errorf("%q is not a number of callers from 1 to %d", f, maxCallers)
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out, nil
}

// warmup is how many calls warm each path up before a kind's rows.
func warmup(n int) int { return min(200, n) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// timedLedger records how long each Append takes, to split the gateway's
// overhead into the durable write and everything else, and (through
// audit.Options.OnCommit) each group commit's write+fsync and records.
type timedLedger struct {
	*audit.Ledger
	mu      sync.Mutex
	lat     []time.Duration
	commits []time.Duration
	records int
	t0      time.Time
}

// committed is the ledger's OnCommit.
func (t *timedLedger) committed(records int, took time.Duration, err error) {
	if err != nil {
		return
	}
	t.mu.Lock()
	t.commits = append(t.commits, took)
	t.records += records
	t.mu.Unlock()
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
	t.lat, t.commits, t.records, t.t0 = nil, nil, 0, time.Now()
	t.mu.Unlock()
}

// stop returns the Appends and the durable writes since start, and the
// records those writes held.
func (t *timedLedger) stop() (appends, commits result, records int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	el := time.Since(t.t0)
	return result{elapsed: el, lat: t.lat}, result{elapsed: el, lat: t.commits}, t.records
}
