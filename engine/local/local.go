// Package local is the engine that runs on this machine: it captures each
// route × viewport in the capture pool's Chromium, through its own egress
// proxy session, runs the design checks on what it measured, merges the
// same defect across viewports, cuts evidence crops and grades the result.
//
// Invariants: the engine never dials anything itself (the browser's every
// request goes through the proxy session of its capture); a route never
// leaves the origin of the authorized URL; findings, ids, order and crops
// are a function of the measurements only, so identical pages give
// identical results; page text reaches the result only as data.
package local

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/bastion-mcp/bastion/capture"
	"github.com/bastion-mcp/bastion/checks"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/evidence"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/internal/clip"
	"github.com/bastion-mcp/bastion/tokens"
)

// Capturer captures one route × viewport; *capture.Pool is the production
// Capturer.
type Capturer interface {
	Capture(ctx context.Context, t capture.Target, m capture.Measure) (*capture.Capture, error)
}

// Canonicalizer spells a URL the one way the egress guard accepts it;
// *egress.Guard is the production one. The engine uses it to re-check each
// route's URL after joining it to the authorized origin (no DNS lookup: the
// proxy checks every address the browser dials).
type Canonicalizer interface {
	Canonicalize(raw string) (*url.URL, error)
}

// Limits on one request.
const (
	MaxRoutes = 20
	maxRoute  = 1024
)

// Progress reports one finished capture (err is nil on success).
type Progress func(route string, vp design.Viewport, took time.Duration, err error)

// Options tune an Engine. The zero value means defaults.
type Options struct {
	// Concurrency bounds the captures one review asks for at once (the
	// pool's queue, sized to the machine, bounds them across reviews); 0
	// means 3, one route's three viewports.
	Concurrency int
	Logger      *slog.Logger // nil means slog.Default()
	Progress    Progress     // nil means none
	Observer    Observer     // nil means none
	// Tracer starts a span per review, per capture (route × viewport, its
	// retries included) and for judging; nil (tracing off) starts none.
	Tracer trace.Tracer
	// Timeout bounds a whole review or recheck; 0 means 3 minutes. It is
	// the captures' only deadline: they get all of it but a reserve for
	// judging (see judgeReserve), however long they wait for a tab.
	Timeout time.Duration
}

// judgeReserve is the part of a review's timeout kept for judging what was
// captured, so a review that runs out of time still returns the captures
// that finished, with the rest named as skipped: a tenth, between 1 s and
// 20 s.
func judgeReserve(timeout time.Duration) time.Duration {
	return min(max(timeout/10, time.Second), 20*time.Second)
}

// Engine reviews previews on this machine. It is safe for concurrent use.
type Engine struct {
	pool  Capturer
	guard Canonicalizer
	opts  Options
}

var _ engine.Engine = (*Engine)(nil)

// New returns an Engine that captures with pool (each capture through a
// proxy session of its own: capture.Options.Sessions),
// and re-canonicalizes every route URL with guard.
func New(pool Capturer, guard Canonicalizer, opts Options) *Engine {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 3
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 3 * time.Minute
	}
	if opts.Observer == nil {
		opts.Observer = noObserver{}
	}
	return &Engine{pool: pool, guard: guard, opts: opts}
}

// shot is one route × viewport capture and what was measured in it.
type shot struct {
	route    string
	vp       design.Viewport
	cap      *capture.Capture
	snap     *checks.Snapshot
	err      error
	attempts int
	// evidence asks for crops of what the checks find, cut while the tab
	// is live (see shootEvidence) with tokens (nil: the page's own).
	evidence bool
	tokens   *tokens.Set
	// recheck asks instead for crops of these findings' elements as they
	// are now (see shootRecheck).
	recheck []design.Finding
	crops   cropSet
	// overview is the unmarked thumbnail of the page (shootOverview), shot
	// with the crops when evidence is asked for.
	overview *overviewShot
	done     func() // or nil: told when the capture ends (Request.Progress)
}

