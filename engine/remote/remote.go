// Package remote implements engine.Engine over a pool of engines that speak
// the signed job API of the peer contract (§14, §15): `bastion engine
// serve` processes, or any engine written for that API. It lets API
// replicas hand captures to separate engine machines.
//
// A review is split by route into as many jobs as there are engines (at
// most one job per route), each submitted to the engine with the fewest of
// this client's jobs in flight (ties in turn), polled to its end, and
// cancelled with DELETE when the caller's context ends, even mid-submit
// (the id is then learnt by replaying the idempotency key). A job whose engine
// stops answering (unreachable, 5xx, job lost) is submitted again to
// another engine; when none is left the review fails UNAVAILABLE,
// retriable. The parts are merged back into one design.Result.
//
// The wire carries less than design.Result: no page health, no finding
// boxes, no tokens source, and skipped captures only as not-reviewed prose.
// The reverse mapping (result.go) keeps what the wire has and invents
// nothing else. §14 has no token file either: a request's Tokens are not
// sent, and the result says so in its checks-off.
//
// §14 has no recheck request, so Recheck is a full review of each
// finding's route at its first viewport, and a finding is matched by its
// stable id (kind, route, selector): seen again at that viewport is
// failed, absent from a reviewed capture is passed, a capture the engine
// could not take is inconclusive. Unlike the local engine's re-measure, a
// removed element therefore reads as passed.
//
// Invariants: every connection, to an engine and to an artifact URL an
// engine names, is checked and dialed by the egress guard; an artifact is
// fetched only from the origin of the engine that ran the job, and kept
// only if it is a PNG; every attempt is signed afresh (enginehttp.Sign) and
// never reuses a timestamp; errors name engines by number, never by
// address.
package remote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/enginehttp"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/internal/clip"
)

// Defaults of Options.
const (
	DefaultRequestTimeout = 5 * time.Second // §14's per-request timeout
	DefaultPollInterval   = 500 * time.Millisecond
	DefaultDownFor        = 30 * time.Second
	// pollFailures is how many polls in a row may fail before the job is
	// taken to another engine.
	pollFailures = 3
	// maxArtifactBytes bounds one evidence crop.
	maxArtifactBytes = 4 << 20
)

// Options configures New.
type Options struct {
	// URLs are the engines' base URLs, http or https, no query (required).
	URLs []string
	// Installation and Secret are the identity the engines know this
	// client by: one line of their secrets file (required).
	Installation string
	Secret       []byte
	// Guard checks and dials every connection (required). The engines run
	// on the operator's own network, so the composition passes a guard
	// that allows private addresses (egress.Guard.WithPrivate).
	Guard *egress.Guard
	// RequestTimeout bounds each HTTP request; zero means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// PollInterval is the wait between job reads; zero means
	// DefaultPollInterval.
	PollInterval time.Duration
	// DownFor is how long an engine that failed is passed over while
	// another is up; zero means DefaultDownFor.
	DownFor time.Duration
	// Depth is the depth asked of the engines; "" means "deep".
	Depth string
	// Now is the clock of the signatures; nil means time.Now.
	Now func() time.Time
	// Logger receives engine failures with the engine's URL. Nil discards.
	Logger *slog.Logger
}

// Engine is an engine.Engine over a pool of remote engines. It is safe for
// concurrent use.
type Engine struct {
	o         Options
	peers     []*peer
	signer    *signer
	client    *http.Client // the job API
	artifacts *http.Client // evidence crops
	log       *slog.Logger

	mu   sync.Mutex // guards next; never held across I/O
	next int        // where the next tie-break starts
}

var _ engine.Engine = (*Engine)(nil)

