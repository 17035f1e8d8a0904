package browserproxy_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/bastion-mcp/bastion/egress/browserproxy"
	"github.com/bastion-mcp/bastion/internal/testenv"
)

// dialLog is the test guard with a record of every address the proxy asked
// it to dial, and a signal when an address other than the site's is asked.
type dialLog struct {
	*testGuard
	site  string
	mu    sync.Mutex
	dials []string
	other chan struct{} // closed at the first dial of another address
	once  sync.Once
}

func (d *dialLog) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	d.dials = append(d.dials, address)
	d.mu.Unlock()
	if address != d.site {
		d.once.Do(func() { close(d.other) })
	}
	return d.testGuard.DialContext(ctx, network, address)
}

func (d *dialLog) seen() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.dials)
}

// quietArm is one browser launched as capture launches it: the shared
// listener (RequireAuth) as its launch proxy, the page in a browser context
// of its own whose proxy is one Session.
type quietArm struct {
	log     *dialLog
	session *browserproxy.Session
	err     chan error
}

// runQuietArm launches Chromium with flags and loads a blank page, then a
// page with a sign-up form (what makes Chromium ask its autofill server),
// in a fresh browser context behind a session of its own proxy.
func runQuietArm(ctx context.Context, t *testing.T, b *bundle, flags func(addr string) []string) *quietArm {
	t.Helper()
	log := &dialLog{testGuard: b.guard, site: b.siteAddr, other: make(chan struct{})}
	p, err := browserproxy.New(log, browserproxy.Options{AllowHTTP: true, RequireAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	arm := &quietArm{log: log, session: p.NewSession(), err: make(chan error, 1)}
	t.Cleanup(arm.session.Close)
	actx, acancel := chromedp.NewExecAllocator(ctx, allocatorOptions(t, flags(p.Addr()))...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	go func() {
		if err := chromedp.Do(bctx); err != nil {
			arm.err <- err
			return
		}
		tab, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext(func(cp *target.CreateBrowserContextParams) {
			cp.ProxyServer = "http://" + arm.session.Addr()
			cp.ProxyBypassList = "<-loopback>"
		}))
		t.Cleanup(cancel)
		arm.err <- chromedp.Do(tab,
			chromedp.Navigate("http://"+b.siteAddr+"/blank"),
			chromedp.Navigate("http://"+b.siteAddr+"/signup"))
	}()
	return arm
}

// TestChromiumMakesNoRequestOfItsOwn launches two real Chromiums through
// real proxies as capture does. The control drops ChromiumFlags'
// --disable-features, and Chromium soon sends a request of its own (the
// autofill query the sign-up form triggers, optimization hints) through the
// page's session. The arm with every ChromiumFlags switch loads the same two
// pages side by side: by the time the control's own request has arrived and
// both have loaded, its proxy has been asked to dial nothing but the site,
// and its session has refused nothing. The control is what bounds the wait:
// the test waits on its request, never on a timer.
func TestChromiumMakesNoRequestOfItsOwn(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	b := setup(t, browserproxy.Options{AllowHTTP: true})
	b.mux.HandleFunc("/blank", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><title>blank</title>`)
	})
	b.mux.HandleFunc("/signup", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><title>sign up</title><form action="/done" method="post">
<input name="name" autocomplete="name"><input name="email" type="email" autocomplete="email">
<input name="street" autocomplete="street-address"><input name="pw" type="password"><button>Sign up</button></form>`)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a cap for loaded CI machines
	defer cancel()

	control := runQuietArm(ctx, t, b, func(addr string) []string {
		return slices.DeleteFunc(browserproxy.ChromiumFlags(addr), func(f string) bool { return strings.HasPrefix(f, "--disable-features=") })
	})
	quiet := runQuietArm(ctx, t, b, func(addr string) []string { return browserproxy.ChromiumFlags(addr) })
	for name, arm := range map[string]*quietArm{"control": control, "quiet": quiet} {
		select {
		case err := <-arm.err:
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		case <-ctx.Done():
			t.Fatalf("%s: the pages did not load: %v", name, ctx.Err())
		}
	}
	select {
	case <-control.log.other:
	case <-ctx.Done():
		t.Fatalf("the control browser sent no request of its own (dials %q): this test could no longer fail", control.log.seen())
	}
	t.Logf("control: dials %q, blocked %v", control.log.seen(), control.session.Blocked())
	for _, d := range quiet.log.seen() {
		if d != b.siteAddr {
			t.Errorf("Chromium with ChromiumFlags asked the proxy for %s, a request of its own", d)
		}
	}
	if bl := quiet.session.Blocked(); len(bl) != 0 {
		t.Errorf("the page's session refused %v: requests the page did not make", bl)
	}
}
