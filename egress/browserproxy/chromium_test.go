package browserproxy_test

import (
	"context"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"github.com/bastion-mcp/bastion/egress/browserproxy"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/internal/testenv"
)

// wsHello is a minimal websocket server: it completes the RFC 6455
// handshake, sends one text frame "hello" and waits for the client to go.
func wsHello(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Sec-WebSocket-Key")
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || key == "" {
		http.Error(w, "websocket only", http.StatusBadRequest)
		return
	}
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer func() { _ = conn.Close() }()
	_, _ = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Accept: "+base64.StdEncoding.EncodeToString(sum[:])+"\r\n\r\n")
	_, _ = conn.Write([]byte{0x81, 5, 'h', 'e', 'l', 'l', 'o'})
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.Copy(io.Discard, conn)
}

// testPage is served for siteName. Its subresources of every kind point at
// the counting loopback listener (by IP and through a rebinding name) and at
// the metadata address; its own fetch and websocket show the proxy works.
const testPage = `<!doctype html>
<html><head><title>start</title>
<script src="http://169.254.169.254/latest/meta-data/x.js"></script>
</head><body>
<img src="http://127.0.0.1:{{CP}}/img.png?token=secret">
<img src="https://127.0.0.1:{{CP}}/tls.png">
<img src="/redirect-to-loopback">
<iframe src="http://{{REBIND}}:{{CP}}/frame"></iframe>
<script>
window.done = {};
const settle = (k) => () => { done[k] = 1; };
fetch("http://127.0.0.1:{{CP}}/fetch?secret=1", {mode: "no-cors"}).catch(() => {}).finally(settle("f1"));
fetch("http://{{REBIND}}:{{CP}}/api", {mode: "no-cors"}).catch(() => {}).finally(settle("f2"));
const w1 = new WebSocket("ws://127.0.0.1:{{CP}}/ws"); w1.onerror = w1.onclose = settle("w1");
const w2 = new WebSocket("ws://{{REBIND}}:{{CP}}/ws"); w2.onerror = w2.onclose = settle("w2");
fetch("/ok.txt").then(r => r.text()).then(t => { done.own = t; });
const ws = new WebSocket("ws://{{SITE}}/ws"); ws.onmessage = (e) => { done.ws = e.data; };
</script>
</body></html>`

const pageReady = `window.done && done.own === "ok" && done.ws === "hello" && done.f1 && done.f2 && done.w1 && done.w2 && document.readyState === "complete"`

func serveTestPage(b *bundle) {
	cp := b.counter.port()
	page := strings.NewReplacer("{{CP}}", cp, "{{REBIND}}", rebindName, "{{SITE}}", b.siteAddr).Replace(testPage)
	b.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, page)
	})
	b.mux.HandleFunc("/ok.txt", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	b.mux.HandleFunc("/redirect-to-loopback", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:"+cp+"/redirected.png", http.StatusFound)
	})
	b.mux.HandleFunc("/ws", wsHello)
}

// allocatorOptions launches a fresh headless Chromium with flags (each
// "--name" or "--name=value", as ChromiumFlags spells them) on chromedp's
// defaults, and nothing else about the network.
func allocatorOptions(t *testing.T, flags []string) []chromedp.ExecAllocatorOption {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(testenv.Chromium(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
	)
	for _, f := range flags {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if hasValue {
			opts = append(opts, chromedp.Flag(name, value))
		} else {
			opts = append(opts, chromedp.Flag(name, true))
		}
	}
	return opts
}

// runChromium loads pageURL in a fresh headless Chromium launched with
// flags and waits until the page reports every request settled.
func runChromium(t *testing.T, flags []string, pageURL string) error {
	t.Helper()
	return runChromiumWith(t, flags, pageURL, nil)
}

// runChromiumWith is runChromium with before run on the page's context
// ahead of the navigation.
func runChromiumWith(t *testing.T, flags []string, pageURL string, before func(ctx context.Context) error) error {
	t.Helper()
	opts := allocatorOptions(t, flags)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second) // a cap for loaded CI machines; a run takes 1-8 s
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	cctx, ccancel := chromedp.NewContext(actx)
	defer ccancel()
	if before != nil {
		if err := before(cctx); err != nil {
			return err
		}
	}
	if err := chromedp.Do(cctx, chromedp.Navigate(pageURL)); err != nil {
		return fmt.Errorf("navigate: %w", err)
	}
	if _, err := chromedp.Run(cctx, chromedp.Poll[bool](pageReady, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		state, _ := chromedp.Run(cctx, chromedp.Evaluate[string](`JSON.stringify(window.done || null)`))
		return fmt.Errorf("page did not settle (done = %s): %w", state, err)
	}
	return nil
}

// TestChromiumCannotReachInternal loads, in a real Chromium behind the
// proxy, a page whose subresources (img, script, iframe, fetch, websocket,
// a redirect, https) aim at loopback, the metadata address and a rebinding
// name. None may reach a listener; the page itself and its own fetch and
// websocket must work; every refusal is on the session.
func TestChromiumCannotReachInternal(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	b := setup(t, browserproxy.Options{AllowHTTP: true})
	serveTestPage(b)
	s := b.proxy.NewSession()
	defer s.Close()

	if err := runChromium(t, browserproxy.ChromiumFlags(s.Addr()), "http://"+b.siteAddr+"/"); err != nil {
		t.Fatal(err)
	}
	if n := b.counter.n.Load(); n != 0 {
		t.Errorf("the loopback listener got %d connections from Chromium, want 0", n)
	}
	cp := b.counter.port()
	want := []string{
		"http://169.254.169.254/latest/meta-data/x.js",
		"http://127.0.0.1:" + cp + "/img.png",
		"https://127.0.0.1:" + cp + "/",
		"http://127.0.0.1:" + cp + "/redirected.png",
		"http://" + rebindName + ":" + cp + "/frame",
		"http://127.0.0.1:" + cp + "/fetch",
		"http://" + rebindName + ":" + cp + "/api",
		"https://127.0.0.1:" + cp + "/", // ws:// goes through CONNECT
		"https://" + rebindName + ":" + cp + "/",
	}
	blocked := s.Blocked()
	var got []string
	for _, bl := range blocked {
		if bl.Code != fault.DNSTargetProhibited && bl.Code != fault.URLNotAllowed {
			t.Errorf("blocked %s with %s, want DNS_TARGET_PROHIBITED or URL_NOT_ALLOWED", bl.URL, bl.Code)
		}
		if strings.Contains(bl.URL, "secret") {
			t.Errorf("blocked URL keeps its query: %s", bl.URL)
		}
		got = append(got, bl.URL)
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("Blocked() lacks %s", w)
		}
	}
	t.Logf("Blocked() = %v", blocked)
}

