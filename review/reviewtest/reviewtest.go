// Package reviewtest builds a real review.Service for tests, as
// net/http/httptest builds a real HTTP server: a SQLite store in the test's
// temporary directory, River jobs on that same database, and the Service's
// own Stop and the store's Close run by t.Cleanup. Only the parts a test
// means to control are stand-ins: a gated Engine, a host-list Authorizer and
// a settable Clock, each replaceable through Options.
//
// For tests of judgments rather than of the Service, ChromiumEngine wires
// bastion's local engine (real Chromium behind the egress proxy and guard)
// and NewSite serves the pages it captures on loopback. ChromiumEngine skips
// the test loudly without a Chromium, and fails it when
// BASTION_REQUIRE_DEPS=1 (internal/testenv); nothing else here needs one, so
// tests that stub the engine still run on a machine without a browser.
//
// Everything is per test: no package state, and every value New returns
// belongs to the calling test alone.
package reviewtest

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/bastion-mcp/bastion/capture"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/egress/browserproxy"
	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/engine/local"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/internal/testenv"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/store/sqlite"
)

// The hosts the default Authorizer treats as verified targets of every
// tenant.
const (
	PreviewHost = "preview.example.com"
	OtherHost   = "other.example.com"
)

// stopTimeout bounds how long Cleanup waits for running jobs; a real
// browser's capture is the slowest thing one may be waiting on.
const stopTimeout = 10 * time.Second

// Options configures New. The zero value is a fresh database, no workers,
// an Engine returning SampleResult and a HostAuthorizer for PreviewHost and
// OtherHost.
type Options struct {
	// Path is the SQLite file to open: another Harness's Path puts a
	// second Service (a second process, in effect) on the same database.
	// Empty means a new file in t.TempDir().
	Path string
	// Start runs the job workers and the sweeper; without it jobs stay
	// queued.
	Start bool
	// Engine judges pages; nil means &Engine{Result: SampleResult()}.
	Engine review.Engine
	// Authorizer builds the Service's Authorizer over the harness's store
	// (a real targets registry reads the same database); nil means
	// &HostAuthorizer{Hosts: []string{PreviewHost, OtherHost}}.
	Authorizer func(store *sqlite.DB) review.Authorizer
	// Clock is the Service's clock; nil means the system clock, as in
	// review.Deps. A *Clock lets the test move time.
	Clock review.Clock
	// Review is passed to review.New, except that a zero FetchPollInterval
	// or CancelPollInterval becomes 20ms or 50ms so jobs start and stop
	// quickly.
	Review review.Options
}

// Harness is one review.Service on its own connection to a SQLite
// database. Its fields are set by New and not changed afterwards.
type Harness struct {
	Service *review.Service
	Store   *sqlite.DB
	// Path is the database file, for a second Harness on the same data.
	Path string
	// Principal is tenant acme's alice with every scope: the caller most
	// tests act as.
	Principal principal.Principal
}

// New builds and, if o.Start, starts a Service. It fails t if any part
// cannot be built, and registers a cleanup that stops the Service and
// closes the store.
func New(t testing.TB, o Options) *Harness {
	t.Helper()
	ctx := context.Background()
	if o.Path == "" {
		o.Path = filepath.Join(t.TempDir(), sqlite.FileName)
	}
	db, err := sqlite.Open(ctx, o.Path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if o.Engine == nil {
		o.Engine = &Engine{Result: SampleResult()}
	}
	var auth review.Authorizer = &HostAuthorizer{Hosts: []string{PreviewHost, OtherHost}}
	if o.Authorizer != nil {
		auth = o.Authorizer(db)
	}
	if o.Review.FetchPollInterval == 0 {
		o.Review.FetchPollInterval = 20 * time.Millisecond
	}
	if o.Review.CancelPollInterval == 0 {
		o.Review.CancelPollInterval = 50 * time.Millisecond
	}
	svc, err := review.New(review.Deps{Store: db, Engine: o.Engine, Authorizer: auth, Clock: o.Clock}, riversqlite.New(db.SQL()), o.Review)
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	// Registered before Start so a failed Start still closes the store.
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		_ = svc.Stop(sctx)
		_ = db.Close()
	})
	if o.Start {
		if err := svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return &Harness{Service: svc, Store: db, Path: o.Path, Principal: NewPrincipal(t, "acme", "alice", principal.AllScopes()...)}
}