// Review implements engine.Engine.
func (e *Engine) Review(ctx context.Context, req engine.Request) (_ *design.Result, err error) {
	if e.opts.Tracer != nil {
		var span trace.Span
		ctx, span = e.opts.Tracer.Start(ctx, "engine.review")
		defer func() { endSpan(span, err) }()
	}
	base, routes, vps, err := e.validate(req.URL, req.Routes, req.Viewports)
	if err != nil {
		return nil, err
	}
	var fileTokens *tokens.Set
	if req.Tokens != nil {
		if fileTokens, err = tokens.Parse(req.Tokens); err != nil {
			return nil, fault.From(err, "the token file could not be read")
		}
	}
	var jobs []*shot
	for _, r := range routes {
		for _, vp := range vps {
			jobs = append(jobs, &shot{route: r, vp: vp, evidence: true, tokens: fileTokens})
		}
	}
	progress := startProgress(req.Progress, jobs)
	captureStart := time.Now()
	if err := e.captureAll(ctx, base, jobs); err != nil {
		return nil, err
	}
	progress(engine.StageJudging)
	judgeStart := time.Now()
	e.opts.Observer.Stage("capture", judgeStart.Sub(captureStart))
	defer func() { e.opts.Observer.Stage("judge", time.Since(judgeStart)) }()
	if e.opts.Tracer != nil {
		_, span := e.opts.Tracer.Start(ctx, "engine.judge")
		defer span.End()
	}

	res := &design.Result{
		Findings: []design.Finding{},
		Health:   []design.PageHealth{},
		Coverage: design.Coverage{
			RoutesRequested:    routes,
			ViewportsRequested: vps,
			RoutesReviewed:     []string{},
			ViewportsReviewed:  []design.Viewport{},
		},
	}
	// Tokens: the file, else the custom properties the first reviewed
	// page's rules use (a design system is site-wide), else none.
	set, from := fileTokens, "file"
	if set == nil {
		from = "none"
		for _, j := range jobs {
			if j.err == nil && j.snap != nil {
				if s := j.snap.PageTokens(); s != nil {
					set, from = s, "root_custom_properties"
				}
				break
			}
		}
	}
	res.TokensFrom = from
	cfg := set
	var snaps []*checks.Snapshot

	var raw []design.Finding
	reviewed := 0
	for _, j := range jobs {
		if j.cap != nil {
			h := j.cap.Health
			h.Route = j.route
			res.Health = append(res.Health, h)
		}
		if j.err != nil {
			res.Coverage.Skipped = append(res.Coverage.Skipped, design.Skip{
				What: j.route + " @ " + string(j.vp), Reason: skipReason(j.err, j.attempts),
			})
			continue
		}
		reviewed++
		snaps = append(snaps, j.snap)
		if !slices.Contains(res.Coverage.RoutesReviewed, j.route) {
			res.Coverage.RoutesReviewed = append(res.Coverage.RoutesReviewed, j.route)
		}
		if !slices.Contains(res.Coverage.ViewportsReviewed, j.vp) {
			res.Coverage.ViewportsReviewed = append(res.Coverage.ViewportsReviewed, j.vp)
		}
		if j.snap.Truncated {
			// Reviewed, but not whole: say so rather than imply a clean page.
			res.Coverage.Skipped = append(res.Coverage.Skipped, design.Skip{
				What: j.route + " @ " + string(j.vp) + " (partly)", Reason: truncatedReason,
			})
		}
		for _, f := range runChecks(j.snap, cfg) {
			f.Route = j.route
			if len(f.Viewports) == 0 {
				f.Viewports = []design.Viewport{j.vp}
			}
			raw = append(raw, f)
		}
	}
	res.Coverage.ChecksRun, res.Coverage.ChecksOff = checkCoverage(snaps, cfg)
	slices.SortFunc(res.Coverage.ViewportsReviewed, func(a, b design.Viewport) int {
		return cmp.Compare(slices.Index(vps, a), slices.Index(vps, b))
	})
	res.Findings = design.Merge(raw)
	res.Evidence = e.cutEvidence(res.Findings, jobs)
	res.Overviews, res.Evidence = markOverviews(res.Findings, jobs, res.Evidence)
	res.Grade = design.GradeOf(reviewed, res.Findings)
	return res, nil
}