// TestChromiumLoopbackBypass shows why ChromiumFlags carries
// --proxy-bypass-list=<-loopback>: without it Chromium connects to loopback
// addresses directly, around the proxy, and the counting listener is hit.
// If this test ever fails, Chromium stopped bypassing loopback by default;
// the flag stays harmless.
func TestChromiumLoopbackBypass(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	b := setup(t, browserproxy.Options{AllowHTTP: true})
	serveTestPage(b)
	s := b.proxy.NewSession()
	defer s.Close()
	flags := slices.DeleteFunc(browserproxy.ChromiumFlags(s.Addr()), func(f string) bool {
		return strings.HasPrefix(f, "--proxy-bypass-list")
	})
	// The direct loopback requests reach the counter, which closes them: the
	// page still settles.
	if err := runChromium(t, flags, "http://"+b.siteAddr+"/"); err != nil {
		t.Fatal(err)
	}
	if n := b.counter.n.Load(); n == 0 {
		t.Error("without <-loopback> Chromium still sent loopback requests to the proxy; the default bypass changed")
	}
}

// answerProxyAuth makes Chromium answer the proxy's 407 with the session's
// credentials through CDP: Fetch.enable with handleAuthRequests pauses every
// request (requestPaused: continue it) and raises authRequired for the
// proxy challenge (continueWithAuth: ProvideCredentials). This is how a
// capture using the shared listener with RequireAuth supplies credentials;
// Chromium has no command-line switch for proxy credentials.
func answerProxyAuth(s *browserproxy.Session) func(ctx context.Context) error {
	return func(ctx context.Context) error {
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
						Response: fetch.AuthChallengeResponseResponseProvideCredentials,
						Username: s.Username(),
						Password: s.Password(),
					}
				}
				_, _ = chromedp.Call(ctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: ev.RequestID, AuthChallengeResponse: resp})
			}
		}()
		handle := true
		_, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{HandleAuthRequests: &handle})
		return err
	}
}

// TestChromiumProxyAuth runs the same page through the shared listener with
// RequireAuth: Chromium gets a 407, answers it with the session's
// credentials via CDP, and the refusals land on that session.
func TestChromiumProxyAuth(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	b := setup(t, browserproxy.Options{AllowHTTP: true, RequireAuth: true})
	serveTestPage(b)
	s := b.proxy.NewSession()
	defer s.Close()
	if err := runChromiumWith(t, browserproxy.ChromiumFlags(b.proxy.Addr()), "http://"+b.siteAddr+"/", answerProxyAuth(s)); err != nil {
		t.Fatal(err)
	}
	if n := b.counter.n.Load(); n != 0 {
		t.Errorf("the loopback listener got %d connections from Chromium, want 0", n)
	}
	var got []string
	for _, bl := range s.Blocked() {
		got = append(got, bl.URL)
	}
	cp := b.counter.port()
	for _, w := range []string{
		"http://169.254.169.254/latest/meta-data/x.js",
		"http://127.0.0.1:" + cp + "/img.png",
		"https://127.0.0.1:" + cp + "/",
		"http://" + rebindName + ":" + cp + "/api",
	} {
		if !slices.Contains(got, w) {
			t.Errorf("session's Blocked() lacks %s (got %v)", w, got)
		}
	}
}
