package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/internal/testenv"
)

// devPricing is the dev server's one page: its faint line fails contrast at
// every viewport.
const devPricing = `<!doctype html><html lang="en"><head><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Pricing</title><style>body{margin:0;font-family:sans-serif;padding:16px} #faint{color:#bbbbbb}</style></head>
<body><main><h1>Plans</h1><p id="faint">Prices exclude tax and are billed monthly.</p></main></body></html>`

// startDevServer runs a coding agent's dev server as the agent has it: a
// real http.Server on loopback, plain http, any port. Only /pricing exists,
// so a review of "/" instead of the URL's path fails.
func startDevServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/pricing" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, devPricing)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// reachFinding is the part of a finding these tests read.
type reachFinding struct {
	Kind      string   `json:"kind"`
	Route     string   `json:"route"`
	Viewports []string `json:"viewports"`
}

// reachResult is a completed review as MCP, REST and the CLI return it.
type reachResult struct {
	Findings []reachFinding `json:"findings"`
	Coverage struct {
		RoutesReviewed    []string `json:"routes_reviewed"`
		ViewportsReviewed []string `json:"viewports_reviewed"`
	} `json:"coverage"`
}

// checkReached fails t unless res reviewed /pricing at all three viewports
// and has a finding on /pricing seen at each of them.
func checkReached(t *testing.T, via string, res reachResult) {
	t.Helper()
	all := []string{"mobile", "tablet", "desktop"}
	if !slices.Equal(res.Coverage.RoutesReviewed, []string{"/pricing"}) || !slices.Equal(res.Coverage.ViewportsReviewed, all) {
		t.Errorf("%s: reviewed routes %q at %q, want /pricing at %q", via, res.Coverage.RoutesReviewed, res.Coverage.ViewportsReviewed, all)
	}
	seen := map[string]bool{}
	for _, f := range res.Findings {
		if f.Route != "/pricing" {
			t.Errorf("%s: finding %s on route %q, want /pricing", via, f.Kind, f.Route)
		}
		for _, v := range f.Viewports {
			seen[v] = true
		}
	}
	for _, v := range all {
		if !seen[v] {
			t.Errorf("%s: no finding at %s (findings %+v)", via, v, res.Findings)
		}
	}
}

// refusal is a typed error as the tests read it.
type refusal struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// TestReachDevServer is issue 12's done-when: `bastion serve --allow-private`
// reviews http://127.0.0.1:PORT/pricing, the agent's own dev server, over MCP
// (the official SDK client) and REST with no routes or viewports given, and
// returns findings for /pricing at all three viewports. On the same server a
// public http URL, the metadata address and the server's own edge and admin
// listeners are refused with typed errors.
func TestReachDevServer(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	dev := startDevServer(t)
	s := startServe(t, "serve-private", nil, "--dev", "--allow-private", "--data-dir", t.TempDir(), "--log-level", "warn")
	cs := connectHTTP(t, s.mcpURL, s.token, "2025-11-25")

	sub := mustCall(t, cs, "design_review", map[string]any{"url": dev + "/pricing", "client_request_id": "reach-mcp-0001"})
	if done := waitJob(t, cs, sub.Job.JobID, 4*time.Minute); done.Job.Status != "completed" {
		t.Fatalf("MCP review ended %s: %+v", done.Job.Status, done.Job.Error)
	}
	_, raw, isErr := callHTTP(t, cs, "design_review_get", map[string]any{"job_id": sub.Job.JobID, "view": "findings"})
	if isErr {
		t.Fatalf("findings view: %s", raw)
	}
	var viaMCP struct {
		Review reachResult `json:"review"`
	}
	if err := json.Unmarshal([]byte(raw), &viaMCP); err != nil {
		t.Fatal(err)
	}
	checkReached(t, "MCP", viaMCP.Review)

	code, _, body := httpDo(t, "POST", s.base+"/api/v1/reviews", s.token, `{"url":"`+dev+`/pricing","client_request_id":"reach-rest-0001"}`)
	var restSub struct {
		Job struct {
			JobID string `json:"job_id"`
		} `json:"job"`
	}
	if code != http.StatusAccepted || json.Unmarshal([]byte(body), &restSub) != nil || restSub.Job.JobID == "" {
		t.Fatalf("REST submit: %d %s", code, body)
	}
	viaREST := waitREST(t, s, restSub.Job.JobID, 4*time.Minute)
	checkReached(t, "REST", viaREST)

	for name, c := range map[string]struct{ url, code, msg string }{
		"public http":      {"http://93.184.216.34/pricing", "URL_NOT_ALLOWED", "public host needs https"},
		"metadata":         {"http://169.254.169.254/latest/meta-data/", "DNS_TARGET_PROHIBITED", ""},
		"own edge":         {s.base + "/mcp", "URL_NOT_ALLOWED", "own listeners"},
		"own edge by name": {strings.Replace(s.base, "127.0.0.1", "localhost", 1) + "/", "URL_NOT_ALLOWED", "own listeners"},
		"own admin":        {"http://" + s.admin + "/metrics", "URL_NOT_ALLOWED", "own listeners"},
	} {
		got := mcpRefusal(t, cs, c.url)
		if got.Code != c.code || !strings.Contains(got.Message, c.msg) {
			t.Errorf("MCP %s (%s): refused with %+v, want %s with %q", name, c.url, got, c.code, c.msg)
		}
		code, _, body := httpDo(t, "POST", s.base+"/api/v1/reviews", s.token, `{"url":"`+c.url+`","client_request_id":"reach-refuse-`+strings.ReplaceAll(name, " ", "-")+`"}`)
		var e struct {
			Error refusal `json:"error"`
		}
		if code/100 != 4 || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != c.code || !strings.Contains(e.Error.Message, c.msg) {
			t.Errorf("REST %s (%s): %d %s, want %s with %q", name, c.url, code, body, c.code, c.msg)
		}
	}
}

