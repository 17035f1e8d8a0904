package capture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/egress/browserproxy"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/internal/clip"
)

// Session is one capture's attributed way out through the egress proxy: the
// proxy records what it refused for this capture alone.
// *browserproxy.Session satisfies it.
type Session interface {
	// Addr is the proxy listener for this capture's browser context,
	// "127.0.0.1:PORT": a dedicated one, or the pool's shared proxy.
	Addr() string
	// Username and Password identify the session on the shared listener;
	// they are sent only when Addr is the shared listener.
	Username() string
	Password() string
	// Blocked lists the requests the proxy refused so far.
	Blocked() []browserproxy.Blocked
}

// Target is what one capture loads.
type Target struct {
	URL      string          // absolute; already authorized by the caller
	Viewport design.Viewport // one of the closed set
	Session  Session         // nil means a session from Options.Sessions (without it, the pool's proxy, unattributed)
	// NoScreenshot skips the full-page screenshot: the Measure shoots the
	// regions it needs itself (Region), or needs none (a recheck).
	NoScreenshot bool
}

// Capture is the outcome of one route × viewport capture.
type Capture struct {
	URL        string          // the document's final URL after redirects
	Viewport   design.Viewport //
	Screenshot []byte          // full-page PNG, 1 px per CSS px, at most MaxHeight tall; nil with Target.NoScreenshot
	Width      int             // screenshot width in px
	Height     int             // screenshot height in px
	PageHeight int             // document height in CSS px (may exceed Height)
	Stable     bool            // the layout settled before its cap
	Health     design.PageHealth
	Steps      []Step // how long each stage took, in order (for benchmarks)
}

// Step is one timed stage of a capture.
type Step struct {
	Name string
	Took time.Duration
}

// step records the time since *mark as stage name and moves the mark.
func (c *Capture) step(name string, mark *time.Time) {
	now := time.Now()
	c.Steps = append(c.Steps, Step{Name: name, Took: now.Sub(*mark)})
	*mark = now
}

// Limits on page-derived health text, so a hostile page cannot bloat a result.
const (
	maxHealthItems = 50
	maxHealthText  = 300
	maxScrollPx    = 20000
	maxScrollSteps = 25
	// Caps on each settle stage: each stage ends on its event (fonts ready,
	// images complete, no request in flight, two unchanged frames) and the
	// cap only bounds a page that never gets there.
	fontsCapMs  = 3000
	imagesCapMs = 2000
	idleCap     = 3 * time.Second
	stableCapMs = 3000
	// settleRounds bounds how often settle goes back to waiting for the
	// network when a request started while the layout was settling.
	settleRounds = 3
)

// Measure runs in the live tab after the page settled and before the
// screenshot; ctx is the tab's chromedp context (chromedp.Run works on it).
// It may run twice when the browser crashes mid-capture; only the last run
// belongs to the returned Capture.
type Measure func(ctx context.Context) error

// Capture loads t in a fresh browser context and captures it. measure may be
// nil. On a failure after the tab opened it returns the partial Capture
// (Health filled) together with a CAPTURE_FAILED error whose message is safe
// to show. A browser crash is survived once: the browser is replaced and the
// capture retried.
func (p *Pool) Capture(ctx context.Context, t Target, measure Measure) (*Capture, error) {
	if _, _, ok := t.Viewport.Size(); !ok {
		return nil, fault.New(fault.InvalidArgument, "unknown viewport %q", t.Viewport)
	}
	if err := p.acquire(ctx); err != nil {
		return nil, err
	}
	p.active.Add(1)
	defer p.active.Add(-1)
	var (
		c       *Capture
		err     error
		closing sync.WaitGroup // the tabs this capture opened, closing
	)
	defer func() {
		go func() {
			closing.Wait()
			p.release()
			p.refill()
		}()
	}()
	for attempt := 0; attempt < 2; attempt++ {
		var b *browser
		b, err = p.browser(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctxFailure(ctx, "while the browser started")
			}
			if errors.Is(err, ErrClosed) {
				return nil, err
			}
			return nil, fault.Wrap(err, fault.CaptureFailed, "the browser could not start")
		}
		c, err = p.captureOnce(ctx, b, t, measure, &closing)
		if err == nil || ctx.Err() != nil || !browserLost(b, err) {
			// Success, the caller gave up, or the page failed in a live browser:
			// none of these is the browser's fault.
			break
		}
		p.opts.Logger.Warn("capture: browser lost; replacing it", "pid", b.pid, "attempt", attempt+1)
		p.retire(b)
	}
	return c, err
}

