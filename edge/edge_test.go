package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bastion-mcp/bastion/principal"
)

// principalHeader is how the test authenticator learns who is calling; the
// real authenticator lives in package auth.
const principalHeader = "X-Test-Principal"

func testAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant, id, ok := strings.Cut(r.Header.Get(principalHeader), "/")
		p, err := principal.New(tenant, id, principal.ReviewsRead)
		if !ok || err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(principal.NewContext(r.Context(), p)))
	})
}

type whoOut struct {
	Principal string `json:"principal"`
}

// newTestServer is a per-client MCP server with one tool that names its caller.
func newTestServer(_ context.Context, p principal.Principal) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "edge-test", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "names the caller"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, whoOut, error) {
			return nil, whoOut{Principal: p.String()}, nil
		})
	return s
}

type bundle struct {
	e   *Edge
	reg *prometheus.Registry
	srv *httptest.Server // real listener on 127.0.0.1
}

func setup(t *testing.T, mut func(*Options)) *bundle {
	t.Helper()
	reg := prometheus.NewRegistry()
	o := Options{Enabled: true, BindAddr: "127.0.0.1:0", Authenticate: testAuth, Registry: reg}
	if mut != nil {
		mut(&o)
	}
	e, err := New(o, newTestServer)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return &bundle{e: e, reg: reg, srv: srv}
}

func (b *bundle) rejections(t *testing.T, reason string) float64 {
	t.Helper()
	mfs, err := b.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "bastion_edge_rejections_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no counter for reason %q", reason)
	return 0
}

// req describes one raw HTTP request to the edge.
type req struct {
	method  string
	path    string
	host    string // "" means the listener's own 127.0.0.1:port
	headers map[string]string
	body    string
	chunked bool // send without Content-Length
}

const pingBody = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

func baseHeaders(principal string) map[string]string {
	return map[string]string{
		principalHeader: principal,
		"Content-Type":  "application/json",
		"Accept":        "application/json, text/event-stream",
	}
}

