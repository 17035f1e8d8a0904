package main

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/demo"
	"github.com/bastion-mcp/bastion/internal/testenv"
	"github.com/bastion-mcp/bastion/store/postgres"
)

// served is one `bastion serve` child.
type served struct {
	name     string
	cmd      *exec.Cmd
	mcpURL   string // http://127.0.0.1:port/mcp
	base     string // http://127.0.0.1:port
	admin    string // the metrics listener's host:port, "" when disabled
	token    string // the --dev token, if any
	clientID string // River client id, from its log
	exited   chan struct{}
}

var (
	listeningRe = regexp.MustCompile(`listening on (http://\S+) \(metrics on (\S*)\)`)
	devTokenRe  = regexp.MustCompile(`BASTION_TOKEN=(bst_\S+)`)
	riverIDRe   = regexp.MustCompile(`River client started" client_id=(\S+)`)
)

// startServe starts `bastion serve args...` with env added and waits until
// it listens. Its stderr goes to the test log. It is stopped with SIGTERM
// (then SIGKILL) when t ends.
func startServe(t *testing.T, name string, env []string, args ...string) *served {
	t.Helper()
	cmd := cliCommand(append([]string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &served{name: name, cmd: cmd, exited: make(chan struct{})}
	ready := make(chan struct{})
	var mu sync.Mutex
	var logDone sync.WaitGroup
	logDone.Add(1)
	go func() {
		defer logDone.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			t.Logf("%s: %s", name, line)
			mu.Lock()
			if m := devTokenRe.FindStringSubmatch(line); m != nil {
				s.token = m[1]
			}
			if m := riverIDRe.FindStringSubmatch(line); m != nil {
				s.clientID = m[1]
			}
			if m := listeningRe.FindStringSubmatch(line); m != nil {
				s.mcpURL, s.admin = m[1], m[2]
				s.base = strings.TrimSuffix(m[1], "/mcp")
				once.Do(func() { close(ready) })
			}
			mu.Unlock()
		}
	}()
	// Wait closes the pipe once the child exits, so the log reader ends
	// even if a browser process it left behind still holds the write end.
	go func() { cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(15 * time.Second):
			t.Errorf("%s did not drain within 15s of SIGTERM; its goroutines follow", name)
			cmd.Process.Signal(syscall.SIGQUIT) // the Go runtime dumps every goroutine to stderr
			select {
			case <-s.exited:
			case <-time.After(5 * time.Second):
				cmd.Process.Kill()
				<-s.exited
			}
		}
		logDone.Wait()
	})
	select {
	case <-ready:
	case <-s.exited:
		t.Fatalf("%s exited before listening", name)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not listen within 60s", name)
	}
	// The River client id is logged just after the listening line.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		id := s.clientID
		mu.Unlock()
		if id != "" || !strings.Contains(strings.Join(args, " "), "--log-level info") {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return s
}

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connectHTTP opens an MCP client session over Streamable HTTP, on the
// stateful wire ("2025-11-25") or the stateless one ("2026-07-28").
func connectHTTP(t *testing.T, mcpURL, token, version string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "serve-e2e", Version: "1"}, &mcp.ClientOptions{Capabilities: demo.ClientCapabilities()})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: mcpURL, HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s: %v", version, err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated %q, want %q", got, version)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callHTTP calls a tool and returns its structured result, raw JSON and
// whether it is a tool error.
func callHTTP(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (toolResult, string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var r toolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: %v in %s", tool, err, raw)
	}
	return r, string(raw), res.IsError
}

// mustCall is callHTTP that fails the test on a tool error.
func mustCall(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) toolResult {
	t.Helper()
	r, raw, isErr := callHTTP(t, cs, tool, args)
	if isErr {
		t.Fatalf("%s: tool error %s", tool, raw)
	}
	return r
}