// lostGrace is how long a failed capture waits to learn whether its browser
// is dying: a dead tab can fail a command before chromedp notices that the
// process is gone.
const lostGrace = 300 * time.Millisecond

// browserLost reports whether err came from b's process going away. A page
// that failed to load is the page's fault and is answered at once.
func browserLost(b *browser, err error) bool {
	if b.ctx.Err() != nil {
		return true
	}
	var le *chromedp.LoadError
	if errors.As(err, &le) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if f, ok := fault.As(err); ok && f.Unwrap() == nil {
		return false // our own verdict, such as a refused document
	}
	select {
	case <-b.ctx.Done():
		return true
	case <-time.After(lostGrace):
		return false
	}
}

// captureOnce runs one capture on b.
func (p *Pool) captureOnce(ctx context.Context, b *browser, t Target, measure Measure, closing *sync.WaitGroup) (*Capture, error) {
	start := time.Now()
	w, h, _ := t.Viewport.Size()

	// The caller's ctx (its deadline is the capture's only time limit) ends
	// the tab; the tab's parent is the browser's context so that chromedp
	// finds the browser in it.
	bctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()

	tb, err := p.newTab(ctx, b, t)
	if err != nil {
		c := &Capture{URL: t.URL, Viewport: t.Viewport}
		c.Health.Viewport = t.Viewport
		return c, p.failure(ctx, c, newRecorder(), t, start, err, "could not open a browser tab")
	}
	t.Session = tb.sess
	tabCtx, closeTab := chromedp.NewContext(bctx, chromedp.WithTargetID(tb.target))
	// Closing a tab takes Chromium a round trip or three and up to half a
	// second: it happens after the capture returned, and the capture's
	// slot is released only once it is done, so open tabs stay bounded.
	defer closing.Go(func() {
		closeTab()
		tb.dispose()
	})

	c := &Capture{URL: t.URL, Viewport: t.Viewport}
	c.Health.Viewport = t.Viewport
	mark := start
	rec := newRecorder()
	if err := chromedp.Listen(tabCtx, rec.handle); err != nil {
		return nil, p.failure(ctx, c, rec, t, start, err, "could not open a browser tab")
	}
	c.step("open", &mark)
	if t.Session != nil && sessionProxy(t.Session, p.opts.ProxyAddr) == p.opts.ProxyAddr {
		// The shared listener knows the session only by its credentials.
		if user, pass := t.Session.Username(), t.Session.Password(); user != "" {
			if err := answerProxyAuth(tabCtx, user, pass); err != nil {
				return c, p.failure(ctx, c, rec, t, start, err, "could not configure the proxy session")
			}
		}
	}
	if err := prepare(tabCtx, t.Viewport, w, h); err != nil {
		return c, p.failure(ctx, c, rec, t, start, err, "could not prepare the browser tab")
	}

	c.step("prepare", &mark)
	resp, err := chromedp.Run(tabCtx, chromedp.NavigateResponse(t.URL))
	if resp != nil {
		c.Health.StatusCode = int(resp.Status)
		if resp.URL != "" {
			c.URL = resp.URL
		}
	}
	if err != nil {
		var le *chromedp.LoadError
		if errors.As(err, &le) {
			return c, p.failure(ctx, c, rec, t, start, err, "the page did not load (%s)", safeNetError(le.ErrorText))
		}
		return c, p.failure(ctx, c, rec, t, start, err, "the page did not load")
	}

	c.step("load", &mark)
	if code, ok := documentBlocked(t.Session, c.URL); ok {
		// Over plain http Chromium shows the proxy's refusal as the document.
		return c, final(p.failure(ctx, c, rec, t, start, nil, "the egress guard refused the page (%s)", code))
	}
	if err := settle(tabCtx, c, rec, &mark); err != nil {
		return c, p.failure(ctx, c, rec, t, start, err, "the page did not settle")
	}
	if measure != nil {
		if err := measure(tabCtx); err != nil {
			return c, p.failure(ctx, c, rec, t, start, err, "the page could not be measured")
		}
	}
	c.step("measure", &mark)
	if !t.NoScreenshot {
		if err := p.screenshot(tabCtx, c, w); err != nil {
			return c, p.failure(ctx, c, rec, t, start, err, "the screenshot failed")
		}
		c.step("screenshot", &mark)
	}
	if fonts, err := chromedp.Run(tabCtx, chromedp.Evaluate[[]string](fontsFailedScript)); err == nil {
		c.Health.FontsNotLoaded = capStrings(fonts)
	}
	p.finishHealth(c, rec, t, start)
	return c, nil
}