func (rq req) build(t *testing.T, base string) *http.Request {
	t.Helper()
	if rq.method == "" {
		rq.method = http.MethodPost
	}
	if rq.path == "" {
		rq.path = "/mcp"
	}
	var body io.Reader
	if rq.body != "" {
		body = strings.NewReader(rq.body)
		if rq.chunked {
			body = io.MultiReader(body) // hides the length
		}
	}
	r, err := http.NewRequest(rq.method, base+rq.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if rq.chunked {
		r.ContentLength = -1
	}
	for k, v := range rq.headers {
		r.Header.Set(k, v)
	}
	if rq.host != "" {
		r.Host = rq.host
	}
	return r
}

type response struct {
	status int
	header http.Header
	body   string
}

// both sends rq in-process (ServeHTTP with a recorder) and over the real
// listener, and checks both answers agree on status and body.
func (b *bundle) both(t *testing.T, rq req) response {
	t.Helper()
	in := rq.build(t, "http://127.0.0.1")
	if rq.host == "" {
		in.Host = strings.TrimPrefix(b.srv.URL, "http://")
	}
	rec := httptest.NewRecorder()
	b.e.ServeHTTP(rec, in)
	got1 := response{rec.Code, rec.Header(), rec.Body.String()}

	resp, err := b.srv.Client().Do(rq.build(t, b.srv.URL))
	if err != nil {
		t.Fatalf("real listener: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	got2 := response{resp.StatusCode, resp.Header, string(raw)}
	if got1.status != got2.status || got1.body != got2.body {
		t.Errorf("in-process %d %q, real listener %d %q", got1.status, got1.body, got2.status, got2.body)
	}
	return got2
}

// observed is one call of Options.Rejected.
type observed struct {
	status    int
	reason    string
	principal string // "" when none was authenticated
}

func TestRejections(t *testing.T) {
	t.Parallel()
	var obsMu sync.Mutex
	var obs []observed
	b := setup(t, func(o *Options) {
		o.MaxBodyBytes = 1000
		o.AllowedOrigins = []string{"https://app.example"}
		o.AgentAccess = func(_ context.Context, tenant string) bool { return tenant != "dark" }
		o.Rejected = func(ctx context.Context, r *http.Request, status int, reason string) {
			if ctx != r.Context() {
				t.Error("Rejected: ctx is not the request's context")
			}
			p, _ := principal.FromContext(ctx)
			obsMu.Lock()
			obs = append(obs, observed{status, reason, map[bool]string{true: p.String()}[p.IsValid()]})
			obsMu.Unlock()
		}
	})
	takeObserved := func() []observed {
		obsMu.Lock()
		defer obsMu.Unlock()
		o := obs
		obs = nil
		return o
	}
	ok := baseHeaders("t1/alice")
	with := func(extra map[string]string) map[string]string {
		h := map[string]string{}
		for k, v := range ok {
			h[k] = v
		}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	pad := func(n int) string { return pingBody + strings.Repeat(" ", n-len(pingBody)) }
	cases := []struct {
		name       string
		req        req
		wantStatus int
		wantBody   string // exact JSON (compact), "" to skip
		reason     string // counted rejection, "" for none
		header     [2]string
	}{
		{"UnknownPath", req{path: "/nope", headers: ok, body: pingBody}, 404, `{"error":"not_found"}`, "", [2]string{}},
		{"Livez", req{method: "GET", path: "/livez"}, 200, `{"status":"ok"}`, "", [2]string{}},
		{"ForwardedFor", req{headers: with(map[string]string{"X-Forwarded-For": "203.0.113.9"}), body: pingBody}, 403, "", "forwarded_rejected", [2]string{}},
		{"Forwarded", req{headers: with(map[string]string{"Forwarded": "for=203.0.113.9"}), body: pingBody}, 403, "", "forwarded_rejected", [2]string{}},
		{"ForwardedHost", req{headers: with(map[string]string{"X-Forwarded-Host": "evil.example"}), body: pingBody}, 403, "", "forwarded_rejected", [2]string{}},
		{"HostNotAllowed", req{host: "evil.example.com", headers: ok, body: pingBody}, 403, `{"error":"forbidden","error_description":"host not allowed"}`, "host_not_allowed", [2]string{}},
		{"OriginNotAllowed", req{headers: with(map[string]string{"Origin": "http://evil.example.com"}), body: pingBody}, 403, `{"error":"forbidden","error_description":"origin not allowed"}`, "origin_not_allowed", [2]string{}},
		{"AgentAccessOff", req{headers: with(map[string]string{principalHeader: "dark/bob"}), body: pingBody}, 404, `{"error":"not_found"}`, "agent_access_off", [2]string{}},
		{"MediaType", req{headers: with(map[string]string{"Content-Type": "text/plain"}), body: pingBody}, 415, `{"error":"unsupported_media_type","error_description":"POST requires application/json"}`, "unsupported_media_type", [2]string{"Connection", "close"}},
		{"DeclaredTooLarge", req{headers: ok, body: pad(1001)}, 413, `{"error":"payload_too_large"}`, "body_too_large_declared", [2]string{"Connection", "close"}},
		{"StreamedTooLarge", req{headers: ok, body: pad(1001), chunked: true}, 413, `{"error":"payload_too_large"}`, "body_too_large_streamed", [2]string{"Connection", "close"}},
		{"InvalidJSON", req{headers: ok, body: `{"jsonrpc":"2.0","id":1,"method":"<script>`}, 400, string(parseError), "invalid_json", [2]string{}},
		{"InvalidUTF8", req{headers: ok, body: "{\"a\":\"\xff\"}"}, 400, string(parseError), "invalid_json", [2]string{}},
		{"UnknownSession", req{headers: with(map[string]string{"Mcp-Session-Id": "nope"}), body: pingBody}, 404, `{"error":"unknown_session"}`, "unknown_session", [2]string{}},
		{"AuthRefused", req{headers: with(map[string]string{principalHeader: "nobody"}), body: pingBody}, 401, "", "auth_refused", [2]string{}},
		{"Allowed", req{headers: ok, body: pingBody}, 200, "", "", [2]string{}},
	}
	// Subtests run one at a time (no t.Parallel), so each sees only its
	// own observations.
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			takeObserved()
			var before float64
			if c.reason != "" {
				before = b.rejections(t, c.reason)
			}
			got := b.both(t, c.req)
			if got.status != c.wantStatus {
				t.Fatalf("status = %d, want %d (body %q)", got.status, c.wantStatus, got.body)
			}
			if c.wantBody != "" && strings.TrimSpace(got.body) != c.wantBody {
				t.Errorf("body = %q, want %q", got.body, c.wantBody)
			}
			if strings.Contains(got.body, "<script>") || strings.Contains(got.body, "evil") {
				t.Errorf("body echoes input: %q", got.body)
			}
			if c.header[0] != "" && got.header.Get(c.header[0]) != c.header[1] && c.header[0] != "Connection" {
				t.Errorf("%s = %q, want %q", c.header[0], got.header.Get(c.header[0]), c.header[1])
			}
			if c.reason != "" {
				if d := b.rejections(t, c.reason) - before; d != 2 {
					t.Errorf("rejections{reason=%q} grew by %v, want 2 (in-process + listener)", c.reason, d)
				}
			}
			// Every counted refusal is reported once per request, with the
			// status sent and the principal when one was authenticated.
			seen := takeObserved()
			if c.reason == "" {
				if len(seen) != 0 {
					t.Errorf("Rejected called for an uncounted answer: %v", seen)
				}
				return
			}
			wantP := ""
			switch c.reason {
			case "agent_access_off":
				wantP = "dark/bob"
			case "unsupported_media_type", "body_too_large_declared", "body_too_large_streamed", "invalid_json", "unknown_session":
				wantP = "t1/alice"
			}
			want := observed{c.wantStatus, c.reason, wantP}
			if len(seen) != 2 || seen[0] != want || seen[1] != want {
				t.Errorf("Rejected saw %v, want %v twice", seen, want)
			}
		})
	}
}

// TestBodyBoundary pins the size limit to the byte: max accepted, max+1
// refused, with and without a declared length.
func TestBodyBoundary(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *Options) { o.MaxBodyBytes = 1000 })
	body := func(n int) string { return pingBody + strings.Repeat(" ", n-len(pingBody)) }
	for _, chunked := range []bool{false, true} {
		for _, n := range []int{1000, 1001} {
			got := b.both(t, req{headers: baseHeaders("t1/a"), body: body(n), chunked: chunked})
			if too := got.status == http.StatusRequestEntityTooLarge; too != (n > 1000) {
				t.Errorf("chunked=%v len=%d: status %d", chunked, n, got.status)
			}
		}
	}
}

