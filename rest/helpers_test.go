package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/auth/authtest"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/rest"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/review/reviewtest"
	"github.com/bastion-mcp/bastion/store/sqlite"
	"github.com/bastion-mcp/bastion/targets"
)

// These tests are about the HTTP mapping, not judgments: the review engine
// is a controllable stand-in (as in review's own tests), while the store
// (SQLite), the job queue (River), the Service, the targets registry, the
// PAT issuer and verifier, auth.Middleware and the loopback listener are the
// real ones.

// staticTXT is a DNS stub answering TXT lookups from a table.
type staticTXT struct {
	mu  sync.Mutex
	txt map[string][]string
}

func (s *staticTXT) set(name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.txt == nil {
		s.txt = map[string][]string{}
	}
	s.txt[name] = []string{value}
}

func (s *staticTXT) LookupTXT(_ context.Context, name string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.txt[name]; ok {
		return slices.Clone(v), nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
}

// sampleResult is the first three findings of reviewtest.SampleResult: no
// ungrounded blocker; f_002 is advisory, so the focus view keeps exactly two.
func sampleResult() *design.Result {
	r := reviewtest.SampleResult()
	r.Findings = r.Findings[:3]
	// The engine places every finding at a viewport and a box; the wire
	// schema requires both.
	for i := range r.Findings {
		f := &r.Findings[i]
		if len(f.Viewports) == 0 {
			f.Viewports = []design.Viewport{design.Desktop}
		}
		f.Box = design.Rect{X: 16, Y: float64(100 * (i + 1)), W: 320, H: 48}
	}
	return r
}

const metadataURL = "https://bastion.test/.well-known/oauth-protected-resource"

// env is one bastion REST API on a loopback listener, over a
// reviewtest.Harness.
type env struct {
	url    string
	db     *sqlite.DB
	reg    *targets.Registry
	txt    *staticTXT
	clock  *reviewtest.Clock
	issuer *auth.PATIssuer
}

type envOpts struct {
	start bool          // run the job workers
	eng   review.Engine // nil: a reviewtest.Engine returning sampleResult()
	noTg  bool          // serve without a targets registry
}

func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	// One clock for the Service, the registry and the handler.
	clock := reviewtest.NewClock(time.Now())
	txt := &staticTXT{}
	var reg *targets.Registry
	if o.eng == nil {
		o.eng = &reviewtest.Engine{Result: sampleResult()}
	}
	h := reviewtest.New(t, reviewtest.Options{Start: o.start, Engine: o.eng, Clock: clock,
		// The real target check: the egress guard over stubbed DNS, then the
		// tenant's registry.
		Authorizer: func(db *sqlite.DB) review.Authorizer {
			reg = targets.NewRegistry(db, txt, nil, clock.Now, targets.Options{})
			guard := egress.NewGuard(egress.Policy{}, egress.StaticResolver{
				"preview.example.com":  {netip.MustParseAddr("93.184.216.34")},
				"internal.example.com": {netip.MustParseAddr("10.0.0.7")},
			})
			return review.TargetPolicy{Guard: guard, Targets: reg}
		}})
	pats := &authtest.MemPATStore{}
	var tg rest.Targets
	if !o.noTg {
		tg = review.NewTargets(reg)
	}
	handler := auth.Middleware(auth.PATVerifier(pats, nil), metadataURL)(
		rest.NewHandler(h.Service, tg, rest.Options{MetadataURL: metadataURL, Now: clock.Now}))
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close) // before the harness's cleanup stops the Service
	return &env{url: srv.URL, db: h.Store, reg: reg, txt: txt, clock: clock, issuer: auth.NewPATIssuer(pats, nil, nil)}
}

// token issues a real PAT for tenant with scopes.
func (e *env) token(t testing.TB, tenant string, scopes ...principal.Scope) string {
	t.Helper()
	tok, _, err := e.issuer.Create(context.Background(), tenant, "test", scopes, 0)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// verify makes host a verified target of tenant through the real
// registry, proving it by the (stubbed) DNS TXT record.
func (e *env) verify(t testing.TB, tenant, host string) {
	t.Helper()
	ctx := context.Background()
	c, err := e.reg.Add(ctx, tenant, host)
	if err != nil {
		t.Fatal(err)
	}
	e.txt.set(c.TXTName, c.TXTValue)
	if _, err := e.reg.Verify(ctx, tenant, host); err != nil {
		t.Fatal(err)
	}
}

func (e *env) count(t testing.TB, table string) int {
	t.Helper()
	var n int
	if err := e.db.SQL().QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// req is one HTTP request.
type req struct {
	method, path string
	token        string
	body         string // sent as application/json unless header says otherwise
	header       http.Header
}

// resp is an answer, its body decoded as JSON when it is JSON.
type resp struct {
	status int
	header http.Header
	raw    []byte
	json   map[string]any
}

func (r resp) errCode() string {
	e, _ := r.json["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func (r resp) errField(name string) any {
	e, _ := r.json["error"].(map[string]any)
	return e[name]
}

func (e *env) do(t testing.TB, rq req) resp {
	t.Helper()
	var body io.Reader
	if rq.body != "" {
		body = strings.NewReader(rq.body)
	}
	hr, err := http.NewRequest(rq.method, e.url+rq.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if rq.body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	if rq.token != "" {
		hr.Header.Set("Authorization", "Bearer "+rq.token)
	}
	for k, vs := range rq.header {
		hr.Header.Del(k)
		for _, v := range vs {
			hr.Header.Add(k, v)
		}
	}
	res, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := resp{status: res.StatusCode, header: res.Header, raw: raw}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &out.json); err != nil {
			t.Fatalf("%s %s: body is not a JSON object: %q", rq.method, rq.path, raw)
		}
	}
	return out
}

// must fails unless r has status.
func (r resp) must(t testing.TB, status int) resp {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d; body %s", r.status, status, r.raw)
	}
	return r
}

// at walks r.json by keys and indexes.
func (r resp) at(path ...any) any {
	var v any = r.json
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func (r resp) str(path ...any) string {
	s, _ := r.at(path...).(string)
	return s
}

// waitJob reads GET status, each read a long poll (?wait=), until the job
// is terminal.
func (e *env) waitJob(t testing.TB, tok, id string) resp {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r := e.do(t, req{method: "GET", path: "/api/v1/reviews/" + id + "?view=status&wait=5s", token: tok}).must(t, 200)
		switch r.str("job", "status") {
		case "completed", "failed", "cancelled":
			return r
		}
	}
	t.Fatalf("job %s did not finish", id)
	return resp{}
}

const submitBody = `{"url":"https://preview.example.com/pricing"}`

func keyHeader(k string) http.Header { return http.Header{"Idempotency-Key": {k}} }
