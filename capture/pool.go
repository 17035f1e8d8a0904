package capture

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bastion-mcp/bastion/egress/browserproxy"
	"github.com/bastion-mcp/bastion/fault"
)

// Options configure a Pool. The zero value of every field except ProxyAddr
// means its default.
type Options struct {
	// Chrome is the browser executable; "" means FindChrome().
	Chrome string
	// ProxyAddr is the egress proxy, "127.0.0.1:PORT". Required: the browser
	// is never launched without a proxy, so it has no direct way out.
	ProxyAddr string
	// MaxConcurrent bounds the captures that run at once (open tabs); 0
	// means DefaultSlots(), sized to this machine's cores and memory.
	MaxConcurrent int
	// MaxQueued bounds the captures waiting for a tab; one more is refused
	// with UNAVAILABLE (retriable) rather than queued. 0 means 32 per slot.
	// A capture has no time budget of its own: it waits and runs until its
	// ctx ends (the engine derives that from the review's timeout), so a
	// busy machine makes a review slower, never silently smaller.
	MaxQueued int
	// Sessions opens each capture's proxy session, for a Target without a
	// Session of its own. With it the pool opens up to three tabs ahead of
	// need while it is idle, each through a session of its own (see tab).
	// nil means such a Target goes through ProxyAddr, unattributed.
	Sessions Sessions
	// MaxHeight caps the full-page screenshot, in CSS pixels; 0 means 8000.
	MaxHeight int
	// Logger receives browser lifecycle events; nil means slog.Default().
	Logger *slog.Logger
	// IgnoreCertErrorsSPKIList are base64 SHA-256 hashes of
	// SubjectPublicKeyInfo that the browser trusts whatever the certificate
	// chain (Chromium's --ignore-certificate-errors-spki-list). The offline
	// demo and tests use it for stub hosts; under --allow-private it holds
	// only the egress proxy's in-memory key, which the proxy presents for
	// private targets alone (browserproxy.Options.PrivateTLS). Otherwise it
	// is empty and the browser trusts only the system roots.
	IgnoreCertErrorsSPKIList []string
}

func (o Options) withDefaults() Options {
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultSlots()
	}
	if o.MaxQueued <= 0 {
		o.MaxQueued = 32 * o.MaxConcurrent
	}
	if o.MaxHeight <= 0 {
		o.MaxHeight = 8000
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// startTimeout bounds the launch of one browser process when the capture
// that needs it has no deadline of its own; with one, the deadline bounds
// the launch (a loaded machine can take longer than this to start Chromium).
const startTimeout = 3 * time.Minute

// ErrClosed is returned by Capture after Close.
var ErrClosed = errors.New("capture: pool closed")

// Pool shares one Chromium process among captures. It is safe for
// concurrent use.
type Pool struct {
	// Set once by NewPool.
	opts   Options
	ctx    context.Context // the pool's lifetime; cancelled by Close
	cancel context.CancelFunc
	sem    chan struct{} // one token per running capture
	queued atomic.Int32  // captures waiting for a token (not under mu: a launch holds mu)
	active atomic.Int32  // captures between their token and their answer

	mu      sync.Mutex // guards the fields below; held across a browser launch, never a capture
	cur     *browser   // nil before the first capture and after a crash
	spares  spares     // tabs opened ahead of need; has its own lock
	closed  bool
	started int // browsers launched, for tests and metrics
}

// browser is one Chromium process and the chromedp context that owns it.
type browser struct {
	ctx    context.Context // done when the process is gone
	cancel context.CancelFunc
	pid    int
}

// NewPool checks opts and returns a pool. The browser is launched lazily by
// the first Capture (or by Warm); ctx bounds the pool's whole life.
func NewPool(ctx context.Context, opts Options) (*Pool, error) {
	if opts.ProxyAddr == "" {
		return nil, errors.New("capture: Options.ProxyAddr is required (the browser has no other way out)")
	}
	if opts.Chrome == "" {
		p, err := FindChrome()
		if err != nil {
			return nil, err
		}
		opts.Chrome = p
	}
	opts = opts.withDefaults()
	pctx, cancel := context.WithCancel(ctx)
	return &Pool{opts: opts, ctx: pctx, cancel: cancel, sem: make(chan struct{}, opts.MaxConcurrent)}, nil
}

// Warm launches the browser now and, while no capture runs, opens the spare
// tabs, so the first captures pay for neither.
func (p *Pool) Warm(ctx context.Context) error {
	if _, err := p.browser(ctx); err != nil {
		return err
	}
	p.fill(ctx)
	return nil
}

// Close stops the browser and waits for it to exit. Captures in flight fail.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	b := p.cur
	p.cur = nil
	p.mu.Unlock()
	p.cancel()
	p.spares.drain()
	if b != nil {
		b.cancel()
	}
	return nil
}

// Launches reports how many browser processes the pool has started.
func (p *Pool) Launches() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started
}

// Stats is a snapshot of the pool, for metrics.
type Stats struct {
	Slots    int // captures that may run at once
	Busy     int // captures running now
	Queued   int // captures waiting for a slot
	Launches int // browser processes started; all but the first are restarts
	Spares   int // tabs opened ahead of need
}

// Stats reports the pool's size and use now.
func (p *Pool) Stats() Stats {
	p.spares.mu.Lock()
	spares := len(p.spares.tabs)
	p.spares.mu.Unlock()
	return Stats{Slots: cap(p.sem), Busy: len(p.sem), Queued: int(p.queued.Load()), Launches: p.Launches(), Spares: spares}
}

// BrowserPID returns the process id of the current browser, or 0 when none
// runs.
func (p *Pool) BrowserPID() int {
	if b := p.running(); b != nil {
		return b.pid
	}
	return 0
}

