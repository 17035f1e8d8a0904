package reviewmcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/bastion-mcp/bastion/capture"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/egress/browserproxy"
	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/engine/local"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/internal/testenv"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/reviewmcp"
	"github.com/bastion-mcp/bastion/store/sqlite"
)

var quiet = slog.New(slog.DiscardHandler)

// previewHost is the one host the test tenant has verified.
const previewHost = "preview.example.com"

// siteAuthorizer is the test's review.Authorizer: https URLs on previewHost
// are authorized and handed to the engine as the same path on a loopback
// site (the real guard would refuse a loopback target for a tenant; the
// engine's own guard, in the local operator's AllowPrivate mode, still
// checks every browser request). Any other host is DOMAIN_UNVERIFIED.
type siteAuthorizer struct {
	base  string // "http://127.0.0.1:PORT", or "" when no site runs
	calls atomic.Int32
}

func (a *siteAuthorizer) AuthorizeTarget(_ context.Context, tenant, raw string) (string, string, error) {
	a.calls.Add(1)
	if a.base != "" && strings.HasPrefix(raw, a.base+"/") {
		// A canonical URL this authorizer returned (a recheck re-authorizes
		// the review's stored URL).
		return raw, previewHost, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return "", "", fault.New(fault.URLNotAllowed, "only https preview URLs are supported")
	}
	if u.Hostname() != previewHost {
		return "", "", fault.New(fault.DomainUnverified, "host %s is not an ownership-verified target for tenant %s", u.Hostname(), tenant)
	}
	base := a.base
	if base == "" {
		base = "http://127.0.0.1:9" // never dialled: no worker runs without a site
	}
	return base + u.RequestURI(), previewHost, nil
}

// noEngine is the Engine of harnesses whose jobs never run (no workers are
// started); a call is a test bug.
type noEngine struct{}

func (noEngine) Review(context.Context, engine.Request) (*engine.Result, error) {
	return nil, errors.New("reviewmcp test: no engine in this harness")
}

func (noEngine) Recheck(context.Context, engine.RecheckRequest) ([]engine.RecheckOutcome, error) {
	return nil, errors.New("reviewmcp test: no engine in this harness")
}

// harness is a real review.Service on a real SQLite store.
type harness struct {
	svc  *review.Service
	db   *sqlite.DB
	auth *siteAuthorizer
}

func newHarness(t testing.TB, eng review.Engine, siteBase string, start bool) *harness {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), sqlite.FileName), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if eng == nil {
		eng = noEngine{}
	}
	auth := &siteAuthorizer{base: siteBase}
	svc, err := review.New(review.Deps{Store: db, Engine: eng, Authorizer: auth, Logger: quiet}, riversqlite.New(db.SQL()), review.Options{
		FetchPollInterval: 20 * time.Millisecond, CancelPollInterval: 50 * time.Millisecond, ReviewTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if start {
		if err := svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		svc.Stop(sctx)
		db.Close()
	})
	return &harness{svc: svc, db: db, auth: auth}
}

// clientOpts says how a test client presents itself.
type clientOpts struct {
	apps     bool // declare MCP Apps (io.modelcontextprotocol/ui with the mcp-app profile)
	noImages bool // the server's Options.NoImages
	anon     bool // no principal at all
}

// client is an MCP client session on a fresh server over the harness's
// service, acting as p.
type client struct {
	t       testing.TB
	cs      *mcp.ClientSession
	outputs map[string]*jsonschema.Resolved
}

func (h *harness) connect(t testing.TB, p principal.Principal, o clientOpts) *client {
	t.Helper()
	ctx := context.Background()
	srv := reviewmcp.NewServer(h.svc, reviewmcp.Options{
		Logger:   quiet,
		NoImages: o.noImages,
		PrincipalFrom: func(context.Context) (principal.Principal, bool) {
			return p, !o.anon
		},
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	caps := &mcp.ClientCapabilities{}
	if o.apps {
		caps.AddExtension("io.modelcontextprotocol/ui", map[string]any{"mimeTypes": []string{"text/html;profile=mcp-app"}})
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "reviewmcp-test", Version: "1"}, &mcp.ClientOptions{Capabilities: caps})
	cs, err := cl.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	c := &client{t: t, cs: cs, outputs: map[string]*jsonschema.Resolved{}}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		b, _ := json.Marshal(tl.OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s outputSchema: %v", tl.Name, err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s outputSchema: %v", tl.Name, err)
		}
		c.outputs[tl.Name] = r
	}
	return c
}