// failure fills the health known so far and returns a client-safe error.
// A deadline that passed says at which stage; a caller that gave up gets
// its ctx's error.
func (p *Pool) failure(ctx context.Context, c *Capture, rec *recorder, t Target, start time.Time, cause error, format string, args ...any) error {
	p.finishHealth(c, rec, t, start)
	if ctx.Err() != nil {
		return ctxFailure(ctx, fmt.Sprintf("before the capture finished (%s after %s)",
			fmt.Sprintf(format, args...), time.Since(start).Round(100*time.Millisecond)))
	}
	return fault.Wrap(cause, fault.CaptureFailed, format, args...)
}

// final marks a capture failure that trying again cannot change (the
// egress guard's verdict on the document) as not retriable.
func final(err error) error {
	if f, ok := fault.As(err); ok && f.Code == fault.CaptureFailed {
		c := *f
		c.Retriable, c.NextAction = false, fault.ChangeTarget
		return &c
	}
	return err
}

func (p *Pool) finishHealth(c *Capture, rec *recorder, t Target, start time.Time) {
	var blocked []design.Failure
	if t.Session != nil {
		for _, b := range t.Session.Blocked() {
			blocked = append(blocked, design.Failure{URL: b.URL, Code: string(b.Code)})
		}
	}
	rec.fill(&c.Health, blocked)
	c.Health.CaptureDuration = time.Since(start)
}

// prepare sets the viewport's device metrics, touch, reduced motion and the
// freezing style sheet before the first navigation.
func prepare(ctx context.Context, vp design.Viewport, w, h int) error {
	mobile := vp != design.Desktop
	steps := []func() error{
		func() error {
			_, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
				Width: int64(w), Height: int64(h), DeviceScaleFactor: 1, Mobile: mobile,
				ScreenWidth: int64(w), ScreenHeight: int64(h),
			})
			return err
		},
		func() error {
			_, err := chromedp.Call(ctx, emulation.SetTouchEmulationEnabled, emulation.SetTouchEmulationEnabledParams{
				Enabled: mobile, MaxTouchPoints: touchPoints(mobile),
			})
			return err
		},
		func() error {
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-reduced-motion", Value: "reduce"}},
			})
			return err
		},
		func() error {
			_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: FreezeScript})
			return err
		},
		func() error {
			_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: observeScript})
			return err
		},
		func() error {
			ua, err := chromedp.Run(ctx, chromedp.Evaluate[string]("navigator.userAgent"))
			if err != nil {
				return err
			}
			_, err = chromedp.Call(ctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{
				UserAgent: userAgent(ua, vp), AcceptLanguage: "en-US,en",
			})
			return err
		},
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