// captureAll runs the jobs with bounded concurrency under the review's
// timeout (or the caller's earlier deadline) less the judging reserve; each job gets its own proxy session,
// closed when its capture ends. A job the deadline stopped keeps its typed
// error (it becomes a named skip); it returns an error only when the
// caller's ctx ended.
func (e *Engine) captureAll(ctx context.Context, base *url.URL, jobs []*shot) error {
	deadline := time.Now().Add(e.opts.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d // the caller's own deadline is earlier
	}
	cctx, cancel := context.WithDeadline(ctx, deadline.Add(-judgeReserve(time.Until(deadline))))
	defer cancel()
	sem := make(chan struct{}, e.opts.Concurrency)
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-cctx.Done():
				j.err = outOfTime(cctx, "before the capture could start")
				return
			}
			defer func() { <-sem }()
			e.captureOne(cctx, base, j)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fault.Wrap(err, fault.CaptureFailed, "the review was cancelled")
	}
	return nil
}

// outOfTime is a job's error when ctx ended before the job ran: the
// review's timeout, named as such, or the caller's cancellation.
func outOfTime(ctx context.Context, when string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fault.Wrap(ctx.Err(), fault.CaptureFailed, "the review's timeout passed %s", when)
	}
	return ctx.Err()
}

// maxAttempts is how often a capture is tried: a failure that may pass
// (a load error, a page that did not settle, a lost browser, a 5xx) is
// retried once while the deadline allows.
const maxAttempts = 2

func (e *Engine) captureOne(ctx context.Context, base *url.URL, j *shot) {
	start := time.Now()
	if e.opts.Tracer != nil {
		var span trace.Span
		ctx, span = e.opts.Tracer.Start(ctx, "engine.capture", trace.WithAttributes(
			attribute.String(attrRoute, j.route), attribute.String(attrViewport, string(j.vp))))
		defer func() {
			span.SetAttributes(attribute.Int(attrAttempts, j.attempts), attribute.String(attrOutcome, captureOutcome(j.err)))
			endSpan(span, j.err)
		}()
	}
	defer func() {
		if e.opts.Progress != nil {
			e.opts.Progress(j.route, j.vp, time.Since(start), j.err)
		}
		if j.done != nil {
			j.done()
		}
	}()
	u, err := e.routeURL(base, j.route)
	if err != nil {
		j.err = err
		return
	}
	for j.attempts = 1; ; j.attempts++ {
		e.attempt(ctx, u, j)
		if j.err == nil || j.attempts >= maxAttempts || !retriable(ctx, j.err) {
			break
		}
		e.opts.Logger.Info("engine: capture failed; retrying", "route", j.route, "viewport", j.vp, "err", j.err)
	}
	if j.err != nil {
		e.opts.Logger.Info("engine: capture skipped", "route", j.route, "viewport", j.vp, "attempts", j.attempts, "err", j.err)
	}
}

// retriable reports whether trying err's capture again could succeed in
// the time left: the deadline has not passed and the failure is not a
// verdict on the page (a refused URL, a 4xx answer, a bad argument).
func retriable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	f, ok := fault.As(err)
	return !ok || f.Retriable
}

// attempt captures j once, at u, and measures it.
func (e *Engine) attempt(ctx context.Context, u string, j *shot) {
	var snap *checks.Snapshot
	var crops cropSet
	var overview *overviewShot
	measure := func(tab context.Context) error {
		s, err := checks.Collect(tab, j.vp)
		snap = s
		switch {
		case err != nil:
		case j.evidence:
			crops = shootEvidence(tab, s, j.tokens, j.vp)
			overview = shootOverview(tab, s, j.vp)
		case len(j.recheck) > 0:
			crops = shootRecheck(tab, s, j.tokens, j.vp, j.recheck)
		}
		return err
	}
	// No full-page screenshot: the crops are shot in the live tab.
	c, err := e.pool.Capture(ctx, capture.Target{URL: u, Viewport: j.vp, NoScreenshot: true}, measure)
	j.cap, j.snap, j.crops, j.overview, j.err = c, snap, crops, overview, err
	if err == nil && c.Health.StatusCode >= 400 {
		f := fault.New(fault.CaptureFailed, "the page answered HTTP %d", c.Health.StatusCode)
		// A server error or a throttle may pass; any other 4xx is the answer.
		f.Retriable = c.Health.StatusCode >= 500 || c.Health.StatusCode == 408 || c.Health.StatusCode == 429
		j.err = f
	}
	if j.err == nil && snap == nil {
		j.err = fault.New(fault.JudgmentFailed, "the page could not be measured")
	}
	e.opts.Observer.Capture(captureOutcome(j.err))
}

