// Command mcpload is the remote edge's load benchmark: N concurrent MCP
// clients call design_review_get on one existing job over Streamable HTTP
// against the `bastion serve` composition (edge, PAT authentication, one MCP
// server per principal, review.Service over SQLite), and the same number of
// clients call a one-tool bare Go SDK server in the same run. It prints
// requests/s and p50/p99 latency for both, per wire, and their ratio.
//
// The bastion side is the production wiring of `bastion serve --dev` in this
// process, with the offline demo site as the reviewed target: the job read is
// a real completed review. All clients share one token (a job is readable by
// its submitter only), so they count against one principal's in-flight bound
// (edge.DefaultMaxInFlightPerPrincipal: 32 per CPU, at least 64); clients
// past it measure 429s.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/app"
	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/demo"
	"github.com/bastion-mcp/bastion/principal"
)

func main() {
	clients := flag.Int("clients", 8, "concurrent MCP clients")
	dur := flag.Duration("duration", 5*time.Second, "measuring time per target and wire")
	view := flag.String("view", "status", "design_review_get view (status, summary, findings)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run here")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "mcpload:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(*clients, *dur, *view); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "mcpload:", err)
		os.Exit(1)
	}
}

func run(clients int, dur time.Duration, view string) error {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	site, err := demo.StartSite(logger)
	if err != nil {
		return err
	}
	defer site.Close()
	dir, err := os.MkdirTemp("", "mcpload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	cfg := app.Config{
		DataDir: dir, Logger: logger,
		Demo: &app.Demo{Tenant: "dev", Host: demo.Host, StubAddr: demo.StubAddr, Site: site.Addr(), SPKI: site.SPKIHash()},
	}
	cfg.Review.PollAfter = 500 * time.Millisecond
	cfg.Review.FetchPollInterval = 100 * time.Millisecond
	a, err := app.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer a.Close(context.Background())
	if err := a.Start(ctx); err != nil {
		return err
	}
	token, _, err := auth.NewPATIssuer(a.Store, nil, nil).Create(ctx, "dev", "mcpload", principal.AllScopes(), time.Hour)
	if err != nil {
		return err
	}
	h, err := a.NewHTTP(app.ServeConfig{Addr: "127.0.0.1:0", AdminAddr: "-"})
	if err != nil {
		return err
	}
	bastionURL, stop, err := listen(h.Handler)
	if err != nil {
		return err
	}
	defer stop()
	bastionURL += "/mcp"

	jobID, err := completedJob(ctx, bastionURL, token)
	if err != nil {
		return err
	}
	bareURL, stopBare, err := listen(bareHandler())
	if err != nil {
		return err
	}
	defer stopBare()

	fmt.Printf("mcpload: %d clients, %s per run, design_review_get view=%s on job %s\n", clients, dur, view, jobID)
	args := map[string]any{"job_id": jobID, "view": view}
	for _, wire := range []string{"2025-11-25", "2026-07-28"} {
		b, err := load(ctx, bastionURL, token, wire, clients, dur, args)
		if err != nil {
			return fmt.Errorf("bastion %s: %w", wire, err)
		}
		path := "/stateful"
		if wire >= "2026-07-28" {
			path = "/stateless"
		}
		s, err := load(ctx, bareURL+path, "", wire, clients, dur, args)
		if err != nil {
			return fmt.Errorf("bare %s: %w", wire, err)
		}
		fmt.Printf("%s  bastion serve  %s\n", wire, b)
		fmt.Printf("%s  bare Go SDK    %s\n", wire, s)
		fmt.Printf("%s  ratio bastion/bare: %.2fx throughput, %.2fx p50, %.2fx p99\n", wire,
			b.rps/s.rps, float64(b.p50)/float64(s.p50), float64(b.p99)/float64(s.p99))
	}
	return nil
}

// listen serves h on a loopback port and returns its base URL.
func listen(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() { srv.Close() }, nil
}