// browser returns the running browser, launching one when there is none or
// the last one died.
func (p *Pool) browser(ctx context.Context) (*browser, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	if p.cur != nil && p.cur.ctx.Err() == nil {
		return p.cur, nil
	}
	b, err := p.launchLocked(ctx)
	if err != nil {
		return nil, err
	}
	p.cur = b
	p.started++
	return b, nil
}

// running returns the current browser if its process is alive, else nil.
func (p *Pool) running() *browser {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == nil || p.cur.ctx.Err() != nil {
		return nil
	}
	return p.cur
}

// retire forgets b if it is still current, so the next call launches a new
// browser, and stops it.
func (p *Pool) retire(b *browser) {
	p.mu.Lock()
	if p.cur == b {
		p.cur = nil
	}
	p.mu.Unlock()
	b.cancel()
}

// launchLocked starts a Chromium process. Holding mu while launching makes
// concurrent captures that find no browser wait for this one instead of
// each launching their own.
func (p *Pool) launchLocked(ctx context.Context) (*browser, error) {
	opts := launchFlags(p.opts.Chrome, p.opts.ProxyAddr, p.opts.IgnoreCertErrorsSPKIList)
	actx, acancel := chromedp.NewExecAllocator(p.ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	// cancel runs once: chromedp's browser-context cancel waits on a token
	// that only the first call can take when the launch was cut short, so a
	// second call would block forever. The process is stopped first because
	// a browser still starting has no CDP connection to be asked to close.
	var once sync.Once
	cancel := func() { once.Do(func() { acancel(); bcancel() }) }

	// The first Run binds the browser's life to its context, so it must be
	// bctx itself; a timer bounds the launch instead of a deadline.
	limit := startTimeout
	if d, ok := ctx.Deadline(); ok {
		limit = time.Until(d)
	}
	timer := time.AfterFunc(limit, cancel)
	stop := context.AfterFunc(ctx, cancel)
	err := chromedp.Do(bctx)
	timer.Stop()
	stop()
	if err != nil {
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		p.opts.Logger.Warn("capture: browser launch failed", "err", err, "limit", limit)
		return nil, fmt.Errorf("capture: launch browser: %w", err)
	}
	b := &browser{ctx: bctx, cancel: cancel}
	if c := chromedp.FromContext(bctx); c != nil && c.Browser != nil {
		if proc := c.Browser.Process(); proc != nil {
			b.pid = proc.Pid
		}
	}
	p.opts.Logger.Debug("capture: browser launched", "pid", b.pid)
	return b, nil
}

// launchFlags is the browser's command line: chromedp's headless defaults,
// then browserproxy.ChromiumFlags (the one list of switches that leaves the
// browser no way out but the proxy), then only what capture itself needs.
func launchFlags(chrome, proxyAddr string, spki []string) []chromedp.ExecAllocatorOption {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome))
	for _, f := range browserproxy.ChromiumFlags(proxyAddr) {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if !hasValue {
			opts = append(opts, chromedp.Flag(name, true))
			continue
		}
		if def, ok := chromedpFeatures[name]; ok {
			// chromedp's defaults set these lists too; a flag given twice
			// keeps only its last value, so join them.
			value = def + "," + value
		}
		opts = append(opts, chromedp.Flag(name, value))
	}
	opts = append(opts,
		// Capture's own needs, none of them about the network:
		chromedp.NoSandbox,  // runs as root in containers; the network boundary is the proxy
		chromedp.DisableGPU, // software rendering: the same pixels on every machine
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("mute-audio", true),
		// Deterministic screenshots: no scrollbars, no hinting or subpixel
		// text, one device pixel per CSS pixel.
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("font-render-hinting", "none"),
		chromedp.Flag("disable-lcd-text", true),
		chromedp.Flag("force-device-scale-factor", "1"),
		// The user data directory is a fresh temporary one per process:
		// chromedp creates it when no user-data-dir flag is given and removes
		// it when the process exits.
	)
	if len(spki) > 0 {
		opts = append(opts, chromedp.Flag("ignore-certificate-errors-spki-list", strings.Join(spki, ",")))
	}
	return opts
}

// chromedpFeatures are the feature lists chromedp.DefaultExecAllocatorOptions
// sets, which a ChromiumFlags list of the same name must extend, not replace.
var chromedpFeatures = map[string]string{
	"enable-features":  "NetworkService,NetworkServiceInProcess",
	"disable-features": "Translate,BlinkGenPropertyTrees",
}

// acquire takes a concurrency token, waiting in the bounded queue for one.
// It fails when the queue is full, when ctx ends (a deadline is reported as
// a CAPTURE_FAILED naming the wait) or when the pool closes first.
func (p *Pool) acquire(ctx context.Context) error {
	select {
	case p.sem <- struct{}{}:
		return nil
	default:
	}
	defer p.queued.Add(-1)
	if int(p.queued.Add(1)) > p.opts.MaxQueued {
		return fault.New(fault.Unavailable, "the capture queue is full (%d waiting); retry shortly", p.opts.MaxQueued)
	}
	select {
	case p.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctxFailure(ctx, "while the capture waited for a free browser tab")
	case <-p.ctx.Done():
		return ErrClosed
	}
}

func (p *Pool) release() { <-p.sem }

// ctxFailure is the error of a capture whose ctx ended: a passed deadline
// is a CAPTURE_FAILED saying when, a cancellation is ctx's own error.
func ctxFailure(ctx context.Context, when string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fault.Wrap(ctx.Err(), fault.CaptureFailed, "the deadline passed %s", when)
	}
	return ctx.Err()
}