// truncatedReason explains a partial measurement: the collector caps its
// work (elements, and the hit tests behind contrast, occlusion and overlap)
// so a huge page stays bounded.
const truncatedReason = "measurement cap reached (elements or hit tests): some elements were not checked"

// skipReason renders a capture error as "CODE: message", client-safe,
// saying how often it was tried.
func skipReason(err error, attempts int) string {
	f, ok := fault.As(err)
	switch {
	case !ok && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
		f = fault.New(fault.CaptureFailed, "the capture was cancelled or ran out of time")
	case !ok || f.Code == fault.InternalError:
		f = fault.New(fault.CaptureFailed, "the capture failed")
	}
	msg := string(f.Code) + ": " + f.Message
	if attempts > 1 {
		msg += fmt.Sprintf(" (tried %d times)", attempts)
	}
	return msg
}

// checkCoverage merges what the checks report for each reviewed snapshot: a
// check ran if it ran on any, and is off (with the first reason given) only
// if it ran on none.
func checkCoverage(snaps []*checks.Snapshot, set *tokens.Set) (run []string, off []design.Skip) {
	run = []string{}
	reasons := map[string]string{}
	var order []string
	for _, s := range snaps {
		r, o := coverage(s, set)
		for _, k := range r {
			if !slices.Contains(run, k) {
				run = append(run, k)
			}
		}
		for _, x := range o {
			if _, ok := reasons[x.What]; !ok {
				reasons[x.What] = x.Reason
				order = append(order, x.What)
			}
		}
	}
	for _, k := range order {
		if !slices.Contains(run, k) {
			off = append(off, design.Skip{What: k, Reason: reasons[k]})
		}
	}
	slices.Sort(run)
	return run, off
}

// cutEvidence sets each finding's evidence: the crop of its box shot in
// the capture of its route at its first viewport (shootEvidence). A finding
// with no such crop (its box is off the page, or only the site-wide token
// set raised it) has no evidence.
func (e *Engine) cutEvidence(findings []design.Finding, jobs []*shot) []design.Evidence {
	var out []design.Evidence
	for i := range findings {
		f := &findings[i]
		if len(f.Viewports) == 0 {
			continue
		}
		var crop []byte
		for _, j := range jobs {
			if j.route == f.Route && j.vp == f.Viewports[0] && j.err == nil {
				crop = j.crops.of(f)
			}
		}
		if crop == nil {
			continue
		}
		f.EvidenceID = evidence.ID(f.ID, crop)
		out = append(out, design.Evidence{ID: f.EvidenceID, MIMEType: "image/png", Data: crop})
	}
	return out
}

// Recheck implements engine.Engine: it groups the findings by route and
// first viewport (the one the finding's box and evidence come from),
// captures each group once on req.URL's origin and re-measures each
// finding on its element. Without a token file each group is judged
// against the custom properties its own page's rules use. A group whose capture
// fails makes its findings inconclusive, never passed. Each outcome whose
// element is still there carries a crop of it as it is now.
func (e *Engine) Recheck(ctx context.Context, req engine.RecheckRequest) ([]design.RecheckOutcome, error) {
	if len(req.Findings) == 0 {
		return nil, fault.New(fault.InvalidArgument, "no findings to recheck")
	}
	var routes []string
	var vps []design.Viewport
	for _, f := range req.Findings {
		if len(f.Viewports) == 0 {
			return nil, fault.New(fault.InvalidArgument, "finding %q has no viewport", clipQuoted(f.ID))
		}
		routes = append(routes, f.Route)
		vps = append(vps, f.Viewports[0])
	}
	base, _, _, err := e.validate(req.URL, routes, vps)
	if err != nil {
		return nil, err
	}
	var fileTokens *tokens.Set
	if req.Tokens != nil {
		if fileTokens, err = tokens.Parse(req.Tokens); err != nil {
			return nil, fault.From(err, "the token file could not be read")
		}
	}
	groups := map[string]*shot{}
	var jobs []*shot
	for i := range req.Findings {
		k := routes[i] + "\x00" + string(vps[i])
		j, ok := groups[k]
		if !ok {
			j = &shot{route: routes[i], vp: vps[i], tokens: fileTokens}
			groups[k] = j
			jobs = append(jobs, j)
		}
		j.recheck = append(j.recheck, req.Findings[i])
	}
	if err := e.captureAll(ctx, base, jobs); err != nil {
		return nil, err
	}

	out := make([]design.RecheckOutcome, len(req.Findings))
	for i, f := range req.Findings {
		j := groups[routes[i]+"\x00"+string(vps[i])]
		if j.err != nil {
			out[i] = design.RecheckOutcome{FindingID: f.ID, Outcome: design.Inconclusive, Reason: skipReason(j.err, j.attempts)}
			continue
		}
		set := fileTokens
		if set == nil {
			set = j.snap.PageTokens()
		}
		o := remeasure(j.snap, set, f)
		o.FindingID = f.ID
		if now, ok := rechecked(j.snap, set, f); ok {
			if crop := j.crops.of(&now); crop != nil {
				o.EvidenceID = evidence.ID(f.ID, crop)
				o.Evidence = &design.Evidence{ID: o.EvidenceID, MIMEType: "image/png", Data: crop}
			}
		}
		out[i] = o
	}
	return out, nil
}

