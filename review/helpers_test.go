package review_test

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/store/sqlite"
)

// gateEngine is a controllable review.Engine for tests of concurrency,
// idempotency and arbitration (not of judgments): each Review blocks until
// the gate opens (or its context ends), then returns result or err.
type gateEngine struct {
	gate    chan struct{} // closed to let runs finish; nil means no wait
	started chan string   // receives each run's URL when it begins, if non-nil
	result  *engine.Result
	err     error
	outs    []engine.RecheckOutcome
	reviews atomic.Int32
	rechks  atomic.Int32
	lastRR  atomic.Pointer[engine.RecheckRequest]
}

func (g *gateEngine) wait(ctx context.Context, what string) error {
	if g.started != nil {
		select {
		case g.started <- what:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if g.gate == nil {
		return nil
	}
	select {
	case <-g.gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gateEngine) Review(ctx context.Context, req engine.Request) (*engine.Result, error) {
	g.reviews.Add(1)
	if err := g.wait(ctx, req.URL); err != nil {
		return nil, err
	}
	if g.err != nil {
		return nil, g.err
	}
	r := *g.result
	return &r, nil
}

func (g *gateEngine) Recheck(ctx context.Context, req engine.RecheckRequest) ([]engine.RecheckOutcome, error) {
	g.rechks.Add(1)
	g.lastRR.Store(&req)
	if err := g.wait(ctx, req.URL); err != nil {
		return nil, err
	}
	var out []engine.RecheckOutcome
	for _, f := range req.Findings {
		for _, o := range g.outs {
			if o.FindingID == f.ID {
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// allowAuthorizer authorizes https URLs on an allowlist of hosts; the lead
// swaps in the real egress guard and targets registry.
type allowAuthorizer struct {
	hosts []string
	calls atomic.Int32
}

func (a *allowAuthorizer) AuthorizeTarget(_ context.Context, tenant, raw string) (string, string, error) {
	a.calls.Add(1)
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fault.New(fault.URLNotAllowed, "the preview URL is malformed")
	}
	if !slices.Contains(a.hosts, u.Hostname()) {
		return "", "", fault.New(fault.DomainUnverified, "host %s is not an ownership-verified target for tenant %s", u.Hostname(), tenant)
	}
	return u.String(), u.Hostname(), nil
}

// testClock is a settable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// sampleResult is a review with a grounded, an advisory, a nit and an
// ungrounded finding.
func sampleResult() *engine.Result {
	return &engine.Result{
		Grade: engine.NeedsWork,
		Findings: []engine.Finding{
			{ID: "f_001", Kind: "contrast", Severity: engine.Major, Route: "/", Selector: "#cta", Fix: "set color to #1a1a1a", EvidenceID: "ev_001",
				Viewports: []engine.Viewport{engine.Mobile}, Facts: engine.Facts{"ratio": 2.9}},
			{ID: "f_002", Kind: "hierarchy", Severity: engine.Minor, Route: "/", Selector: "h1", Fix: "consider a larger heading", Advisory: true},
			{ID: "f_003", Kind: "spacing", Severity: engine.Nit, Route: "/", Selector: ".card", Fix: "use the 8px scale"},
			{ID: "f_004", Kind: "overflow", Severity: engine.Blocker, Route: "/", Selector: "", Fix: "constrain the table"},
		},
		Evidence: []engine.Evidence{{ID: "ev_001", MIMEType: "image/png", Data: []byte("\x89PNG-crop")}},
		Coverage: engine.Coverage{RoutesRequested: []string{"/"}, RoutesReviewed: []string{"/"}},
	}
}

type bundle struct {
	svc   *review.Service
	db    *sqlite.DB
	path  string
	eng   *gateEngine
	auth  *allowAuthorizer
	clock *testClock
	p     principal.Principal
}

type setupOpts struct {
	path    string // reuse a database; empty means a fresh one
	start   bool   // run workers
	eng     *gateEngine
	clock   *testClock
	options review.Options
}

func setup(t testing.TB, so setupOpts) *bundle {
	t.Helper()
	ctx := context.Background()
	if so.path == "" {
		so.path = filepath.Join(t.TempDir(), sqlite.FileName)
	}
	db, err := sqlite.Open(ctx, so.path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if so.eng == nil {
		so.eng = &gateEngine{result: sampleResult()}
	}
	if so.clock == nil {
		so.clock = &testClock{t: time.Now()}
	}
	auth := &allowAuthorizer{hosts: []string{"preview.example.com", "other.example.com"}}
	o := so.options
	if o.FetchPollInterval == 0 {
		o.FetchPollInterval = 20 * time.Millisecond
	}
	if o.CancelPollInterval == 0 {
		o.CancelPollInterval = 50 * time.Millisecond
	}
	svc, err := review.New(review.Deps{Store: db, Engine: so.eng, Authorizer: auth, Clock: so.clock}, riversqlite.New(db.SQL()), o)
	if err != nil {
		t.Fatal(err)
	}
	if so.start {
		if err := svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		svc.Stop(sctx)
		db.Close()
	})
	return &bundle{svc: svc, db: db, path: so.path, eng: so.eng, auth: auth, clock: so.clock, p: mustPrincipal(t, "acme", "alice", principal.AllScopes()...)}
}

func mustPrincipal(t testing.TB, tenant, id string, scopes ...principal.Scope) principal.Principal {
	t.Helper()
	p, err := principal.New(tenant, id, scopes...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func submitParams(key string) *review.SubmitParams {
	return &review.SubmitParams{URL: "https://preview.example.com/pricing", ClientRequestID: key}
}

// wantCode fails unless err is a *fault.Error with code.
func wantCode(t *testing.T, err error, code fault.Code) *fault.Error {
	t.Helper()
	e, ok := fault.As(err)
	if !ok || e.Code != code {
		t.Fatalf("err = %v, want code %s", err, code)
	}
	return e
}

// waitTerminal polls Get until the job is terminal.
func waitTerminal(t *testing.T, b *bundle, p principal.Principal, id string) review.Job {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		g, err := b.svc.Get(context.Background(), p, &review.GetParams{JobID: id, View: review.ViewStatus})
		if err != nil {
			t.Fatal(err)
		}
		switch g.Job.Status {
		case "completed", "failed", "cancelled":
			return g.Job
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("job %s did not finish", id)
	return review.Job{}
}

// completedReview submits and completes a review, returning its job.
func completedReview(t *testing.T, b *bundle, key string, in *review.SubmitParams) review.Job {
	t.Helper()
	if in == nil {
		in = submitParams(key)
	}
	res, err := b.svc.Submit(context.Background(), b.p, in)
	if err != nil {
		t.Fatal(err)
	}
	j := waitTerminal(t, b, b.p, res.Job.JobID)
	if j.Status != "completed" {
		t.Fatalf("review ended %s (%+v)", j.Status, j.Error)
	}
	return j
}

func balance(t *testing.T, b *bundle) int64 {
	t.Helper()
	bal, err := b.db.BalanceGet(context.Background(), b.p.Tenant(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	return bal
}

var errBoom = errors.New("boom: dial 10.0.0.7:443 refused")

func nil2Driver(b *bundle) *riversqlite.Driver { return riversqlite.New(b.db.SQL()) }