// userAgent adapts the browser's own user agent to vp, so a site that
// picks its markup by user agent serves the phone or tablet page: the
// device part becomes Chrome's reduced Android form ("Linux; Android 10;
// K"), phones get "Mobile", and "HeadlessChrome" reads "Chrome" (some hosts
// refuse headless browsers outright).
func userAgent(ua string, vp design.Viewport) string {
	ua = strings.Replace(ua, "HeadlessChrome/", "Chrome/", 1)
	if vp == design.Desktop {
		return ua
	}
	if i, j := strings.IndexByte(ua, '('), strings.IndexByte(ua, ')'); i >= 0 && j > i {
		ua = ua[:i] + "(Linux; Android 10; K)" + ua[j+1:]
	}
	if vp == design.Mobile && !strings.Contains(ua, " Mobile ") {
		ua = strings.Replace(ua, " Safari/", " Mobile Safari/", 1)
	}
	return ua
}

func touchPoints(on bool) int64 {
	if on {
		return 5
	}
	return 1
}

// settle waits for fonts, triggers lazy loading, waits for images, for
// the network to go idle and for a stable layout, leaving the page
// scrolled to the top. Every wait ends on its event; the caps bound a page
// that never settles (c.Stable then stays false).
func settle(ctx context.Context, c *Capture, rec *recorder, mark *time.Time) error {
	eval := func(name, js string) (any, error) {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[any](js, chromedp.EvalAwaitPromise))
		c.step(name, mark)
		return v, err
	}
	if _, err := eval("fonts", fmt.Sprintf("(%s)(%d)", fontsReadyScript, fontsCapMs)); err != nil {
		return err
	}
	scrolled, err := eval("scroll", fmt.Sprintf("(%s)(%d, %d)", scrollScript, maxScrollPx, maxScrollSteps))
	if err != nil {
		return err
	}
	if _, err := eval("images", fmt.Sprintf("(%s)(%d)", imagesSettledScript, imagesCapMs)); err != nil {
		return err
	}
	for range settleRounds {
		idle := rec.waitIdle(ctx, idleCap)
		c.step("idle", mark)
		v, err := eval("stable", fmt.Sprintf("(%s)(%d)", stableScript, stableCapMs))
		if err != nil {
			return err
		}
		c.Stable = v == true && idle
		if rec.idle() {
			break
		}
	}
	if n, _ := scrolled.(float64); n > 0 {
		// Fonts requested by content the scroll revealed.
		if _, err := eval("fonts2", fmt.Sprintf("(%s)(%d)", fontsReadyScript, fontsCapMs)); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// screenshot takes a full-page PNG clipped to MaxHeight. It is as wide as
// the viewport, or wider (up to three viewports) when the page overflows
// sideways, so evidence for an overflow shows the part past the edge.
func (p *Pool) screenshot(ctx context.Context, c *Capture, vw int) error {
	m, err := chromedp.Call(ctx, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil {
		return err
	}
	cw, ch := float64(vw), float64(0)
	if m.CSSContentSize != nil {
		cw, ch = m.CSSContentSize.Width, m.CSSContentSize.Height
	}
	width := min(max(int(cw+0.5), vw), 3*vw)
	height := int(ch + 0.5)
	c.PageHeight = height
	if height > p.opts.MaxHeight {
		height = p.opts.MaxHeight
	}
	if height < 1 {
		height = 1
	}
	r, err := chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{
		Format:                page.CaptureScreenshotFormatPng,
		Clip:                  &page.Viewport{X: 0, Y: 0, Width: float64(width), Height: float64(height), Scale: 1},
		CaptureBeyondViewport: new(true),
		FromSurface:           new(true),
		// Faster, larger PNGs: the screenshot is only cropped, never served.
		OptimizeForSpeed: new(true),
	})
	if err != nil {
		return err
	}
	c.Screenshot, c.Width, c.Height = r.Data, width, height
	return nil
}

// answerProxyAuth answers the proxy's 407 challenges with the session's
// credentials. Fetch interception pauses every request, so each is
// continued unchanged; a server's own 401 challenge is cancelled (bastion
// never types credentials into a page).
func answerProxyAuth(ctx context.Context, user, pass string) error {
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	auth := chromedp.Events(ctx, fetch.AuthRequired)
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			_, _ = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		}
	}()
	go func() {
		for ev, err := range auth {
			if err != nil {
				return
			}
			resp := &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseCancelAuth}
			if ev.AuthChallenge != nil && ev.AuthChallenge.Source == fetch.AuthChallengeSourceProxy {
				resp = &fetch.AuthChallengeResponse{
					Response: fetch.AuthChallengeResponseResponseProvideCredentials, Username: user, Password: pass,
				}
			}
			_, _ = chromedp.Call(ctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: ev.RequestID, AuthChallengeResponse: resp})
		}
	}()
	_, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{HandleAuthRequests: new(true)})
	return err
}