// mcpRefusal submits a review of u and returns the tool error it must get.
func mcpRefusal(t *testing.T, cs *mcp.ClientSession, u string) refusal {
	t.Helper()
	_, raw, isErr := callHTTP(t, cs, "design_review", map[string]any{"url": u, "client_request_id": "reach-refused-0001"})
	if !isErr {
		t.Errorf("design_review(%s) was accepted: %s", u, raw)
		return refusal{}
	}
	var out struct {
		Error refusal `json:"error"`
	}
	json.Unmarshal([]byte(raw), &out)
	return out.Error
}

// waitREST polls GET /api/v1/reviews/{id} until the job is done and returns
// its findings view.
func waitREST(t *testing.T, s *served, jobID string, limit time.Duration) reachResult {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		code, _, body := httpDo(t, "GET", s.base+"/api/v1/reviews/"+jobID+"?view=findings", s.token, "")
		var out struct {
			Job struct {
				Status string `json:"status"`
			} `json:"job"`
			Review reachResult `json:"review"`
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &out) != nil {
			t.Fatalf("REST get: %d %s", code, body)
		}
		switch out.Job.Status {
		case "completed":
			return out.Review
		case "queued", "running":
		default:
			t.Fatalf("REST review ended %s: %s", out.Job.Status, body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("REST job %s still %s after %s", jobID, out.Job.Status, limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestReachDevServerNeedsAllowPrivate: a server started without
// --allow-private refuses the dev server with a typed error that says to use
// it, over MCP (stdio) and the CLI; nothing is captured.
func TestReachDevServerNeedsAllowPrivate(t *testing.T) {
	testenv.Chromium(t) // bastion stdio will not start without a browser
	t.Parallel()
	dev := startDevServer(t)
	cmd := cliCommand("stdio", "--data-dir", t.TempDir(), "--log-level", "warn")
	cmd.Stderr = testWriter{t}
	client := mcp.NewClient(&mcp.Implementation{Name: "reach-e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to bastion stdio: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	for _, u := range []string{dev + "/pricing", strings.Replace(dev, "127.0.0.1", "localhost", 1) + "/pricing"} {
		if got := mcpRefusal(t, cs, u); got.Code != "URL_NOT_ALLOWED" || !strings.Contains(got.Message, "--allow-private") {
			t.Errorf("stdio without --allow-private, %s: %+v, want URL_NOT_ALLOWED saying --allow-private", u, got)
		}
	}

	_, stderr, code := runCLI(t, "review", dev+"/pricing")
	if code != 1 || !strings.HasPrefix(stderr, "bastion: URL_NOT_ALLOWED:") || !strings.Contains(stderr, "--allow-private") {
		t.Errorf("bastion review without --allow-private: exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = runCLI(t, "review", "http://93.184.216.34/pricing", "--allow-private")
	if code != 1 || !strings.HasPrefix(stderr, "bastion: URL_NOT_ALLOWED:") || !strings.Contains(stderr, "public host needs https") {
		t.Errorf("bastion review of public http with --allow-private: exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = runCLI(t, "review", "http://169.254.169.254/latest/", "--allow-private")
	if code != 1 || !strings.HasPrefix(stderr, "bastion: DNS_TARGET_PROHIBITED:") {
		t.Errorf("bastion review of the metadata address: exit %d, stderr %q", code, stderr)
	}
}

// TestReachDevServerCLI: `bastion review --allow-private` of the dev
// server's /pricing, with every default, reviews /pricing at all three
// viewports.
func TestReachDevServerCLI(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	dev := startDevServer(t)
	stdout, stderr, code := runCLI(t, "review", dev+"/pricing", "--allow-private", "--json")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	var res reachResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not the JSON result: %v\n%s", err, stdout)
	}
	checkReached(t, "CLI", res)
	if t.Failed() {
		t.Logf("stderr:\n%s\nstdout:\n%.3000s", stderr, stdout)
	}
}

// TestReachSelfSignedDevServerCLI: a dev server on https with a self-signed
// certificate (httptest's) is reviewed by `bastion review --allow-private`:
// the proxy accepts its certificate because every address is loopback.
func TestReachSelfSignedDevServerCLI(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/pricing" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, devPricing)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	stdout, stderr, code := runCLI(t, "review", srv.URL+"/pricing", "--allow-private", "--viewports", "mobile", "--json")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	var res reachResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not the JSON result: %v\n%s", err, stdout)
	}
	if !slices.Equal(res.Coverage.RoutesReviewed, []string{"/pricing"}) || len(res.Findings) == 0 {
		t.Errorf("self-signed dev server: reviewed %q with %d findings; stderr:\n%s\nstdout:\n%.2000s", res.Coverage.RoutesReviewed, len(res.Findings), stderr, stdout)
	}
}