func TestOptionLimits(t *testing.T) {
	t.Parallel()
	bad := []Options{
		{MaxBodyBytes: MaxBodyBytesHardCap + 1, BindAddr: "127.0.0.1:0"},
		{MaxInFlightPerPrincipal: MaxInFlightPerPrincipalCap + 1, BindAddr: "127.0.0.1:0"},
		{MaxBodyBytes: -1, BindAddr: "127.0.0.1:0"},
		{BindAddr: "0.0.0.0:8080"}, // no auth on a public bind
		{BindAddr: ":8080"},
	}
	for i, o := range bad {
		if _, err := New(o, newTestServer); err == nil {
			t.Errorf("case %d: New accepted %+v", i, o)
		}
	}
	o := Options{BindAddr: "127.0.0.1:0"}
	if _, err := New(o, newTestServer); err != nil {
		t.Errorf("loopback without auth: %v", err)
	}
}

func TestCheckBind(t *testing.T) {
	t.Parallel()
	for addr, ok := range map[string]bool{
		"127.0.0.1:8080": true, "[::1]:80": true, "localhost:1": true,
		"0.0.0.0:8080": false, ":8080": false, "[::]:80": false, "10.0.0.1:80": false, "example.com:80": false,
	} {
		if err := CheckBind(addr, false); (err == nil) != ok {
			t.Errorf("CheckBind(%q, false) = %v", addr, err)
		}
		if err := CheckBind(addr, true); err != nil {
			t.Errorf("CheckBind(%q, true) = %v", addr, err)
		}
		if err := CheckAdminBind(addr, false); (err == nil) != ok {
			t.Errorf("CheckAdminBind(%q, false) = %v", addr, err)
		}
	}
}