// WaitTerminal polls the job's status as p until it is completed, failed or
// cancelled, and returns it. It fails t after 20 seconds.
func (h *Harness) WaitTerminal(t testing.TB, p principal.Principal, jobID string) review.Job {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		g, err := h.Service.Get(context.Background(), p, &review.GetParams{JobID: jobID, View: review.ViewStatus})
		if err != nil {
			t.Fatal(err)
		}
		switch g.Job.Status {
		case "completed", "failed", "cancelled":
			return g.Job
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("job %s did not finish", jobID)
	return review.Job{}
}

// NewPrincipal returns the principal, failing t if principal.New refuses it.
func NewPrincipal(t testing.TB, tenant, id string, scopes ...principal.Scope) principal.Principal {
	t.Helper()
	p, err := principal.New(tenant, id, scopes...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// SampleResult is a completed review of "/" with, in order, a grounded
// major finding (f_001, with evidence ev_001), an advisory minor one
// (f_002), a nit (f_003) and an ungrounded blocker without a selector
// (f_004). Each call returns a new value the caller may change.
func SampleResult() *design.Result {
	return &design.Result{
		Grade: design.NeedsWork,
		Findings: []design.Finding{
			{ID: "f_001", Kind: "contrast", Severity: design.Major, Route: "/", Selector: "#cta", Fix: "set color to #1a1a1a", EvidenceID: "ev_001",
				Viewports: []design.Viewport{design.Mobile}, Facts: design.Facts{"ratio": 2.9}},
			{ID: "f_002", Kind: "hierarchy", Severity: design.Minor, Route: "/", Selector: "h1", Fix: "consider a larger heading", Advisory: true},
			{ID: "f_003", Kind: "spacing", Severity: design.Nit, Route: "/", Selector: ".card", Fix: "use the 8px scale"},
			{ID: "f_004", Kind: "overflow", Severity: design.Blocker, Route: "/", Selector: "", Fix: "constrain the table"},
		},
		Evidence: []design.Evidence{{ID: "ev_001", MIMEType: "image/png", Data: []byte("\x89PNG-crop")}},
		Coverage: design.Coverage{RoutesRequested: []string{"/"}, RoutesReviewed: []string{"/"}},
	}
}

// Engine is a controllable review.Engine for tests of the Service's
// concurrency, idempotency and arbitration rather than of judgments. Set
// its fields before the first run; Gate may be replaced while no run is in
// flight or while the only run is blocked sending on Started.
type Engine struct {
	// Gate, when non-nil, holds every run until it is closed or the run's
	// context ends.
	Gate chan struct{}
	// Started, when non-nil, receives each run's URL as the run begins.
	Started chan string
	// Result is what Review returns a shallow copy of; it must be set
	// unless Err is.
	Result *design.Result
	// Err, when non-nil, is what Review and Recheck return after the gate.
	Err error
	// Outs are Recheck's outcomes: those whose FindingID the request
	// names, in the request's order.
	Outs []design.RecheckOutcome
	// Steps are reported, in order, to a review's Request.Progress as the
	// run begins, before Started and Gate.
	Steps []engine.Progress

	reviews atomic.Int32
	last    atomic.Pointer[engine.RecheckRequest]
}

func (e *Engine) wait(ctx context.Context, what string) error {
	if e.Started != nil {
		select {
		case e.Started <- what:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if e.Gate == nil {
		return nil
	}
	select {
	case <-e.Gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Review implements review.Engine.
func (e *Engine) Review(ctx context.Context, req engine.Request) (*design.Result, error) {
	e.reviews.Add(1)
	if req.Progress != nil {
		for _, p := range e.Steps {
			req.Progress(p)
		}
	}
	if err := e.wait(ctx, req.URL); err != nil {
		return nil, err
	}
	if e.Err != nil {
		return nil, e.Err
	}
	r := *e.Result
	return &r, nil
}

// Recheck implements review.Engine.
func (e *Engine) Recheck(ctx context.Context, req engine.RecheckRequest) ([]design.RecheckOutcome, error) {
	e.last.Store(&req)
	if err := e.wait(ctx, req.URL); err != nil {
		return nil, err
	}
	if e.Err != nil {
		return nil, e.Err
	}
	var out []design.RecheckOutcome
	for _, f := range req.Findings {
		for _, o := range e.Outs {
			if o.FindingID == f.ID {
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// Reviews reports how many reviews have begun.
func (e *Engine) Reviews() int { return int(e.reviews.Load()) }

// LastRecheck returns the latest recheck request, or nil if none came.
func (e *Engine) LastRecheck() *engine.RecheckRequest { return e.last.Load() }

// HostAuthorizer is a review.Authorizer that treats Hosts as every tenant's
// verified targets, standing in for the egress guard and targets registry:
// an https URL on one of them is authorized, any other host is
// DOMAIN_UNVERIFIED.
type HostAuthorizer struct {
	Hosts []string
	// Site, when set ("http://127.0.0.1:PORT", a Site's URL), is where the
	// engine is sent: an authorized URL becomes the same path on Site. The
	// real guard would refuse a loopback target for a tenant; the local
	// engine's own guard still checks every browser request. A URL already
	// on Site (a recheck re-authorizes the review's stored URL) is
	// authorized as Hosts[0].
	Site string

	calls atomic.Int32
}

// AuthorizeTarget implements review.Authorizer.
func (a *HostAuthorizer) AuthorizeTarget(_ context.Context, tenant, raw string) (string, string, error) {
	a.calls.Add(1)
	if a.Site != "" && len(a.Hosts) > 0 && strings.HasPrefix(raw, a.Site+"/") {
		return raw, a.Hosts[0], nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return "", "", fault.New(fault.URLNotAllowed, "only https preview URLs are supported")
	}
	if !slices.Contains(a.Hosts, u.Hostname()) {
		return "", "", fault.New(fault.DomainUnverified, "host %s is not an ownership-verified target for tenant %s", u.Hostname(), tenant)
	}
	if a.Site == "" {
		return u.String(), u.Hostname(), nil
	}
	return a.Site + u.RequestURI(), u.Hostname(), nil
}

// Calls reports how many targets the Service has asked to authorize.
func (a *HostAuthorizer) Calls() int { return int(a.calls.Load()) }

// Clock is a review.Clock that stands still until the test moves it. It is
// safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time // guarded by mu
}

// NewClock returns a Clock reading t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now implements review.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock by d, which may be negative.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// ChromiumEngine is bastion's local engine wired like `bastion review
// --allow-private`: real Chromium behind the egress proxy and a guard that
// allows http and loopback, so it can capture a Site. It skips t loudly
// without a Chromium (and fails it when BASTION_REQUIRE_DEPS=1). The
// browser pool and proxy close when t ends.
func ChromiumEngine(t testing.TB) *local.Engine {
	t.Helper()
	chrome := testenv.Chromium(t)
	quiet := slog.New(slog.DiscardHandler)
	guard := egress.NewGuard(egress.Policy{AllowHTTP: true, AllowPrivate: true}, egress.StaticResolver{})
	proxy, err := browserproxy.New(guard, browserproxy.Options{AllowHTTP: true, PrivateTLS: true, RequireAuth: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	pool, err := capture.NewPool(context.Background(), capture.Options{Chrome: chrome, ProxyAddr: proxy.Addr(), Sessions: proxy, Logger: quiet,
		IgnoreCertErrorsSPKIList: []string{proxy.PrivateTLSSPKI()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	return local.New(pool, guard, local.Options{Logger: quiet})
}

// Site is a loopback web server serving HTML pages by path, which the test
// may change between captures (the agent's fix, deployed). It is safe for
// concurrent use.
type Site struct {
	// URL is "http://127.0.0.1:PORT", without a trailing slash.
	URL string

	mu    sync.Mutex
	pages map[string]string // path → HTML; guarded by mu
}

// NewSite serves pages (path → HTML body; any other path is 404) until t
// ends.
func NewSite(t testing.TB, pages map[string]string) *Site {
	t.Helper()
	s := &Site{pages: maps.Clone(pages)}
	if s.pages == nil {
		s.pages = map[string]string{}
	}
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
	s.URL = "http://" + ln.Addr().String()
	return s
}

// Set serves body at path from now on.
func (s *Site) Set(path, body string) {
	s.mu.Lock()
	s.pages[path] = body
	s.mu.Unlock()
}
