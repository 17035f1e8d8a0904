package capture

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/bastion-mcp/bastion/egress/browserproxy"
)

// Sessions opens the proxy session of one capture, so the proxy attributes
// what it refuses to that capture alone; *browserproxy.Proxy is the
// production one.
type Sessions interface {
	NewSession() *browserproxy.Session
}

// maxSpares bounds the tabs a pool opens ahead of need: one route's three
// viewports.
const maxSpares = 3

// closeTimeout bounds closing one tab and its browser context. Closing
// runs after the capture returned, so a slow close costs the next capture
// its slot, never this one its answer.
const closeTimeout = 10 * time.Second

// tab is a fresh browser context, opened through one proxy session, with
// one blank page in it. Chromium starts the page's renderer process in the
// background after creating the target; a capture that attaches at once
// waits for that start (0.3–1 s on a loaded 2-core machine), so the pool
// opens tabs ahead of need while it is idle (spares) and a capture takes
// one whose renderer is already up.
type tab struct {
	b       *browser
	sess    Session               // the way out of this tab's context
	owned   *browserproxy.Session // sess when the pool opened it; closed with the tab
	context cdp.BrowserContextID
	target  target.ID
}

// openTab creates a browser context on b whose only proxy is sess's
// listener and a blank target in it.
func openTab(ctx context.Context, b *browser, sess Session, proxy string) (*tab, error) {
	c := chromedp.FromContext(b.ctx)
	if c == nil || c.Browser == nil {
		return nil, fmt.Errorf("capture: the browser has no connection")
	}
	bc, err := cdp.Call(ctx, c.Browser, target.CreateBrowserContext, target.CreateBrowserContextParams{
		ProxyServer:     "http://" + proxy,
		ProxyBypassList: "<-loopback>", // loopback too goes through the proxy
	})
	if err != nil {
		return nil, fmt.Errorf("capture: create browser context: %w", err)
	}
	t := &tab{b: b, sess: sess, context: bc.BrowserContextID}
	// A tab of its own window: a hidden tab gets no animation frames.
	tr, err := cdp.Call(ctx, c.Browser, target.CreateTarget, target.CreateTargetParams{
		URL: "about:blank", BrowserContextID: bc.BrowserContextID, NewWindow: new(true),
	})
	if err != nil {
		t.dispose()
		return nil, fmt.Errorf("capture: create tab: %w", err)
	}
	t.target = tr.TargetID
	return t, nil
}

// dispose closes the tab's browser context (and with it the tab, if still
// open) and its session.
func (t *tab) dispose() {
	if c := chromedp.FromContext(t.b.ctx); c != nil && c.Browser != nil && t.b.ctx.Err() == nil {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		_, _ = cdp.Call(ctx, c.Browser, target.DisposeBrowserContext, target.DisposeBrowserContextParams{BrowserContextID: t.context})
		cancel()
	}
	if t.owned != nil {
		t.owned.Close()
	}
}

// spares holds tabs opened ahead of need. Tabs are opened only while no
// capture runs (tabs still closing do not count), so opening them never
// competes with a capture for the CPU and a review's peak memory does not
// grow by them.
type spares struct {
	mu      sync.Mutex
	tabs    []*tab
	filling bool
}

// take returns a spare tab of b, or nil; spares of a browser that is gone
// are discarded.
func (s *spares) take(b *browser) *tab {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.tabs) > 0 {
		t := s.tabs[0]
		s.tabs = s.tabs[1:]
		if t.b == b && b.ctx.Err() == nil {
			return t
		}
		go t.dispose()
	}
	return nil
}

// drain disposes every spare (the pool is closing).
func (s *spares) drain() {
	s.mu.Lock()
	tabs := s.tabs
	s.tabs = nil
	s.mu.Unlock()
	for _, t := range tabs {
		t.dispose()
	}
}

// newTab returns a tab for one capture on b: a spare when one is ready,
// else a fresh one. A target with its own session (tests, the shared
// listener) always gets a fresh one.
func (p *Pool) newTab(ctx context.Context, b *browser, t Target) (*tab, error) {
	if t.Session == nil && p.opts.Sessions != nil {
		if tb := p.spares.take(b); tb != nil {
			return tb, nil
		}
	}
	sess, owned := t.Session, (*browserproxy.Session)(nil)
	if sess == nil && p.opts.Sessions != nil {
		owned = p.opts.Sessions.NewSession()
		sess = owned
	}
	tb, err := openTab(ctx, b, sess, sessionProxy(sess, p.opts.ProxyAddr))
	if err != nil {
		if owned != nil {
			owned.Close()
		}
		return nil, err
	}
	tb.owned = owned
	return tb, nil
}

// refill opens spares in the background (see fill); one fill runs at a
// time.
func (p *Pool) refill() {
	if p.opts.Sessions == nil {
		return
	}
	p.spares.mu.Lock()
	if p.spares.filling {
		p.spares.mu.Unlock()
		return
	}
	p.spares.filling = true
	p.spares.mu.Unlock()
	go func() {
		defer func() {
			p.spares.mu.Lock()
			p.spares.filling = false
			p.spares.mu.Unlock()
		}()
		p.fill(p.ctx)
	}()
}

// fill opens spares on the running browser up to the pool's number while
// no capture runs; it stops as soon as one starts or the browser is gone.
func (p *Pool) fill(ctx context.Context) {
	want := min(p.opts.MaxConcurrent, maxSpares)
	for p.opts.Sessions != nil && ctx.Err() == nil && p.ctx.Err() == nil && p.active.Load() == 0 {
		p.spares.mu.Lock()
		n := len(p.spares.tabs)
		p.spares.mu.Unlock()
		if n >= want {
			return
		}
		b := p.running()
		if b == nil {
			return // a browser that died is relaunched by the next capture, not by a refill
		}
		sess := p.opts.Sessions.NewSession()
		tb, err := openTab(ctx, b, sess, sessionProxy(sess, p.opts.ProxyAddr))
		if err != nil {
			sess.Close()
			p.opts.Logger.Debug("capture: opening a spare tab failed", "err", err)
			return
		}
		tb.owned = sess
		p.spares.mu.Lock()
		closed := p.ctx.Err() != nil
		if !closed {
			p.spares.tabs = append(p.spares.tabs, tb)
		}
		p.spares.mu.Unlock()
		if closed {
			tb.dispose()
		}
	}
}

// sessionProxy is the listener a context opened through s uses.
func sessionProxy(s Session, shared string) string {
	if s != nil && s.Addr() != "" {
		return s.Addr()
	}
	return shared
}
