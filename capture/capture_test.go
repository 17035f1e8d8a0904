package capture_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bastion-mcp/bastion/capture"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/egress/browserproxy"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/internal/testenv"
)

// blockedHost resolves to the cloud metadata address, which the guard
// refuses even for a local operator who allows private targets.
const blockedHost = "blocked.test"

var quiet = slog.New(slog.DiscardHandler)

type bundle struct {
	pool  *capture.Pool
	proxy *browserproxy.Proxy
	site  *site
}

// setup starts a site on loopback, a guarded proxy in local-operator mode
// (loopback allowed, metadata denied) and a pool whose browser goes out only
// through that proxy.
func setup(t *testing.T, opts capture.Options) *bundle {
	t.Helper()
	chrome := testenv.Chromium(t)
	guard := egress.NewGuard(egress.Policy{AllowHTTP: true, AllowPrivate: true},
		egress.StaticResolver{blockedHost: {netip.MustParseAddr("169.254.169.254")}})
	// RequireAuth: the shared listener serves only sessions, so Chromium's
	// own background traffic gets 407 instead of a way out.
	proxy, err := browserproxy.New(guard, browserproxy.Options{AllowHTTP: true, RequireAuth: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	opts.Chrome, opts.ProxyAddr, opts.Logger, opts.Sessions = chrome, proxy.Addr(), quiet, proxy
	pool, err := capture.NewPool(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	return &bundle{pool: pool, proxy: proxy, site: newSite(t)}
}

// capture captures url at vp through a fresh proxy session.
func (b *bundle) capture(url string, vp design.Viewport, m capture.Measure) (*capture.Capture, error) {
	sess := b.proxy.NewSession()
	defer sess.Close()
	return b.pool.Capture(context.Background(), capture.Target{URL: url, Viewport: vp, Session: sess}, m)
}

// site serves the test pages and counts the requests it sees.
type site struct {
	url      string
	lazyHits atomic.Int32
	fontHits atomic.Int32
}

func newSite(t *testing.T) *site {
	t.Helper()
	font := findFont(t)
	s := &site{}
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, testPage)
	})
	mux.HandleFunc("/font.ttf", func(w http.ResponseWriter, r *http.Request) {
		s.fontHits.Add(1)
		time.Sleep(700 * time.Millisecond) // slower than load: only fonts.ready waits for it
		w.Header().Set("Content-Type", "font/ttf")
		w.Write(font)
	})
	mux.HandleFunc("/lazy.png", func(w http.ResponseWriter, r *http.Request) {
		s.lazyHits.Add(1)
		w.Header().Set("Content-Type", "image/png")
		w.Write(onePixelPNG(t))
	})
	mux.HandleFunc("/tall", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><body style="margin:0"><div style="height:20000px;background:linear-gradient(#fff,#000)"></div>`)
	})
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s.url = "http://" + ln.Addr().String()
	return s
}

// testPage has a slow web font, a lazy image far below the fold, a console
// error, a missing image, an image on a closed port and an image on a host
// the guard refuses.
const testPage = `<!doctype html>
<html><head><meta name="viewport" content="width=device-width, initial-scale=1">
<style>
@font-face { font-family: Probe; src: url(/font.ttf) format("truetype"); }
body { margin: 0; font-family: Probe, sans-serif; }
.spacer { height: 6000px; }
</style></head>
<body>
<h1 id="title">Hello</h1>
<img src="/missing.png" alt="missing">
<img src="http://` + blockedHost + `/tracker.png" alt="blocked">
<img src="http://127.0.0.1:1/refused.png" alt="refused">
<div class="spacer"></div>
<img id="lazy" loading="lazy" src="/lazy.png" width="10" height="10" alt="lazy">
<script>console.error("boom from the page");</script>
</body></html>`

func findFont(t *testing.T) []byte {
	t.Helper()
	for _, pat := range []string{"/usr/share/fonts/truetype/*/*.ttf", "/usr/share/fonts/truetype/*.ttf", "/usr/share/fonts/*/*/*.ttf"} {
		m, _ := filepath.Glob(pat)
		slices.Sort(m)
		for _, p := range m {
			if b, err := os.ReadFile(p); err == nil && len(b) > 1000 {
				return b
			}
		}
	}
	if testenv.Required() {
		t.Fatal("no TrueType font under /usr/share/fonts (install fonts-noto-core)")
	}
	t.Skip("SKIP (loud): no TrueType font under /usr/share/fonts")
	return nil
}

func onePixelPNG(t *testing.T) []byte {
	// The smallest valid PNG: 1×1 opaque black.
	return []byte{
		0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
		0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53,
		0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x08, 0xd7, 0x63, 0x60, 0x60, 0x60, 0x00,
		0x00, 0x00, 0x04, 0x00, 0x01, 0x27, 0x34, 0x27, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e,
		0x44, 0xae, 0x42, 0x60, 0x82,
	}
}

// inPage is what the measure hook saw in the live tab.
type inPage struct {
	Width, Height int
	FontStatus    string
	LazyComplete  bool
	ScrollY       float64
	Touch         bool
	ReducedMotion bool
	UserAgent     string
}

func measureInto(dst *inPage) capture.Measure {
	return func(ctx context.Context) error {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[inPage](`({
			Width: window.innerWidth, Height: window.innerHeight,
			FontStatus: ([...document.fonts].find(f => f.family === "Probe") || {status: "absent"}).status,
			LazyComplete: document.getElementById("lazy").complete && document.getElementById("lazy").naturalWidth > 0,
			ScrollY: window.scrollY,
			Touch: navigator.maxTouchPoints > 1,
			ReducedMotion: matchMedia("(prefers-reduced-motion: reduce)").matches,
			UserAgent: navigator.userAgent,
		})`))
		*dst = v
		return err
	}
}

func TestCaptureViewports(t *testing.T) {
	t.Parallel()
	b := setup(t, capture.Options{})
	t.Run("Each", func(t *testing.T) { // returns when the parallel viewports are done
		testViewports(t, b)
	})
	if n := b.pool.Launches(); n != 1 {
		t.Errorf("browser launched %d times for three captures, want 1 (reuse)", n)
	}
	if b.site.lazyHits.Load() == 0 || b.site.fontHits.Load() == 0 {
		t.Errorf("lazy image hits %d, font hits %d; want both > 0", b.site.lazyHits.Load(), b.site.fontHits.Load())
	}
}

func testViewports(t *testing.T, b *bundle) {
	for _, vp := range []design.Viewport{design.Mobile, design.Tablet, design.Desktop} {
		t.Run(string(vp), func(t *testing.T) {
			t.Parallel()
			sess := b.proxy.NewSession()
			defer sess.Close()
			var seen inPage
			c, err := b.pool.Capture(context.Background(), capture.Target{URL: b.site.url + "/page", Viewport: vp, Session: sess}, measureInto(&seen))
			if err != nil {
				t.Fatalf("Capture: %v", err)
			}
			w, h, _ := vp.Size()
			if seen.Width != w || seen.Height != h {
				t.Errorf("viewport = %d×%d, want %d×%d", seen.Width, seen.Height, w, h)
			}
			if want := vp != design.Desktop; seen.Touch != want {
				t.Errorf("touch = %v, want %v", seen.Touch, want)
			}
			if got := strings.Contains(seen.UserAgent, " Mobile "); got != (vp == design.Mobile) {
				t.Errorf("user agent %q: Mobile = %v, want %v", seen.UserAgent, got, vp == design.Mobile)
			}
			if strings.Contains(seen.UserAgent, "Headless") {
				t.Errorf("user agent %q announces a headless browser", seen.UserAgent)
			}
			if !seen.ReducedMotion {
				t.Error("prefers-reduced-motion is not emulated")
			}
			if seen.FontStatus != "loaded" {
				t.Errorf("web font status at measure time = %q, want loaded (fonts.ready not honoured)", seen.FontStatus)
			}
			if !seen.LazyComplete {
				t.Error("the lazy image below the fold was not loaded by the scroll pass")
			}
			if seen.ScrollY != 0 {
				t.Errorf("measure ran at scrollY %v, want 0", seen.ScrollY)
			}
			img, err := png.Decode(bytes.NewReader(c.Screenshot))
			if err != nil {
				t.Fatalf("screenshot does not decode: %v", err)
			}
			if got := img.Bounds().Dx(); got != w || c.Width != w {
				t.Errorf("screenshot width = %d (Capture.Width %d), want %d", got, c.Width, w)
			}
			if got := img.Bounds().Dy(); got != c.Height || c.Height < 6000 || c.PageHeight != c.Height {
				t.Errorf("screenshot height = %d, Capture.Height %d, PageHeight %d; want the full page (> 6000)", got, c.Height, c.PageHeight)
			}
			h0 := c.Health
			if h0.StatusCode != 200 {
				t.Errorf("status = %d, want 200", h0.StatusCode)
			}
			if !slices.ContainsFunc(h0.ConsoleErrors, func(s string) bool { return strings.Contains(s, "boom from the page") }) {
				t.Errorf("console errors = %q, want the page's console.error", h0.ConsoleErrors)
			}
			if !slices.ContainsFunc(h0.Failed, func(f design.Failure) bool {
				return strings.HasSuffix(f.URL, "/missing.png") && f.Code == "HTTP_404"
			}) {
				t.Errorf("failed requests = %+v, want /missing.png HTTP_404", h0.Failed)
			}
			if !slices.ContainsFunc(h0.Failed, func(f design.Failure) bool { return strings.HasSuffix(f.URL, "/refused.png") }) {
				t.Errorf("failed requests = %+v, want the refused /refused.png", h0.Failed)
			}
			if slices.ContainsFunc(h0.Failed, func(f design.Failure) bool { return f.URL == "" }) {
				t.Errorf("failed requests = %+v list one with no URL", h0.Failed)
			}
			if !slices.ContainsFunc(h0.EgressBlocked, func(f design.Failure) bool {
				return strings.Contains(f.URL, blockedHost) && f.Code == string(fault.DNSTargetProhibited)
			}) {
				t.Errorf("egress blocked = %+v, want the %s image with DNS_TARGET_PROHIBITED", h0.EgressBlocked, blockedHost)
			}
			if slices.ContainsFunc(h0.Failed, func(f design.Failure) bool { return strings.Contains(f.URL, blockedHost) }) {
				t.Errorf("the blocked request is listed as failed too: %+v", h0.Failed)
			}
			if h0.CaptureDuration <= 0 {
				t.Error("capture duration not recorded")
			}
		})
	}
}

func TestCaptureCapsScreenshotHeight(t *testing.T) {
	t.Parallel()
	b := setup(t, capture.Options{MaxHeight: 3000})
	c, err := b.capture(b.site.url+"/tall", design.Desktop, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Height != 3000 || c.PageHeight != 20000 {
		t.Errorf("Height %d, PageHeight %d; want 3000 and 20000", c.Height, c.PageHeight)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(c.Screenshot))
	if err != nil || cfg.Height != 3000 {
		t.Errorf("screenshot height %d (err %v), want 3000", cfg.Height, err)
	}
}

func TestCaptureFailureKeepsHealth(t *testing.T) {
	t.Parallel()
	b := setup(t, capture.Options{})
	sess := b.proxy.NewSession()
	defer sess.Close()
	// The document itself is refused by the guard.
	c, err := b.pool.Capture(context.Background(), capture.Target{URL: "http://" + blockedHost + "/", Viewport: design.Mobile, Session: sess}, nil)
	if !fault.Is(err, fault.CaptureFailed) || !strings.Contains(err.Error(), string(fault.DNSTargetProhibited)) {
		t.Fatalf("err = %v, want CAPTURE_FAILED naming DNS_TARGET_PROHIBITED", err)
	}
	if c == nil || !slices.ContainsFunc(c.Health.EgressBlocked, func(f design.Failure) bool { return f.URL == "http://"+blockedHost+"/" }) {
		t.Fatalf("health of the failed capture lost the blocked document: %+v", c)
	}
	if strings.Contains(fmt.Sprint(err), "169.254") {
		t.Errorf("error leaks the internal address: %v", err)
	}
	// An unknown viewport is refused before anything runs.
	if _, err := b.pool.Capture(context.Background(), capture.Target{URL: b.site.url + "/page", Viewport: "watch"}, nil); !fault.Is(err, fault.InvalidArgument) {
		t.Errorf("unknown viewport: err = %v, want INVALID_ARGUMENT", err)
	}
}

func TestCaptureSurvivesBrowserCrash(t *testing.T) {
	t.Parallel()
	b := setup(t, capture.Options{})
	url := b.site.url + "/tall"
	if _, err := b.capture(url, design.Desktop, nil); err != nil {
		t.Fatal(err)
	}

	// Kill the browser in the middle of a capture: the capture is retried on
	// a new browser and succeeds.
	var calls atomic.Int32
	kill := func(ctx context.Context) error {
		if calls.Add(1) == 1 {
			if err := syscall.Kill(b.pool.BrowserPID(), syscall.SIGKILL); err != nil {
				return err
			}
			_, err := chromedp.Run(ctx, chromedp.Evaluate[int](`1`))
			return err // the dead tab fails this run
		}
		return nil
	}
	t0 := time.Now()
	c, err := b.capture(url, design.Desktop, kill)
	t.Logf("mid-capture crash and retry took %v", time.Since(t0))
	if err != nil {
		t.Fatalf("capture after a mid-capture crash: %v", err)
	}
	if calls.Load() != 2 || len(c.Screenshot) == 0 {
		t.Errorf("measure ran %d times, screenshot %d bytes; want a retry that succeeded", calls.Load(), len(c.Screenshot))
	}

	// Kill it between captures: the next capture launches a new one.
	if err := syscall.Kill(b.pool.BrowserPID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The pool has seen the death once its browser's context ends, which
	// BrowserPID reports as 0; chromedp exposes no event for it to a test.
	waitCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for b.pool.BrowserPID() != 0 {
		select {
		case <-waitCtx.Done():
			t.Fatal("the pool did not see the killed browser die")
		case <-tick.C:
		}
	}
	t0 = time.Now()
	if _, err := b.capture(url, design.Mobile, nil); err != nil {
		t.Fatalf("capture after a crash between captures: %v", err)
	}
	t.Logf("capture after a crash between captures took %v", time.Since(t0))
	if n := b.pool.Launches(); n != 3 {
		t.Errorf("launches = %d, want 3 (one per crash)", n)
	}
	if m := b.pool.Memory(); m.Processes == 0 || m.RSS == 0 {
		t.Errorf("memory of a running browser = %+v", m)
	}
}

func TestPoolRequiresProxyAndClose(t *testing.T) {
	t.Parallel()
	if _, err := capture.NewPool(context.Background(), capture.Options{Chrome: "/bin/true"}); err == nil {
		t.Error("a pool without a proxy was created")
	}
	b := setup(t, capture.Options{})
	b.pool.Close()
	if _, err := b.pool.Capture(context.Background(), capture.Target{URL: b.site.url + "/page", Viewport: design.Mobile}, nil); !errors.Is(err, capture.ErrClosed) {
		t.Errorf("capture after Close: err = %v, want ErrClosed", err)
	}
}

// sharedListener is a real proxy session reached through the proxy's shared
// listener, where only its credentials identify it (what Session.Addr
// falls back to when a dedicated listener cannot be opened).
type sharedListener struct {
	*browserproxy.Session
	addr string
}

func (s sharedListener) Addr() string { return s.addr }

func TestCaptureAnswersProxyAuth(t *testing.T) {
	t.Parallel()
	b := setup(t, capture.Options{})
	sess := b.proxy.NewSession()
	defer sess.Close()
	var seen inPage
	c, err := b.pool.Capture(context.Background(), capture.Target{
		URL: b.site.url + "/page", Viewport: design.Desktop, Session: sharedListener{sess, b.proxy.Addr()},
	}, measureInto(&seen))
	if err != nil {
		t.Fatalf("capture through the shared listener: %v", err)
	}
	if c.Health.StatusCode != 200 || seen.FontStatus != "loaded" {
		t.Errorf("status %d, font %q: the page or its subresources did not get through", c.Health.StatusCode, seen.FontStatus)
	}
	if !slices.ContainsFunc(c.Health.EgressBlocked, func(f design.Failure) bool { return strings.Contains(f.URL, blockedHost) }) {
		t.Errorf("egress blocked = %+v: the session's refusals were not attributed to it", c.Health.EgressBlocked)
	}
}

// TestBrowserHasEgressFlags reads the launched browser's own command line:
// every switch of browserproxy.ChromiumFlags (the one list) is on it, with
// chromedp's feature lists extended rather than replaced.
func TestBrowserHasEgressFlags(t *testing.T) {
	t.Parallel()
	b := setup(t, capture.Options{})
	if err := b.pool.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", b.pool.BrowserPID()))
	if err != nil {
		t.Skipf("no /proc command line: %v", err)
	}
	args := strings.Split(string(raw), "\x00")
	for _, want := range browserproxy.ChromiumFlags(b.proxy.Addr()) {
		name, value, _ := strings.Cut(want, "=")
		i := slices.IndexFunc(args, func(a string) bool { return a == name || strings.HasPrefix(a, name+"=") })
		switch {
		case i < 0:
			t.Errorf("browser launched without %s", want)
		case strings.HasSuffix(name, "-features"):
			for _, f := range strings.Split(value, ",") {
				if !slices.Contains(strings.Split(strings.TrimPrefix(args[i], name+"="), ","), f) {
					t.Errorf("%s lacks %s: %s", name, f, args[i])
				}
			}
		case args[i] != want:
			t.Errorf("browser launched with %s, want %s", args[i], want)
		}
	}
	if !slices.Contains(args, "--disable-features=Translate,BlinkGenPropertyTrees") && !slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--disable-features=Translate,BlinkGenPropertyTrees,")
	}) {
		t.Errorf("chromedp's own disabled features were dropped: %q", args)
	}
}