func TestKillSwitch(t *testing.T) {
	t.Parallel()
	var off sync.Mutex
	switched := false
	b := setup(t, func(o *Options) {
		o.Off = func() bool { off.Lock(); defer off.Unlock(); return switched }
	})
	if got := b.both(t, req{headers: baseHeaders("t1/a"), body: pingBody}); got.status == 404 {
		t.Fatalf("enabled edge answered 404")
	}
	off.Lock()
	switched = true
	off.Unlock()
	got := b.both(t, req{headers: baseHeaders("t1/a"), body: pingBody})
	if got.status != 404 || strings.TrimSpace(got.body) != `{"error":"not_found"}` {
		t.Errorf("kill switch: %d %q", got.status, got.body)
	}
	dark := setup(t, func(o *Options) { o.Enabled = false })
	got = dark.both(t, req{headers: baseHeaders("t1/a"), body: pingBody})
	if got.status != 404 || strings.TrimSpace(got.body) != `{"error":"not_found"}` {
		t.Errorf("disabled: %d %q", got.status, got.body)
	}
	if n := dark.rejections(t, "mcp_disabled"); n != 2 {
		t.Errorf("mcp_disabled = %v, want 2", n)
	}
}

func TestSuffixJSONMediaType(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	h := baseHeaders("t1/a")
	h["Content-Type"] = "application/vnd.example+json; charset=utf-8"
	if got := b.both(t, req{headers: h, body: pingBody}); got.status == http.StatusUnsupportedMediaType {
		t.Errorf("application/*+json refused: %q", got.body)
	}
}

func TestReadyz(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	storeErr := error(nil)
	b := setup(t, func(o *Options) {
		o.Ready = []Check{{Name: "store", Check: func(context.Context) error { mu.Lock(); defer mu.Unlock(); return storeErr }}}
	})
	got := b.both(t, req{method: "GET", path: "/readyz"})
	if got.status != 200 || !strings.Contains(got.body, `"store":"ok"`) {
		t.Errorf("ready: %d %q", got.status, got.body)
	}
	mu.Lock()
	storeErr = fmt.Errorf("dial 10.1.2.3:5432: refused")
	mu.Unlock()
	got = b.both(t, req{method: "GET", path: "/readyz"})
	if got.status != 503 || !strings.Contains(got.body, `"store":"fail"`) || strings.Contains(got.body, "10.1.2.3") {
		t.Errorf("not ready: %d %q", got.status, got.body)
	}
}

// TestReadyzDegraded: a failing check marked Degrades leaves the server
// ready (200, status "degraded") and names the check; a failing check
// without it still makes the server not ready.
func TestReadyzDegraded(t *testing.T) {
	t.Parallel()
	down := func(context.Context) error { return fmt.Errorf("upstream files is unavailable") }
	b := setup(t, func(o *Options) {
		o.Ready = []Check{{Name: "upstream:files", Check: down, Degrades: true}, {Name: "store", Check: func(context.Context) error { return nil }}}
	})
	got := b.both(t, req{method: "GET", path: "/readyz"})
	if got.status != 200 || !strings.Contains(got.body, `"status":"degraded"`) || !strings.Contains(got.body, `"upstream:files":"fail"`) {
		t.Errorf("degraded: %d %q", got.status, got.body)
	}
	b = setup(t, func(o *Options) {
		o.Ready = []Check{{Name: "upstream:files", Check: down, Degrades: true}, {Name: "upstream:db", Check: down}}
	})
	got = b.both(t, req{method: "GET", path: "/readyz"})
	if got.status != 503 || !strings.Contains(got.body, `"status":"not_ready"`) || !strings.Contains(got.body, `"upstream:db":"fail"`) {
		t.Errorf("a required check failing: %d %q", got.status, got.body)
	}
}