// New checks o and returns the Engine. It contacts no engine.
func New(o Options) (*Engine, error) {
	if len(o.URLs) == 0 {
		return nil, fault.New(fault.InvalidArgument, "at least one engine URL is required")
	}
	if !enginehttp.ValidInstallationID(o.Installation) || len(o.Secret) == 0 {
		return nil, fault.New(fault.InvalidArgument, "an installation id and its secret are required")
	}
	if o.Guard == nil {
		return nil, fault.New(fault.InvalidArgument, "the remote engine needs the egress guard")
	}
	o.RequestTimeout = cmpOr(o.RequestTimeout, DefaultRequestTimeout)
	o.PollInterval = cmpOr(o.PollInterval, DefaultPollInterval)
	o.DownFor = cmpOr(o.DownFor, DefaultDownFor)
	if o.Depth == "" {
		o.Depth = "deep"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	e := &Engine{o: o, signer: &signer{installation: o.Installation, secret: o.Secret, now: o.Now}, log: o.Logger}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	for i, raw := range o.URLs {
		u, err := url.Parse(strings.TrimSuffix(strings.TrimSpace(raw), "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, fault.New(fault.InvalidArgument, "engine URL %d must be an http(s) base URL without credentials, query or fragment", i+1)
		}
		e.peers = append(e.peers, &peer{n: i + 1, base: u.String(), origin: u.Scheme + "://" + u.Host})
	}
	// Redirects are refused: an engine does not move, and a redirect would
	// carry the signed headers elsewhere.
	e.client = o.Guard.HTTPClient(egress.ClientOptions{MaxBytes: maxResponseBody + 1, Timeout: o.RequestTimeout, MaxRedirects: -1})
	e.artifacts = o.Guard.HTTPClient(egress.ClientOptions{MaxBytes: maxArtifactBytes, Timeout: o.RequestTimeout, MaxRedirects: -1})
	return e, nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Load is one engine's state as this client sees it.
type Load struct {
	Engine   int  // 1-based, in the order of Options.URLs
	InFlight int  // this client's jobs running there
	Down     bool // failed lately and passed over while another is up
}

// Loads reports every engine's load, in the order of Options.URLs.
func (e *Engine) Loads() []Load {
	now := e.o.Now()
	out := make([]Load, len(e.peers))
	for i, p := range e.peers {
		p.mu.Lock()
		out[i] = Load{Engine: p.n, InFlight: p.inFlight, Down: now.Before(p.downUntil)}
		p.mu.Unlock()
	}
	return out
}

// pick chooses an engine not in tried: the fewest jobs in flight among
// those up, ties broken in turn; an engine marked down only when no other
// is left. It returns nil when every engine was tried.
func (e *Engine) pick(tried []*peer) *peer {
	e.mu.Lock()
	start := e.next
	e.next++
	e.mu.Unlock()
	now := e.o.Now()
	var best *peer
	bestLoad, bestDown := 0, true
	for i := range e.peers {
		p := e.peers[(start+i)%len(e.peers)]
		if slices.Contains(tried, p) {
			continue
		}
		p.mu.Lock()
		load, down := p.inFlight, now.Before(p.downUntil)
		p.mu.Unlock()
		if best == nil || (bestDown && !down) || (down == bestDown && load < bestLoad) {
			best, bestLoad, bestDown = p, load, down
		}
	}
	return best
}

func (p *peer) add(n int) {
	p.mu.Lock()
	p.inFlight += n
	p.mu.Unlock()
}

func (e *Engine) markDown(p *peer, err error) {
	p.mu.Lock()
	p.downUntil = e.o.Now().Add(e.o.DownFor)
	p.mu.Unlock()
	e.log.Warn("remote: engine failed; its work goes to another engine", "engine", p.base, "err", err)
}

// Ready reports whether at least one engine's /readyz answers 200.
func (e *Engine) Ready(ctx context.Context) error {
	var errs []error
	for _, p := range e.peers {
		ctx, cancel := context.WithTimeout(ctx, e.o.RequestTimeout)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/readyz", nil)
		if err == nil {
			var res *http.Response
			if res, err = e.client.Do(req); err == nil {
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					cancel()
					return nil
				}
				err = fmt.Errorf("status %d", res.StatusCode)
			}
		}
		cancel()
		e.log.Warn("remote: engine not ready", "engine", p.base, "err", err)
		errs = append(errs, fmt.Errorf("%s: %w", p, err))
	}
	return fault.Wrap(errors.Join(errs...), fault.Unavailable, "no engine of the pool is ready (%d configured)", len(e.peers))
}

// part is one job of a review: some of its routes at all its viewports.
type part struct {
	routes []string
	res    *design.Result
	err    error
}

// Review splits req by route over the engines, runs the parts at once and
// merges them.
func (e *Engine) Review(ctx context.Context, req engine.Request) (*design.Result, error) {
	if req.URL == "" || len(req.Routes) == 0 || len(req.Viewports) == 0 {
		return nil, fault.New(fault.InvalidArgument, "a review needs a URL, a route and a viewport")
	}
	parts := make([]*part, min(len(req.Routes), len(e.peers)))
	for i := range parts {
		parts[i] = &part{}
	}
	for i, r := range req.Routes {
		parts[i%len(parts)].routes = append(parts[i%len(parts)].routes, r)
	}
	prog := newProgress(req.Progress, len(req.Routes)*len(req.Viewports))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, pt := range parts {
		wg.Go(func() {
			pt.res, pt.err = e.runPart(ctx, req, pt.routes, prog)
			if pt.err != nil {
				cancel() // the review fails as a whole: stop the other parts
			}
		})
	}
	wg.Wait()
	for _, pt := range parts {
		if pt.err != nil && !errors.Is(pt.err, context.Canceled) {
			return nil, pt.err
		}
	}
	for _, pt := range parts {
		if pt.err != nil {
			return nil, pt.err
		}
	}
	res := merge(req, parts)
	prog.judging()
	return res, nil
}

// runPart runs one part on an engine, moving it to another when its engine
// fails, until it completes, fails on the engine, or no engine is left.
func (e *Engine) runPart(ctx context.Context, req engine.Request, routes []string, prog *progress) (*design.Result, error) {
	key := newKey()
	body := &submitBody{IdempotencyKey: key, Depth: e.o.Depth, Request: wireRequest{URL: req.URL, Routes: routes, Depth: e.o.Depth}}
	for _, v := range req.Viewports {
		body.Request.Viewports = append(body.Request.Viewports, string(v))
	}
	var tried []*peer
	var last error
	for {
		p := e.pick(tried)
		if p == nil {
			return nil, fault.Wrap(last, fault.Unavailable, "no engine of the pool could finish the review (%d tried)", len(tried))
		}
		tried = append(tried, p)
		res, err := e.runOn(ctx, p, body, len(routes)*len(req.Viewports), prog)
		var down *errDown
		if !errors.As(err, &down) {
			return res, err
		}
		e.markDown(p, err)
		last = err
	}
}

// runOn submits the part to p and polls it to its end.
func (e *Engine) runOn(ctx context.Context, p *peer, body *submitBody, captures int, prog *progress) (*design.Result, error) {
	p.add(1)
	defer p.add(-1)
	id, err := e.submit(ctx, p, body)
	if err != nil {
		if ctx.Err() != nil {
			e.abandon(ctx, p, body)
		}
		return nil, err
	}
	e.log.Debug("remote: job submitted", "engine", p.base, "job", id)
	failures := 0
	for {
		if err := sleep(ctx, e.o.PollInterval); err != nil {
			e.cancel(ctx, p, id)
			return nil, err
		}
		j, err := e.poll(ctx, p, id)
		var down *errDown
		switch {
		case ctx.Err() != nil:
			e.cancel(ctx, p, id)
			return nil, ctx.Err()
		case errors.As(err, &down) && failures+1 < pollFailures:
			failures++
			continue
		case errors.As(err, &down):
			// The part moves to another engine. Should this one only be
			// slow, not gone, its copy of the job is stopped, without
			// holding up the move.
			go e.cancel(ctx, p, id)
			return nil, err
		case err != nil:
			return nil, err
		}
		failures = 0
		switch j.State {
		case "pending", "running", "cancelling":
			continue
		case "completed":
			if j.Result == nil {
				return nil, &errDown{p, errors.New("a completed job without a result")}
			}
			res := e.resultOf(ctx, p, body.Request, j.Result)
			prog.partDone(captures)
			return res, nil
		case "failed":
			return nil, jobFailed(p, j)
		}
		return nil, &errDown{p, fmt.Errorf("unknown job state %q", clip.String(j.State, 40))}
	}
}

// jobFailed is a job the engine ran and could not finish: its own fault
// code and message when it gave them. A job the engine cancelled on its
// own (this client cancels only when its context ended) may run again.
func jobFailed(p *peer, j *jobRead) error {
	msg := clip.String(j.Error, maxEngineText)
	if j.ErrorCode == "CANCELLED" {
		return fault.New(fault.Unavailable, "%s cancelled the job: %s", p, msg)
	}
	return fault.New(engineCode(fault.Code(j.ErrorCode), fault.JudgmentFailed), "%s could not review the page: %s", p, msg)
}

// engineCode keeps a code an engine sent when it is one a review may end
// with, else def: a remote engine does not get to claim an auth or
// internal failure of this server.
func engineCode(c, def fault.Code) fault.Code {
	switch c {
	case fault.URLNotAllowed, fault.DNSTargetProhibited, fault.DNSResolutionFailed, fault.DomainUnverified,
		fault.RedirectNotAllowed, fault.InvalidArgument, fault.CaptureFailed, fault.JudgmentFailed,
		fault.RateLimited, fault.BudgetExhausted, fault.ResponseTooLarge:
		return c
	}
	return def
}

func newKey() string {
	var b [16]byte
	rand.Read(b[:])
	return "bastion-remote-" + hex.EncodeToString(b[:])
}