// bareHandler is the baseline: the Go SDK's own Streamable HTTP handlers,
// one stateful and one stateless, over one shared server with a single
// trivial design_review_get tool.
func bareHandler() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	type in struct {
		JobID string `json:"job_id"`
		View  string `json:"view,omitempty"`
	}
	type out struct {
		JobID  string `json:"job_id"`
		Status string `json:"status"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "design_review_get"}, func(_ context.Context, _ *mcp.CallToolRequest, i in) (*mcp.CallToolResult, out, error) {
		return nil, out{JobID: i.JobID, Status: "completed"}, nil
	})
	get := func(*http.Request) *mcp.Server { return srv }
	mux := http.NewServeMux()
	mux.Handle("/stateful", mcp.NewStreamableHTTPHandler(get, nil))
	mux.Handle("/stateless", mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true}))
	return mux
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func connect(ctx context.Context, url, token, wire string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpload", Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: wire})
}

// completedJob submits a review of the demo site and waits for it.
func completedJob(ctx context.Context, url, token string) (string, error) {
	cs, err := connect(ctx, url, token, "2025-11-25")
	if err != nil {
		return "", err
	}
	defer cs.Close()
	call := func(tool string, args map[string]any) (map[string]any, error) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			return nil, err
		}
		raw, _ := json.Marshal(res.StructuredContent)
		if res.IsError {
			return nil, fmt.Errorf("%s: %s", tool, raw)
		}
		var m struct {
			Job map[string]any `json:"job"`
		}
		err = json.Unmarshal(raw, &m)
		return m.Job, err
	}
	job, err := call("design_review", map[string]any{
		"url": "https://" + demo.Host + "/pricing", "routes": []string{"/pricing"},
		"viewports": []string{"mobile", "desktop"}, "expected_revision": demo.Revision1,
		"client_request_id": "mcpload-0001",
	})
	if err != nil {
		return "", err
	}
	id, _ := job["job_id"].(string)
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		job, err := call("design_review_get", map[string]any{"job_id": id, "view": "status"})
		if err != nil {
			return "", err
		}
		switch job["status"] {
		case "completed":
			return id, nil
		case "queued", "running":
		default:
			return "", fmt.Errorf("job %s ended %v", id, job["status"])
		}
	}
	return "", errors.New("the review did not complete in 2 minutes")
}

type result struct {
	n, errs  int
	rps      float64
	p50, p99 time.Duration
	firstErr error
}

func (r result) String() string {
	s := fmt.Sprintf("%7.0f req/s  p50 %8s  p99 %8s  (%d calls, %d errors)", r.rps,
		r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.n, r.errs)
	if r.firstErr != nil {
		s += fmt.Sprintf(" first error: %v", r.firstErr)
	}
	return s
}

// load runs clients sessions calling design_review_get for dur (after a
// short warm-up) and measures each call.
func load(ctx context.Context, url, token, wire string, clients int, dur time.Duration, args map[string]any) (result, error) {
	sessions := make([]*mcp.ClientSession, clients)
	for i := range sessions {
		cs, err := connect(ctx, url, token, wire)
		if err != nil {
			return result{}, err
		}
		defer cs.Close()
		sessions[i] = cs
	}
	var (
		mu       sync.Mutex
		lat      []time.Duration
		errs     int
		firstErr error
		wg       sync.WaitGroup
	)
	warm := time.Now().Add(dur / 5)
	end := warm.Add(dur)
	for _, cs := range sessions {
		wg.Go(func() {
			var mine []time.Duration
			var bad int
			var fe error
			for {
				t0 := time.Now()
				if t0.After(end) {
					break
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "design_review_get", Arguments: args})
				d := time.Since(t0)
				if t0.Before(warm) {
					continue
				}
				if err == nil && res.IsError {
					raw, _ := json.Marshal(res.StructuredContent)
					err = fmt.Errorf("tool error %s", raw)
				}
				if err != nil {
					bad++
					if fe == nil {
						fe = err
					}
					continue
				}
				mine = append(mine, d)
			}
			mu.Lock()
			lat = append(lat, mine...)
			errs += bad
			if firstErr == nil {
				firstErr = fe
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(lat) == 0 {
		return result{}, fmt.Errorf("no successful call (%d errors, first: %v)", errs, firstErr)
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	return result{n: len(lat), errs: errs, rps: float64(len(lat)) / dur.Seconds(), p50: pct(0.50), p99: pct(0.99), firstErr: firstErr}, nil
}