// waitJob polls design_review_get until the job leaves queued and running.
func waitJob(t *testing.T, cs *mcp.ClientSession, jobID string, limit time.Duration) toolResult {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		r := mustCall(t, cs, "design_review_get", map[string]any{"job_id": jobID, "view": "status"})
		if r.Job.Status != "queued" && r.Job.Status != "running" {
			return mustCall(t, cs, "design_review_get", map[string]any{"job_id": jobID, "view": "findings"})
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s after %s", jobID, r.Job.Status, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// httpDo sends one request with an optional bearer token and returns the
// status, headers and body.
func httpDo(t *testing.T, method, u, token, body string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header, string(b)
}

const toolsListBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

// statelessListBody is tools/list on the 2026-07-28 wire (no session).
const statelessListBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`

// TestServeDev drives `bastion serve --dev` over both MCP wires and REST
// with its printed token, then creates, uses and revokes a second token.
func TestServeDev(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	site := demoSite(t)
	dataDir := t.TempDir()
	s := startServe(t, "serve", nil, append([]string{"--dev", "--data-dir", dataDir, "--log-level", "warn"}, demo.StdioArgs(site)...)...)
	if !strings.HasPrefix(s.token, "bst_") {
		t.Fatalf("serve --dev printed no token (%q)", s.token)
	}

	sessions := map[string]*mcp.ClientSession{}
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		cs := connectHTTP(t, s.mcpURL, s.token, v)
		sessions[v] = cs
		if (cs.ID() != "") != (v == "2025-11-25") {
			t.Errorf("%s wire: session id %q", v, cs.ID())
		}
		tools, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatalf("%s tools/list: %v", v, err)
		}
		var names []string
		for _, tl := range tools.Tools {
			names = append(names, tl.Name)
		}
		if len(names) != 5 || !strings.Contains(strings.Join(names, " "), "design_review_get") {
			t.Errorf("%s tools/list = %v", v, names)
		}
		_, raw, isErr := callHTTP(t, cs, "design_review", map[string]any{
			"url": "https://unverified.example.org/", "client_request_id": "e2e-unverified-" + v,
		})
		if !isErr || !strings.Contains(raw, "DOMAIN_UNVERIFIED") {
			t.Errorf("%s: review of an unverified host: error %v, %s", v, isErr, raw)
		}
	}

	// A real review submitted on the stateful wire, followed on the
	// stateless one and read through REST with the same token.
	sub := mustCall(t, sessions["2025-11-25"], "design_review", submitArgs("e2e-serve-review-1"))
	done := waitJob(t, sessions["2026-07-28"], sub.Job.JobID, 90*time.Second)
	if done.Job.Status != "completed" || done.Review == nil || len(done.Review.Findings) == 0 {
		t.Fatalf("review over HTTP: %+v", done.Job)
	}
	code, _, body := httpDo(t, "GET", s.base+"/api/v1/reviews/"+sub.Job.JobID, s.token, "")
	var rest toolResult
	if err := json.Unmarshal([]byte(body), &rest); code != 200 || err != nil || rest.Job.JobID != sub.Job.JobID || rest.Job.Status != "completed" {
		t.Errorf("REST GET review: %d %s", code, body)
	}

	// No credential: 401 with a Bearer challenge, on MCP and REST alike.
	for _, u := range []string{s.mcpURL, s.base + "/api/v1/reviews/" + sub.Job.JobID} {
		method, body := "POST", toolsListBody
		if strings.Contains(u, "/api/") {
			method, body = "GET", ""
		}
		code, h, _ := httpDo(t, method, u, "", body)
		if code != http.StatusUnauthorized || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s %s without a token: %d %q", method, u, code, h.Get("WWW-Authenticate"))
		}
	}
	// Forwarding headers without a trusted proxy are refused.
	req, _ := http.NewRequest("GET", s.base+"/api/v1/targets", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("X-Forwarded-For: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// A rebinding attacker's Host is refused on REST as on MCP.
	req, _ = http.NewRequest("GET", s.base+"/api/v1/targets", nil)
	req.Host = "attacker.example"
	req.Header.Set("Authorization", "Bearer "+s.token)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host on REST: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// A second token: created by the CLI on the same store, listed without
	// its secret, usable, then revoked and refused.
	out, errOut, st := runCLI(t, "token", "create", "--tenant", "dev", "--scopes", "reviews:read", "--name", "e2e", "--expires", "1d", "--data-dir", dataDir)
	tok := strings.TrimSpace(out)
	if st != 0 || !strings.HasPrefix(tok, "bst_") {
		t.Fatalf("token create: %d %q %q", st, out, errOut)
	}
	id := regexp.MustCompile(`token (\S+) for tenant`).FindStringSubmatch(errOut)
	if id == nil {
		t.Fatalf("token create printed no id: %q", errOut)
	}
	out, _, st = runCLI(t, "token", "list", "--tenant", "dev", "--data-dir", dataDir)
	if st != 0 || !strings.Contains(out, id[1]+"\tactive\te2e\treviews:read") || strings.Contains(out, "bst_") {
		t.Errorf("token list: %d %q", st, out)
	}
	if code, _, body := httpDo(t, "GET", s.base+"/api/v1/targets", tok, ""); code != 200 || !strings.Contains(body, demo.Host) {
		t.Errorf("GET targets with the new token: %d %s", code, body)
	}
	// The read-only token cannot write.
	if code, _, body := httpDo(t, "POST", s.base+"/api/v1/reviews", tok, `{"url":"https://`+demo.Host+`/pricing","client_request_id":"e2e-readonly-1"}`); code != http.StatusForbidden {
		t.Errorf("POST reviews with a read-only token: %d %s", code, body)
	}
	if out, errOut, st := runCLI(t, "token", "revoke", "--tenant", "dev", "--data-dir", dataDir, id[1]); st != 0 {
		t.Fatalf("token revoke: %d %q %q", st, out, errOut)
	}
	if out, _, _ := runCLI(t, "token", "list", "--tenant", "dev", "--data-dir", dataDir); !strings.Contains(out, id[1]+"\trevoked") {
		t.Errorf("token list after revoke: %q", out)
	}
	if code, h, _ := httpDo(t, "GET", s.base+"/api/v1/targets", tok, ""); code != http.StatusUnauthorized || !strings.Contains(h.Get("WWW-Authenticate"), "invalid_token") {
		t.Errorf("revoked token: %d %q", code, h.Get("WWW-Authenticate"))
	}
	if _, errOut, st := runCLI(t, "token", "revoke", "--tenant", "other", "--data-dir", dataDir, id[1]); st == 0 {
		t.Errorf("another tenant revoked the token: %q", errOut)
	}
}

// TestServeKillSwitch: BASTION_MCP=off hides /mcp (404, as for an unknown
// path) while health and the REST API keep answering.
func TestServeKillSwitch(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	s := startServe(t, "serve-off", []string{"BASTION_MCP=off"}, "--dev", "--data-dir", t.TempDir(), "--log-level", "warn")
	if code, _, body := httpDo(t, "POST", s.mcpURL, s.token, toolsListBody); code != http.StatusNotFound {
		t.Errorf("/mcp with BASTION_MCP=off: %d %s", code, body)
	}
	if code, _, _ := httpDo(t, "GET", s.base+"/livez", "", ""); code != 200 {
		t.Errorf("/livez: %d", code)
	}
	if code, _, body := httpDo(t, "GET", s.base+"/api/v1/targets", s.token, ""); code != 200 {
		t.Errorf("REST with the MCP path off: %d %s", code, body)
	}
}

// TestServeAgentAccessOff: a tenant whose agent access is off gets 404 on
// the MCP path with a valid token, as if it did not exist; REST still works.
func TestServeAgentAccessOff(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	s := startServe(t, "serve-agent-off", nil, "--dev", "--agent-access-off", devTenant, "--data-dir", t.TempDir(), "--log-level", "warn")
	if code, _, body := httpDo(t, "POST", s.mcpURL, s.token, toolsListBody); code != http.StatusNotFound || !strings.Contains(body, "not_found") {
		t.Errorf("/mcp for a tenant with agent access off: %d %s", code, body)
	}
	if code, _, body := httpDo(t, "GET", s.base+"/api/v1/targets", s.token, ""); code != 200 {
		t.Errorf("REST for that tenant: %d %s", code, body)
	}
}

// TestServeRefusesExposure: no unauthenticated or --dev server on a
// non-loopback address; the refusal comes before anything is opened.
func TestServeRefusesExposure(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"serve", "--unsafe-no-auth-loopback", "--addr", "0.0.0.0:0"},
		{"serve", "--dev", "--addr", "0.0.0.0:0"},
		{"serve", "--unsafe-no-auth-loopback", "--addr", ":0"},
		{"serve", "--admin-addr", "0.0.0.0:0", "--addr", "127.0.0.1:0"},
	} {
		_, errOut, st := runCLI(t, append(args, "--data-dir", t.TempDir())...)
		if st != 1 || !strings.Contains(errOut, "INVALID_ARGUMENT") {
			t.Errorf("%v: exit %d, %q", args, st, errOut)
		}
	}
}

// TestServeReplicas runs two `bastion serve` replicas on one PostgreSQL
// database as a serving role that owns nothing: a review submitted on one is
// polled on the other, the replica running it is SIGKILLed, and the
// survivor finishes it and runs a recheck submitted to it.
func TestServeReplicas(t *testing.T) {
	testenv.Chromium(t)
	pg := testenv.StartPostgres(t)
	t.Parallel()
	site := demoSite(t)
	ctx := context.Background()
	ownerURL := pg.NewDatabase(t)
	if err := postgres.CreateAppRole(ctx, pg.AdminURL(), "bastion_e2e_app", "e2e-pass"); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(ownerURL)
	u.User = url.UserPassword("bastion_e2e_app", "e2e-pass")
	appURL := u.String()
	db := []string{"--database-url", appURL, "--migrate-url", ownerURL}

	// The serving role alone is refused as the migrator (it owns nothing,
	// so it cannot create the tables), and the owner is refused as the
	// serving role.
	if _, errOut, st := runCLI(t, "token", "list", "--tenant", "dev", "--database-url", ownerURL, "--migrate-url", ownerURL); st != 1 || !strings.Contains(errOut, "row-level security") {
		t.Errorf("owner as serving role: exit %d %q", st, errOut)
	}
	out, errOut, st := runCLI(t, append([]string{"token", "create", "--tenant", "dev", "--scopes", "reviews:read,reviews:write", "--expires", "1d"}, db...)...)
	tok := strings.TrimSpace(out)
	if st != 0 || !strings.HasPrefix(tok, "bst_") {
		t.Fatalf("token create on postgres: %d %q %q", st, out, errOut)
	}

	// The review timeout must fit a capture on a loaded CI machine (it runs
	// beside the corpus test's CPU burners); the rescue must come after it.
	// River names its client at debug (a library's routine), and the test
	// reads each replica's client id from that line.
	timing := []string{"--review-timeout", "40s", "--rescue-stuck-after", "65s", "--log-level", "debug"}
	args := append(append(append([]string{}, db...), timing...), demo.StdioArgs(site)...)
	a := startServe(t, "replica-a", nil, args...)
	b := startServe(t, "replica-b", nil, args...)
	if a.clientID == "" || b.clientID == "" || a.clientID == b.clientID {
		t.Fatalf("river client ids %q and %q", a.clientID, b.clientID)
	}
	csA := connectHTTP(t, a.mcpURL, tok, "2025-11-25")
	csB := connectHTTP(t, b.mcpURL, tok, "2026-07-28")

	sub := mustCall(t, csA, "design_review", submitArgs("e2e-replica-1"))
	jobID := sub.Job.JobID
	// Find the replica whose River client holds the job, while it runs.
	conn, err := pgx.Connect(ctx, ownerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var holder string
	for deadline := time.Now().Add(30 * time.Second); holder == ""; time.Sleep(20 * time.Millisecond) {
		r := mustCall(t, csB, "design_review_get", map[string]any{"job_id": jobID, "view": "status"})
		if r.Job.Status != "queued" && r.Job.Status != "running" {
			t.Fatalf("job %s is %s before it could be interrupted", jobID, r.Job.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replica picked job %s up", jobID)
		}
		if r.Job.Status != "running" {
			continue
		}
		err := conn.QueryRow(ctx, `SELECT attempted_by[array_length(attempted_by, 1)] FROM river_job
			WHERE state = 'running' AND args::text LIKE '%' || $1 || '%'`, jobID).Scan(&holder)
		if err != nil && err != pgx.ErrNoRows {
			t.Fatalf("find the job's replica: %v", err)
		}
	}
	victim, survivor, csSurvivor := a, b, csB
	if holder == b.clientID {
		victim, survivor, csSurvivor = b, a, csA
	} else if holder != a.clientID {
		t.Fatalf("job held by %q, neither %q nor %q", holder, a.clientID, b.clientID)
	}
	t.Logf("job %s runs on %s; killing it", jobID, victim.name)
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-victim.exited
	killed := time.Now()
	done := waitJob(t, csSurvivor, jobID, 180*time.Second)
	t.Logf("job %s %s on %s %s after the kill", jobID, done.Job.Status, survivor.name, time.Since(killed).Round(100*time.Millisecond))
	if done.Job.Status != "completed" || done.Review == nil || len(done.Review.Findings) == 0 {
		t.Fatalf("after the kill: %+v (error %+v)", done.Job, done.Job.Error)
	}
	var ids []string
	for _, f := range done.Review.Findings {
		ids = append(ids, f.FindingID)
	}
	site.SetRevision(2)
	rc := mustCall(t, csSurvivor, "design_recheck", map[string]any{
		"review_id": done.Job.ReviewID, "finding_ids": ids, "expected_revision": demo.Revision2,
		"client_request_id": "e2e-replica-rck-1",
	})
	res := waitJob(t, csSurvivor, rc.Job.JobID, 60*time.Second)
	if res.Job.Status != "completed" || res.Recheck == nil || len(res.Recheck.Outcomes) != len(ids) {
		t.Fatalf("recheck on %s: %+v", survivor.name, res.Job)
	}
}

// jwtIssuer is a real OAuth issuer in miniature: one Ed25519 key, its JWKS
// served over TLS on loopback (a plain-http JWKS is refused), tokens signed
// with the standard library. env makes a bastion process trust its test CA.
type jwtIssuer struct {
	url  string
	priv ed25519.PrivateKey
	env  []string
}

func startIssuer(t *testing.T) *jwtIssuer {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "OKP", "crv": "Ed25519", "kid": "k1", "alg": "EdDSA", "use": "sig",
		"x": base64.RawURLEncoding.EncodeToString(pub),
	}}})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(jwks)
	}))
	t.Cleanup(srv.Close)
	// httptest's certificate is its own CA: a child process trusts it
	// through SSL_CERT_FILE, the standard library's root override.
	ca := filepath.Join(t.TempDir(), "issuer-ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &jwtIssuer{url: srv.URL, priv: priv, env: []string{"SSL_CERT_FILE=" + ca}}
}

// token signs claims (with iss, exp and iat defaulted) as an at+jwt.
func (i *jwtIssuer) token(claims map[string]any) string { return i.tokenTyp(claims, "at+jwt") }

// tokenTyp is token with another JWS typ ("" for none).
func (i *jwtIssuer) tokenTyp(claims map[string]any, typ string) string {
	now := time.Now()
	full := map[string]any{"iss": i.url, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	for k, v := range claims {
		full[k] = v
	}
	enc := base64.RawURLEncoding.EncodeToString
	hdr := map[string]any{"alg": "EdDSA", "kid": "k1"}
	if typ != "" {
		hdr["typ"] = typ
	}
	h, _ := json.Marshal(hdr)
	p, _ := json.Marshal(full)
	input := enc(h) + "." + enc(p)
	return input + "." + enc(ed25519.Sign(i.priv, []byte(input)))
}

// TestServeJWT: with --resource, --issuer and --jwks-url, serve accepts the
// issuer's access tokens for this resource only, advertises its RFC 9728
// metadata in the challenge, and a read-only token cannot start a review.
func TestServeJWT(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	iss := startIssuer(t)
	const resource = "https://bastion.example.test/mcp"
	s := startServe(t, "serve-jwt", iss.env, "--data-dir", t.TempDir(), "--log-level", "warn",
		"--resource", resource, "--issuer", iss.url, "--jwks-url", iss.url+"/jwks", "--jwks-allow-private",
		"--require-at-jwt", "--method-scopes", "initialize=reviews:read")

	code, _, body := httpDo(t, "GET", s.base+"/.well-known/oauth-protected-resource/mcp", "", "")
	var md struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.Unmarshal([]byte(body), &md); code != 200 || err != nil || md.Resource != resource ||
		len(md.AuthorizationServers) != 1 || md.AuthorizationServers[0] != iss.url {
		t.Errorf("metadata: %d %s", code, body)
	}
	code, h, _ := httpDo(t, "POST", s.mcpURL, "", toolsListBody)
	if want := `resource_metadata="https://bastion.example.test/.well-known/oauth-protected-resource/mcp"`; code != 401 || !strings.Contains(h.Get("WWW-Authenticate"), want) {
		t.Errorf("no token: %d %q, want %s", code, h.Get("WWW-Authenticate"), want)
	}
	wrongAud := iss.token(map[string]any{"sub": "alice", "aud": "https://other.example.test/mcp", "tenant_id": "t1", "scope": "reviews:read"})
	if code, h, _ := httpDo(t, "POST", s.mcpURL, wrongAud, toolsListBody); code != 401 || !strings.Contains(h.Get("WWW-Authenticate"), "invalid_token") {
		t.Errorf("wrong audience: %d %q", code, h.Get("WWW-Authenticate"))
	}

	readOnly := iss.token(map[string]any{"sub": "alice", "aud": resource, "tenant_id": "t1", "scope": "reviews:read"})
	// --require-at-jwt: a JWT of another type (an ID token) is refused.
	for _, typ := range []string{"", "JWT"} {
		tok := iss.tokenTyp(map[string]any{"sub": "alice", "aud": resource, "tenant_id": "t1", "scope": "reviews:read"}, typ)
		if code, h, _ := httpDo(t, "POST", s.mcpURL, tok, toolsListBody); code != 401 || !strings.Contains(h.Get("WWW-Authenticate"), "wrong type") {
			t.Errorf("typ %q with --require-at-jwt: %d %q", typ, code, h.Get("WWW-Authenticate"))
		}
	}
	// --method-scopes initialize=reviews:read: a token without it can
	// neither initialize nor use the stateless wire, and is told the scope.
	noScope := iss.token(map[string]any{"sub": "bob", "aud": resource, "tenant_id": "t1", "scope": "openid"})
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for name, body := range map[string]string{"initialize": initBody, "stateless tools/list": statelessListBody} {
		code, h, _ := httpDo(t, "POST", s.mcpURL, noScope, body)
		if want := `error="insufficient_scope", scope="reviews:read"`; code != 403 || !strings.Contains(h.Get("WWW-Authenticate"), want) {
			t.Errorf("%s without reviews:read: %d %q, want 403 %s", name, code, h.Get("WWW-Authenticate"), want)
		}
	}
	// A token in the query string is not read, and a padded one is
	// malformed: both are 401 with the challenge, never 400.
	if code, h, _ := httpDo(t, "POST", s.mcpURL+"?access_token="+readOnly, "", toolsListBody); code != 401 || !strings.Contains(h.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Errorf("token in the query: %d %q, want 401 with the challenge", code, h.Get("WWW-Authenticate"))
	}
	if code, h, _ := httpDo(t, "POST", s.mcpURL, strings.Replace(readOnly, ".", "=.", 1), toolsListBody); code != 401 || !strings.Contains(h.Get("WWW-Authenticate"), "invalid_token") {
		t.Errorf("padded token: %d %q, want 401 invalid_token", code, h.Get("WWW-Authenticate"))
	}
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		cs := connectHTTP(t, s.mcpURL, readOnly, v)
		tools, err := cs.ListTools(context.Background(), nil)
		if err != nil || len(tools.Tools) != 5 {
			t.Fatalf("%s tools/list with a JWT: %v %v", v, tools, err)
		}
		_, raw, isErr := callHTTP(t, cs, "design_review", submitArgs("e2e-jwt-"+v))
		if !isErr || !strings.Contains(raw, "INSUFFICIENT_SCOPE") {
			t.Errorf("%s: read-only design_review: error %v %s", v, isErr, raw)
		}
	}
	if code, _, body := httpDo(t, "GET", s.base+"/api/v1/targets", readOnly, ""); code != 200 {
		t.Errorf("REST with a JWT: %d %s", code, body)
	}
}

func TestParseTTL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"": 0, "0": 0, "30d": 30 * 24 * time.Hour, "1d": 24 * time.Hour, "12h": 12 * time.Hour, "90m": 90 * time.Minute} {
		if got, err := parseTTL(in); err != nil || got != want {
			t.Errorf("parseTTL(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"-1d", "0d", "30dd", "d", "1.5d", "-5h", "forever", "30 d"} {
		if got, err := parseTTL(in); err == nil {
			t.Errorf("parseTTL(%q) = %v, want an error", in, got)
		}
	}
}