// documentBlocked reports whether the proxy refused the document at u, and
// the guard's code.
func documentBlocked(s Session, u string) (string, bool) {
	if s == nil {
		return "", false
	}
	u = stripQuery(u)
	for _, b := range s.Blocked() {
		if b.URL == u {
			return string(b.Code), true
		}
	}
	return "", false
}

// safeNetError keeps a Chromium net error name ("net::ERR_...") and drops
// anything else, so no page- or proxy-supplied text reaches the message.
func safeNetError(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "net::ERR_") && !strings.ContainsAny(s, " \n\t") && len(s) < 80 {
		return s
	}
	return "network error"
}

// recorder collects page health from the tab's events. handle runs on the
// tab's reader goroutine, so it only appends under mu.
type recorder struct {
	mu      sync.Mutex
	urls    map[network.RequestID]string
	console []string
	failed  []design.Failure
	// inflight holds the requests started and not yet finished or failed;
	// quiet is closed whenever inflight is empty (a fresh one is made when
	// a request starts).
	inflight map[network.RequestID]bool
	quiet    chan struct{}
}

func newRecorder() *recorder {
	q := make(chan struct{})
	close(q)
	return &recorder{urls: map[network.RequestID]string{}, inflight: map[network.RequestID]bool{}, quiet: q}
}

// idle reports whether no request is in flight.
func (r *recorder) idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.inflight) == 0
}

// waitIdle waits until no request is in flight, for at most limit, and
// reports whether that happened (a page that polls or streams never goes
// idle; limit bounds it).
func (r *recorder) waitIdle(ctx context.Context, limit time.Duration) bool {
	r.mu.Lock()
	q := r.quiet
	r.mu.Unlock()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-q:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// startLocked and endLocked track a request in flight.
func (r *recorder) startLocked(id network.RequestID) {
	if len(r.inflight) == 0 {
		r.quiet = make(chan struct{})
	}
	if len(r.inflight) < 5000 {
		r.inflight[id] = true
	}
}

func (r *recorder) endLocked(id network.RequestID) {
	if !r.inflight[id] {
		return
	}
	delete(r.inflight, id)
	if len(r.inflight) == 0 {
		close(r.quiet)
	}
}

func (r *recorder) handle(ev any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		r.startLocked(ev.RequestID)
		if ev.Request != nil && len(r.urls) < 5000 {
			r.urls[ev.RequestID] = ev.Request.URL
		}
	case *network.EventLoadingFinished:
		r.endLocked(ev.RequestID)
	case *network.EventLoadingFailed:
		r.endLocked(ev.RequestID)
		if ev.Canceled {
			return // an abort the page chose (navigation, removed image)
		}
		u, seen := r.urls[ev.RequestID]
		if !seen || u == "" || strings.HasPrefix(u, "data:") || strings.HasPrefix(u, "blob:") {
			// A failure for a request the page was never seen to make is
			// the browser's own traffic (a cache-only probe failing with
			// net::ERR_CACHE_MISS, DevTools' own fetches): nothing an
			// author can act on, and it has no URL to report.
			return
		}
		code := safeNetError(ev.ErrorText)
		if ev.BlockedReason != "" {
			code = "blocked:" + clipText(string(ev.BlockedReason))
		}
		r.failed = append(r.failed, design.Failure{URL: clipText(u), Code: code})
	case *network.EventResponseReceived:
		if ev.Response != nil && ev.Response.URL != "" && len(r.urls) < 5000 {
			if _, ok := r.urls[ev.RequestID]; !ok {
				r.urls[ev.RequestID] = ev.Response.URL
			}
		}
		if ev.Response != nil && ev.Response.Status >= 400 && ev.Type != network.ResourceTypeDocument {
			r.failed = append(r.failed, design.Failure{URL: clipText(ev.Response.URL), Code: fmt.Sprintf("HTTP_%d", ev.Response.Status)})
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			r.console = append(r.console, clipText(consoleText(ev.Args)))
		}
	case *runtime.EventExceptionThrown:
		if d := ev.ExceptionDetails; d != nil {
			text := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				text = d.Exception.Description
				if i := strings.IndexByte(text, '\n'); i > 0 {
					text = text[:i] // the message, not the stack
				}
			}
			r.console = append(r.console, clipText(text))
		}
	case *cdplog.EventEntryAdded:
		// Network-source entries duplicate failed requests; keep the rest.
		if e := ev.Entry; e != nil && e.Level == cdplog.EntryLevelError && e.Source != cdplog.EntrySourceNetwork {
			r.console = append(r.console, clipText(e.Text))
		}
	}
}