// validate checks the base URL, routes and viewports of a request and
// returns them canonical and deduplicated, in request order.
func (e *Engine) validate(raw string, routes []string, vps []design.Viewport) (*url.URL, []string, []design.Viewport, error) {
	if raw == "" {
		return nil, nil, nil, fault.New(fault.InvalidArgument, "url is required")
	}
	base, err := e.guard.Canonicalize(raw)
	if err != nil {
		return nil, nil, nil, fault.From(err, "the url is not allowed")
	}
	if len(routes) == 0 {
		routes = []string{"/"}
	}
	if len(routes) > MaxRoutes {
		return nil, nil, nil, fault.New(fault.InvalidArgument, "at most %d routes per review", MaxRoutes)
	}
	var outR []string
	for _, r := range routes {
		if err := checkRoute(r); err != nil {
			return nil, nil, nil, err
		}
		if !slices.Contains(outR, r) {
			outR = append(outR, r)
		}
	}
	if len(vps) == 0 {
		return nil, nil, nil, fault.New(fault.InvalidArgument, "at least one viewport is required")
	}
	var outV []design.Viewport
	for _, v := range vps {
		if _, _, ok := v.Size(); !ok {
			return nil, nil, nil, fault.New(fault.InvalidArgument, "unknown viewport %q (want mobile, tablet or desktop)", clipQuoted(string(v)))
		}
		if !slices.Contains(outV, v) {
			outV = append(outV, v)
		}
	}
	return base, outR, outV, nil
}

// checkRoute accepts an absolute path with an optional query: it starts
// with one "/", and has no scheme, authority, backslash, fragment or
// control character, so joining it can never change the origin.
func checkRoute(r string) error {
	bad := func(why string) error {
		return fault.New(fault.InvalidArgument, "route %q is not allowed: %s", clipQuoted(r), why)
	}
	switch {
	case r == "":
		return bad("empty")
	case len(r) > maxRoute:
		return bad("too long")
	case r[0] != '/':
		return bad(`it must start with "/"`)
	case strings.HasPrefix(r, "//"):
		return bad(`it must not start with "//"`)
	case strings.ContainsAny(r, "\\#"):
		return bad("no backslash or fragment")
	}
	for _, c := range r {
		if c < 0x20 || c == 0x7f || c == ' ' {
			return bad("no spaces or control characters")
		}
	}
	return nil
}

// routeURL joins route to base's origin and re-canonicalizes the result; the
// origin must come out unchanged.
func (e *Engine) routeURL(base *url.URL, route string) (string, error) {
	ref, err := url.Parse(route)
	if err != nil || ref.Scheme != "" || ref.Host != "" || ref.User != nil {
		return "", fault.New(fault.InvalidArgument, "route %q is not a path", clipQuoted(route))
	}
	joined := &url.URL{Scheme: base.Scheme, Host: base.Host, Path: ref.Path, RawPath: ref.RawPath, RawQuery: ref.RawQuery}
	u, err := e.guard.Canonicalize(joined.String())
	if err != nil {
		return "", fault.From(err, "the route's url is not allowed")
	}
	if u.Scheme != base.Scheme || u.Host != base.Host {
		return "", fault.New(fault.URLNotAllowed, "route %q leaves the reviewed origin", clipQuoted(route))
	}
	return u.String(), nil
}

// clipQuoted bounds caller-supplied text quoted in an error.
func clipQuoted(s string) string { return clip.String(s, 80) }