// call calls tool with args (anything that marshals to JSON; a string is
// sent as raw JSON) and checks the result against the tool's outputSchema
// and the envelope rules: structuredContent present, content[0] its JSON
// except in the evidence view.
func (c *client) call(tool string, args any) *mcp.CallToolResult {
	c.t.Helper()
	var raw json.RawMessage
	switch a := args.(type) {
	case string:
		raw = json.RawMessage(a)
	default:
		b, err := json.Marshal(a)
		if err != nil {
			c.t.Fatal(err)
		}
		raw = b
	}
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: raw})
	if err != nil {
		c.t.Fatalf("%s: protocol error %v (every tool failure must be a tool result)", tool, err)
	}
	if res.StructuredContent == nil {
		c.t.Fatalf("%s: no structuredContent", tool)
	}
	sc := structured(c.t, res)
	if err := c.outputs[tool].Validate(sc); err != nil {
		c.t.Fatalf("%s: structuredContent violates its outputSchema: %v\n%s", tool, err, mustJSON(sc))
	}
	if len(res.Content) == 0 {
		c.t.Fatalf("%s: no content", tool)
	}
	return res
}

// structured returns a result's structuredContent as generic JSON.
func structured(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// decodeInto decodes a result's structuredContent into v.
func decodeInto(t testing.TB, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// wireError is the error envelope.
type wireError struct {
	SchemaVersion string `json:"schema_version"`
	Code          string `json:"code"`
	Message       string `json:"message"`
	Retriable     bool   `json:"retriable"`
	CorrelationID string `json:"correlation_id"`
	NextAction    string `json:"next_action"`
	RetryAfterMS  *int64 `json:"retry_after_ms"`
}

// wantError checks res is the typed error envelope with code and returns it.
func wantError(t testing.TB, res *mcp.CallToolResult, code fault.Code) wireError {
	t.Helper()
	if !res.IsError {
		t.Fatalf("isError false, want %s; result %s", code, mustJSON(res.StructuredContent))
	}
	var env struct {
		Error wireError `json:"error"`
	}
	decodeInto(t, res, &env)
	if len(structured(t, res)) != 1 {
		t.Errorf("error structuredContent has other keys: %s", mustJSON(res.StructuredContent))
	}
	e := env.Error
	if e.Code != string(code) {
		t.Fatalf("code %s (%s), want %s", e.Code, e.Message, code)
	}
	if e.SchemaVersion != "1.0.0" || !strings.HasPrefix(e.CorrelationID, "cor_") || e.Message == "" || e.NextAction == "" {
		t.Errorf("envelope incomplete: %+v", e)
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content[0] is %T, want text", res.Content[0])
	}
	var fromText wireError
	if err := json.Unmarshal([]byte(text.Text), &fromText); err != nil || mustJSON(fromText) != mustJSON(e) {
		t.Errorf("content[0].text %q is not the error's JSON (%v)", text.Text, err)
	}
	return e
}

func wantOK(t testing.TB, res *mcp.CallToolResult) {
	t.Helper()
	if res.IsError {
		t.Fatalf("unexpected tool error: %s", mustJSON(res.StructuredContent))
	}
}

func mustJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

func mustPrincipal(t testing.TB, tenant, id string, scopes ...principal.Scope) principal.Principal {
	t.Helper()
	p, err := principal.New(tenant, id, scopes...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// jobOut is the part of a job the tests read.
type jobOut struct {
	JobID    string `json:"job_id"`
	Status   string `json:"status"`
	Kind     string `json:"kind"`
	ReviewID string `json:"review_id"`
	Reused   bool   `json:"reused"`
	Error    *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type submitOut struct {
	Job    jobOut        `json:"job"`
	Budget review.Budget `json:"budget"`
}

// waitDone polls design_review_get's status view until the job is
// terminal.
func (c *client) waitDone(jobID string) jobOut {
	c.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		res := c.call(reviewmcp.ToolGet, map[string]any{"job_id": jobID, "view": "status"})
		wantOK(c.t, res)
		var out struct {
			Job jobOut `json:"job"`
		}
		decodeInto(c.t, res, &out)
		switch out.Job.Status {
		case "completed", "failed", "cancelled":
			return out.Job
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("job %s did not finish", jobID)
	return jobOut{}
}

// site is a loopback web server whose pages can change between captures.
type site struct {
	mu    sync.Mutex
	pages map[string]string
	base  string
}

func (s *site) set(path, body string) {
	s.mu.Lock()
	s.pages[path] = body
	s.mu.Unlock()
}

func startSite(t testing.TB, pages map[string]string) *site {
	t.Helper()
	s := &site{pages: pages}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		body, ok := s.pages[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s.base = "http://" + ln.Addr().String()
	return s
}

// realEngine is bastion's local engine wired like `bastion review
// --allow-private`: real Chromium behind the egress proxy and guard. It
// skips loudly without a Chromium (and fails in CI).
func realEngine(t testing.TB) *local.Engine {
	t.Helper()
	chrome := testenv.Chromium(t)
	guard := egress.NewGuard(egress.Policy{AllowHTTP: true, AllowPrivate: true}, egress.StaticResolver{})
	proxy, err := browserproxy.New(guard, browserproxy.Options{AllowHTTP: true, RequireAuth: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	pool, err := capture.NewPool(context.Background(), capture.Options{Chrome: chrome, ProxyAddr: proxy.Addr(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	return local.New(pool, proxy, guard, local.Options{Logger: quiet})
}