// fill copies what was recorded into h. A request the proxy refused is
// listed as blocked only, not also as failed: over plain http the proxy
// knows the URL, over a CONNECT tunnel only the origin, so a tunnel failure
// to a blocked origin is the same refusal. The browser's own favicon probe
// is not the page's request and is left out.
func (r *recorder) fill(h *design.PageHealth, blocked []design.Failure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h.ConsoleErrors = capStrings(r.console)
	h.EgressBlocked = nil
	seenURL, seenOrigin := map[string]bool{}, map[string]bool{}
	for _, b := range blocked {
		if len(h.EgressBlocked) < maxHealthItems {
			h.EgressBlocked = append(h.EgressBlocked, design.Failure{URL: clipText(b.URL), Code: b.Code})
		}
		seenURL[b.URL] = true
		seenOrigin[origin(b.URL)] = true
	}
	h.Failed = nil
	dup := map[design.Failure]bool{}
	for _, f := range r.failed {
		switch {
		case seenURL[stripQuery(f.URL)], f.Code == "net::ERR_TUNNEL_CONNECTION_FAILED" && seenOrigin[origin(f.URL)]:
			continue
		case isFavicon(f.URL), dup[f], len(h.Failed) >= maxHealthItems:
			continue
		}
		dup[f] = true
		h.Failed = append(h.Failed, f)
	}
}

// origin returns scheme://host[:port] of u, or "" when u does not parse.
func origin(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return ""
	}
	return p.Scheme + "://" + p.Host
}

func stripQuery(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		return u[:i]
	}
	return u
}

func isFavicon(u string) bool {
	p, err := url.Parse(u)
	return err == nil && p.Path == "/favicon.ico"
}

func consoleText(args []*runtime.RemoteObject) string {
	parts := make([]string, 0, len(args))
	for _, a := range args {
		if a == nil {
			continue
		}
		switch {
		case a.Type == runtime.RemoteObjectTypeString && len(a.Value) > 0:
			var s string
			if json.Unmarshal(a.Value, &s) == nil {
				parts = append(parts, s)
				continue
			}
			parts = append(parts, string(a.Value))
		case a.Description != "":
			parts = append(parts, a.Description)
		case len(a.Value) > 0:
			parts = append(parts, string(a.Value))
		default:
			parts = append(parts, string(a.Type))
		}
	}
	return strings.Join(parts, " ")
}

// clipText bounds one page-derived string.
func clipText(s string) string { return clip.String(s, maxHealthText) }

func capStrings(in []string) []string {
	out := slices.Clone(in)
	if len(out) > maxHealthItems {
		out = out[:maxHealthItems]
	}
	for i := range out {
		out[i] = clipText(out[i])
	}
	return out
}
