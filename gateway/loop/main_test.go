//lint:file-ignore SA1019 sampling, elicitation, roots and logging are part of MCP 2025-11-25, the revision bastion targets and must relay; deprecated only from 2026-07-28.

package loop_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tetratelabs/wazero"

	"github.com/bastion-mcp/bastion/audit"
	"github.com/bastion-mcp/bastion/gateway/approval"
	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/gateway/loop"
	"github.com/bastion-mcp/bastion/gateway/pin"
	"github.com/bastion-mcp/bastion/internal/testmcp"
	"github.com/bastion-mcp/bastion/internal/testmcp/wasmcache"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/upstream"
)

// Built once per test binary by TestMain.
var (
	nativeBin string // internal/testmcp/cmd/testmcp for this machine
	wasmBin   string // the same for GOOS=wasip1 GOARCH=wasm
	buildErr  error
	wasmCache wazero.CompilationCache
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "loop-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bins, err := testmcp.Build(dir, true)
	nativeBin, wasmBin, buildErr = bins.Native, bins.Wasm, err
	if buildErr == nil {
		wasmCache, buildErr = wasmcache.Warm("bastion-loop-test-wazero", wasmBin)
	}
	return m.Run()
}

// bundle is one gateway under test with its real ledger.
type bundle struct {
	loop   *loop.Loop
	ledger *audit.Ledger
	dir    string // the ledger's directory
	reg    *prometheus.Registry
}

type setupOpts struct {
	base      upstream.Deps
	inProcess map[string]func(context.Context) (mcp.Transport, error)
	// forPrincipal is loop.Deps.ForPrincipal.
	forPrincipal map[string]loop.PrincipalServer
	approvals    approval.Queue
	pins         pin.Store // nil: in memory
	// ledgerDir is where the ledger lives ("" for a fresh temporary
	// directory), opened with ledgerOpts.
	ledgerDir  string
	ledgerOpts audit.Options
	log        *slog.Logger
}

// setup parses toml (with %BIN% and %WASM% replaced by the test server's
// paths), opens a real ledger and starts the loop.
func setup(t testing.TB, toml string, o setupOpts) *bundle {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	toml = strings.NewReplacer("%BIN%", nativeBin, "%WASM%", wasmBin).Replace(toml)
	cfg, err := config.Parse("test.toml", []byte(toml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if cfg.Gateway.StartupWait == 0 {
		// Tests expect every upstream that can start to be listed at New,
		// however loaded the machine (the default bound is for operators).
		cfg.Gateway.StartupWait = config.Duration(30 * time.Second)
	}
	dir := o.ledgerDir
	if dir == "" {
		dir = t.TempDir()
	}
	lo := o.ledgerOpts
	if lo.CheckpointInterval == 0 {
		lo.CheckpointInterval = -1
	}
	led, err := audit.Open(dir, lo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	if o.base.Backoff.Min == 0 {
		o.base.Backoff = upstream.Backoff{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond}
	}
	o.base.WasmCache = wasmCache
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := loop.New(ctx, cfg, loop.Deps{
		Dial:         loop.StandardDialer(cfg, o.base, o.inProcess),
		Ledger:       led,
		Metrics:      reg,
		Approvals:    o.approvals,
		ForPrincipal: o.forPrincipal,
		PinStore:     o.pins,
		Logger:       o.log,
	})
	if err != nil {
		t.Fatalf("loop.New: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return &bundle{loop: l, ledger: led, dir: dir, reg: reg}
}

// inProcess is the Connect of an in-process upstream: each session is a
// server from newServer on one end of an upstream.Pipe, as in production.
func inProcess(newServer func() *mcp.Server) func(context.Context) (mcp.Transport, error) {
	return func(ctx context.Context) (mcp.Transport, error) {
		return upstream.ServeInProcess(ctx, newServer())
	}
}

// clientOpts are a test client's handlers for server-to-client requests.
type clientOpts struct {
	name     string
	sample   func(p *mcp.CreateMessageParams) string
	elicit   string // the answer to any elicitation
	roots    []string
	progress chan<- float64
	changed  chan<- struct{}
	version  string // the protocol version offered; "" means the SDK's latest
}

// connect attaches a real SDK client to a fresh server for p.
func (b *bundle) connect(t testing.TB, p principal.Principal, co clientOpts) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	srv := b.loop.NewServer(ctx, p)
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	opts := &mcp.ClientOptions{}
	if co.sample != nil {
		opts.CreateMessageHandler = func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "test", Role: "assistant", Content: &mcp.TextContent{Text: co.sample(r.Params)}}, nil
		}
	}
	if co.elicit != "" {
		opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": co.elicit}}, nil
		}
	}
	if co.progress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			co.progress <- r.Params.Progress
		}
	}
	if co.changed != nil {
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case co.changed <- struct{}{}:
			default:
			}
		}
	}
	name := co.name
	if name == "" {
		name = "test-client"
	}
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, opts)
	for _, r := range co.roots {
		c.AddRoots(&mcp.Root{URI: r})
	}
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: co.version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls tool and returns the result's text and isError.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s): protocol error %v", tool, err)
	}
	return text(res), res.IsError
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// toolNames lists the tools the client sees.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// records reads the ledger's outcome records: one per governed request.
// The attempt records that precede dispatch are checked here, on every
// read: each outcome that names an attempt completes exactly that record
// (same request id, principal, method and tool), each attempt is completed
// at most once, and every record has a request id.
func (b *bundle) records(t *testing.T) []audit.Record {
	t.Helper()
	var out []audit.Record
	attempts := map[uint64]audit.Record{}
	for _, r := range b.allRecords(t) {
		if r.RequestID == "" {
			t.Errorf("record %d has no request id", r.Seq)
		}
		if r.Decision == audit.Attempting {
			attempts[r.Seq] = r
			continue
		}
		if r.Attempt != 0 {
			a, ok := attempts[r.Attempt]
			if !ok || a.RequestID != r.RequestID || a.Principal != r.Principal || a.Method != r.Method || a.Tool != r.Tool {
				t.Errorf("record %d completes attempt %d, which is not its attempt (%+v)", r.Seq, r.Attempt, a)
			}
			delete(attempts, r.Attempt)
		}
		out = append(out, r)
	}
	return out
}

// allRecords reads the whole ledger, attempt records included.
func (b *bundle) allRecords(t *testing.T) []audit.Record {
	t.Helper()
	var out []audit.Record
	err := audit.Tail(context.Background(), b.dir, audit.TailOptions{}, func(r audit.Record) error {
		out = append(out, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// verify checks the ledger's chain.
func (b *bundle) verify(t *testing.T) {
	t.Helper()
	rep, err := audit.Verify(b.dir, b.ledger.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Broken {
		t.Fatalf("ledger does not verify: %+v", rep)
	}
}

var alice = must(principal.New("acme", "alice", principal.ReviewsRead))
var bob = must(principal.New("acme", "bob"))

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// counter reads bastion_gateway_calls_total for one label set.
func (b *bundle) counter(t *testing.T, server, tool, decision, gate string) float64 {
	t.Helper()
	return b.metric(t, "bastion_gateway_calls_total", map[string]string{"server": server, "tool": tool, "decision": decision, "gate": gate})
}

// metric reads the counter or gauge name for the series matching want's
// labels (others may differ), summed; 0 when it has no such series.
func (b *bundle) metric(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := b.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := want[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			if g := m.GetGauge(); g != nil {
				sum += g.GetValue()
				continue
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}