func TestMetadataPassthrough(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *Options) {
		o.Metadata = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"resource":"x"}`) })
	})
	for _, p := range []string{MetadataPath, MetadataPath + "/mcp"} {
		if got := b.both(t, req{method: "GET", path: p}); got.status != 200 || got.body != `{"resource":"x"}` {
			t.Errorf("%s: %d %q", p, got.status, got.body)
		}
	}
}

func TestAdminMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.both(t, req{headers: map[string]string{principalHeader: "t1/a", "Content-Type": "text/plain"}, body: "x"})
	rec := httptest.NewRecorder()
	b.e.AdminHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `bastion_edge_rejections_total{reason="unsupported_media_type"} 2`) {
		t.Errorf("metrics:\n%s", rec.Body.String())
	}
	// The MCP handler does not serve metrics.
	if got := b.both(t, req{method: "GET", path: "/metrics"}); got.status != 404 {
		t.Errorf("/metrics on the MCP listener: %d", got.status)
	}
}

// headerTransport adds a principal header to every request.
type headerTransport struct{ principal string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(principalHeader, h.principal)
	return http.DefaultTransport.RoundTrip(r)
}

func connect(t *testing.T, url, who, version string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "edge-test-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: headerTransport{who}},
		MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s: %v", version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func callWhoami(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "whoami" {
		t.Fatalf("tools/list = %+v", tools.Tools)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	var out whoOut
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return out.Principal
}

func TestBothWires(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for _, v := range []struct{ version, wantSession string }{{"2025-11-25", "yes"}, {"2026-07-28", ""}} {
		t.Run(v.version, func(t *testing.T) {
			before := b.e.sessions.count()
			cs := connect(t, b.srv.URL+"/mcp", "t1/alice", v.version)
			if got := cs.InitializeResult().ProtocolVersion; got != v.version {
				t.Errorf("negotiated %q", got)
			}
			if got := callWhoami(t, cs); got != "t1/alice" {
				t.Errorf("whoami = %q", got)
			}
			if (cs.ID() != "") != (v.wantSession != "") {
				t.Errorf("session id %q on the %s wire", cs.ID(), v.version)
			}
			if grew := b.e.sessions.count() - before; (grew > 0) != (v.wantSession != "") {
				t.Errorf("bound sessions grew by %d", grew)
			}
		})
	}
}

// TestSessionHijack: a session id is useless to anyone but its owner, even
// in the same tenant, and the refusal looks like an unknown session.
func TestSessionHijack(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	cs := connect(t, b.srv.URL+"/mcp", "t1/alice", "2025-11-25")
	for _, thief := range []string{"t1/mallory", "t2/alice"} {
		h := baseHeaders(thief)
		h["Mcp-Session-Id"] = cs.ID()
		h["Mcp-Protocol-Version"] = "2025-11-25"
		got := b.both(t, req{headers: h, body: `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`})
		if got.status != 404 || strings.TrimSpace(got.body) != `{"error":"unknown_session"}` {
			t.Errorf("%s: %d %q", thief, got.status, got.body)
		}
	}
	if n := b.rejections(t, "session_owner_mismatch"); n != 4 {
		t.Errorf("session_owner_mismatch = %v, want 4", n)
	}
	if got := callWhoami(t, cs); got != "t1/alice" {
		t.Errorf("owner after hijack attempts: %q", got)
	}
}

// slowPost starts a POST whose body never arrives until release is called,
// holding an in-flight slot. It returns a channel with the final status.
func slowPost(t *testing.T, url, who string) (release func(), status <-chan int) {
	t.Helper()
	pr, pw := io.Pipe()
	r, _ := http.NewRequest(http.MethodPost, url, pr)
	for k, v := range baseHeaders(who) {
		r.Header.Set(k, v)
	}
	ch := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			ch <- 0
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		ch <- resp.StatusCode
	}()
	var once sync.Once
	release = func() {
		once.Do(func() {
			_, _ = io.WriteString(pw, pingBody)
			_ = pw.Close()
		})
	}
	t.Cleanup(release)
	return release, ch
}

func waitInFlight(t *testing.T, e *Edge, n int) {
	t.Helper()
	waitInFlightCalls(t, e, n, -1)
}

// waitInFlightCalls waits until n requests are in flight, calls of them
// calls (the rest streams); calls < 0 accepts any split.
func waitInFlightCalls(t *testing.T, e *Edge, n, calls int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		total, c, _ := e.inflight.snapshot()
		if total == n && (calls < 0 || c == calls) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("in flight = %d (%d calls), want %d (%d calls)", total, c, n, calls)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestInFlightPerPrincipal(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *Options) { o.MaxInFlightPerPrincipal = 2 })
	url := b.srv.URL + "/mcp"
	// An open session's standalone SSE stream is not a call: it must not
	// take one of the principal's call slots.
	connect(t, url, "t1/a", "2025-11-25")
	waitInFlight(t, b.e, 1)
	slowPost(t, url, "t1/a")
	slowPost(t, url, "t1/a")
	waitInFlight(t, b.e, 3)
	got := b.both(t, req{headers: baseHeaders("t1/a"), body: pingBody})
	if got.status != http.StatusTooManyRequests || got.header.Get("Retry-After") != "1" ||
		strings.TrimSpace(got.body) != `{"error":"too_many_requests","error_description":"too many in-flight requests"}` {
		t.Errorf("saturated principal: %d %v %q", got.status, got.header, got.body)
	}
	// Another principal, same or other tenant, is not blocked by a's load.
	for _, who := range []string{"t1/b", "t2/a"} {
		if got := b.both(t, req{headers: baseHeaders(who), body: pingBody}); got.status == 429 || got.status == 503 {
			t.Errorf("%s blocked by t1/a: %d", who, got.status)
		}
	}
	if n := b.rejections(t, "in_flight_saturated"); n != 2 {
		t.Errorf("in_flight_saturated = %v", n)
	}
}

func TestInFlightGlobal(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *Options) { o.MaxInFlight = 2 })
	url := b.srv.URL + "/mcp"
	slowPost(t, url, "t1/a")
	slowPost(t, url, "t2/b")
	waitInFlight(t, b.e, 2)
	got := b.both(t, req{headers: baseHeaders("t3/c"), body: pingBody})
	if got.status != http.StatusServiceUnavailable || got.header.Get("Retry-After") != "1" {
		t.Errorf("global saturation: %d %q", got.status, got.body)
	}
	if n := b.rejections(t, "global_saturated"); n != 2 {
		t.Errorf("global_saturated = %v", n)
	}
}

func TestBodyTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *Options) { o.BodyTimeout = 200 * time.Millisecond })
	_, status := slowPost(t, b.srv.URL+"/mcp", "t1/a")
	select {
	case s := <-status:
		if s != http.StatusRequestTimeout {
			t.Errorf("real listener: status %d", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no 408 within 5s")
	}
	// In-process: a body reader that never returns data.
	pr, pw := io.Pipe()
	defer pw.Close()
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", pr)
	r.Host = "127.0.0.1"
	for k, v := range baseHeaders("t1/a") {
		r.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	b.e.ServeHTTP(rec, r)
	if rec.Code != http.StatusRequestTimeout || strings.TrimSpace(rec.Body.String()) != `{"error":"request_timeout"}` {
		t.Errorf("in-process: %d %q", rec.Code, rec.Body.String())
	}
	if n := b.rejections(t, "body_timeout"); n != 2 {
		t.Errorf("body_timeout = %v", n)
	}
}

func TestGracefulDrain(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	cs := connect(t, b.srv.URL+"/mcp", "t1/alice", "2025-11-25")
	// Alice's handshake has settled to her standalone SSE stream alone (her
	// last POST may still be in flight when connect returns); only then is
	// the one call in flight bob's.
	waitInFlightCalls(t, b.e, 1, 0)
	release, status := slowPost(t, b.srv.URL+"/mcp", "t1/bob")
	waitInFlightCalls(t, b.e, 2, 1)

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- b.e.Shutdown(ctx)
	}()
	// New requests are refused while draining...
	deadline := time.Now().Add(5 * time.Second)
	for !b.e.draining.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := b.both(t, req{headers: baseHeaders("t1/carol"), body: pingBody}); got.status != http.StatusServiceUnavailable {
		t.Errorf("request during drain: %d", got.status)
	}
	// ...but the call in flight is let finish.
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v before the in-flight call finished", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	if s := <-status; s != http.StatusOK {
		t.Errorf("in-flight call finished with %d", s)
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := b.e.sessions.count(); n != 0 {
		t.Errorf("%d sessions left after drain", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cs.ListTools(ctx, nil); err == nil {
		t.Error("closed session still answers")
	}
}

func TestNewServerTimeouts(t *testing.T) {
	t.Parallel()
	s := NewServer("127.0.0.1:0", http.NotFoundHandler(), Timeouts{})
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 {
		t.Errorf("unset timeout: %+v", s)
	}
	if s.WriteTimeout < time.Minute {
		t.Errorf("write timeout %v too short for SSE", s.WriteTimeout)
	}
}

// TestPermit: Permit sees the body's methods after authentication, its
// refusal is what the client gets and is counted and reported first, and a
// refusal that wrote nothing is a 403, not a 200.
func TestPermit(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen [][]string
	var reported []string
	b := setup(t, func(o *Options) {
		o.Permit = func(w http.ResponseWriter, r *http.Request, methods []string) bool {
			if _, ok := principal.FromContext(r.Context()); !ok {
				t.Error("Permit ran without a principal")
			}
			mu.Lock()
			seen = append(seen, methods)
			mu.Unlock()
			switch {
			case len(methods) > 0 && methods[0] == "tools/call":
				w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope"`)
				w.WriteHeader(http.StatusForbidden)
				return false
			case len(methods) > 0 && methods[0] == "silent/refusal":
				return false
			}
			return true
		}
		o.Rejected = func(_ context.Context, _ *http.Request, status int, reason string) {
			mu.Lock()
			reported = append(reported, fmt.Sprint(status, " ", reason))
			mu.Unlock()
		}
	})
	if r := b.both(t, req{headers: baseHeaders("acme/u1"), body: pingBody}); r.status != http.StatusOK {
		t.Errorf("ping: %d %s", r.status, r.body)
	}
	call := `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami"}},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":7,"result":{}}]`
	r := b.both(t, req{headers: baseHeaders("acme/u1"), body: call})
	if r.status != http.StatusForbidden || r.header.Get("WWW-Authenticate") != `Bearer error="insufficient_scope"` {
		t.Errorf("refused call: %d %q", r.status, r.header.Get("WWW-Authenticate"))
	}
	if r := b.both(t, req{headers: baseHeaders("acme/u1"), body: `{"jsonrpc":"2.0","id":1,"method":"silent/refusal"}`}); r.status != http.StatusForbidden {
		t.Errorf("a refusal that wrote nothing: %d %s", r.status, r.body)
	}
	// Unauthenticated requests never reach Permit.
	b.both(t, req{headers: baseHeaders(""), body: pingBody})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 6 || !slices.Equal(seen[0], []string{"ping"}) || !slices.Equal(seen[2], []string{"tools/call", "notifications/x"}) {
		t.Errorf("Permit saw %v", seen)
	}
	if got := b.rejections(t, "not_permitted"); got != 4 {
		t.Errorf("not_permitted counted %v times, want 4", got)
	}
	want := []string{"403 not_permitted", "403 not_permitted", "403 not_permitted", "403 not_permitted", "401 auth_refused", "401 auth_refused"}
	if !slices.Equal(reported, want) {
		t.Errorf("reported %v, want %v", reported, want)
	}
}
