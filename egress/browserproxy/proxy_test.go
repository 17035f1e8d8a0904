package browserproxy_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/egress/browserproxy"
	"github.com/bastion-mcp/bastion/fault"
)

// Test names. Only DNS is stubbed: the guard resolves them with a
// StaticResolver; everything else (guard, proxy, listeners) is real.
const (
	siteName   = "site.test-bastion.example"   // the page's host: a public answer
	rebindName = "rebind.test-bastion.example" // public and loopback answers: rebinding
)

var (
	sitePublicIP   = netip.MustParseAddr("93.184.215.14")
	rebindPublicIP = netip.MustParseAddr("93.184.215.34")
)

// counter is a loopback listener that counts the connections it accepts;
// the blocked destinations point at it, and it must stay at zero.
type counter struct {
	ln net.Listener
	n  atomic.Int64
}

func newCounter(t testing.TB) *counter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &counter{ln: ln}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.n.Add(1)
			_ = conn.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return c
}

func (c *counter) port() string {
	_, p, _ := net.SplitHostPort(c.ln.Addr().String())
	return p
}

// testGuard is the real egress guard, except that the one allowed test name
// (after passing the guard's own resolve-and-classify) is connected to its
// loopback server instead of the public address it resolved to. Every other
// address is dialed by the guard itself.
type testGuard struct {
	*egress.Guard
	redirect map[string]string // "host:port" -> loopback "ip:port"
}

func (g *testGuard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	to, ok := g.redirect[address]
	if !ok {
		return g.Guard.DialContext(ctx, network, address)
	}
	host, _, _ := net.SplitHostPort(address)
	if _, err := g.Guard.Resolve(ctx, host); err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, network, to)
}

type bundle struct {
	guard    *testGuard
	proxy    *browserproxy.Proxy
	counter  *counter
	mux      *http.ServeMux
	site     *httptest.Server // plain http, served for siteName
	tlsSite  *httptest.Server // https, served for siteName too
	siteAddr string           // siteName:port of site
	tlsAddr  string           // siteName:port of tlsSite
}

func setup(t testing.TB, o browserproxy.Options) *bundle {
	t.Helper()
	b := &bundle{mux: http.NewServeMux(), counter: newCounter(t)}
	b.site = httptest.NewServer(b.mux)
	t.Cleanup(b.site.Close)
	b.tlsSite = httptest.NewUnstartedServer(b.mux)
	// Tunnels the tests cut mid-handshake are expected; keep them out of the log.
	b.tlsSite.Config.ErrorLog = log.New(io.Discard, "", 0)
	b.tlsSite.StartTLS()
	t.Cleanup(b.tlsSite.Close)
	sitePort := b.site.Listener.Addr().(*net.TCPAddr).Port
	tlsPort := b.tlsSite.Listener.Addr().(*net.TCPAddr).Port
	countPort, _ := strconv.Atoi(b.counter.port())
	b.siteAddr = net.JoinHostPort(siteName, strconv.Itoa(sitePort))
	b.tlsAddr = net.JoinHostPort(siteName, strconv.Itoa(tlsPort))

	g := egress.NewGuard(egress.Policy{
		AllowHTTP: true,
		// The test ports are allowed so that refusals below come from the
		// address classification, not from the port policy.
		Ports: []uint16{80, 443, uint16(sitePort), uint16(tlsPort), uint16(countPort)},
	}, egress.StaticResolver{
		siteName:   {sitePublicIP},
		rebindName: {rebindPublicIP, netip.MustParseAddr("127.0.0.1")},
	})
	b.guard = &testGuard{Guard: g, redirect: map[string]string{
		b.siteAddr: b.site.Listener.Addr().String(),
		b.tlsAddr:  b.tlsSite.Listener.Addr().String(),
	}}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	p, err := browserproxy.New(b.guard, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	b.proxy = p
	return b
}

// client returns an HTTP client that uses proxyAddr (with user info, if
// any) and trusts the TLS test server.
func (b *bundle) client(proxyAddr string, user *url.Userinfo) *http.Client {
	roots := x509.NewCertPool()
	roots.AddCert(b.tlsSite.Certificate())
	pu := &url.URL{Scheme: "http", Host: proxyAddr, User: user}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:             http.ProxyURL(pu),
			TLSClientConfig:   &tls.Config{RootCAs: roots, ServerName: "example.com"},
			DisableKeepAlives: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       5 * time.Second,
	}
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestForwardAndRefuse(t *testing.T) {
	t.Parallel()
	b := setup(t, browserproxy.Options{AllowHTTP: true})
	var gotAuth, gotQuery atomic.Value
	b.mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		gotAuth.Store(r.Header.Get("Proxy-Authorization"))
		gotQuery.Store(r.URL.RawQuery)
		_, _ = io.WriteString(w, "hello page")
	})
	b.mux.HandleFunc("/redir", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:"+b.counter.port()+"/after-redirect", http.StatusFound)
	})
	s := b.proxy.NewSession()
	defer s.Close()
	c := b.client(b.proxy.Addr(), url.UserPassword(s.Username(), s.Password()))

	code, body := get(t, c, "http://"+b.siteAddr+"/page?a=1&b=%zz")
	if code != 200 || body != "hello page" {
		t.Fatalf("allowed page = %d %q", code, body)
	}
	if a, _ := gotAuth.Load().(string); a != "" {
		t.Errorf("Proxy-Authorization reached the site: %q", a)
	}
	if q, _ := gotQuery.Load().(string); q != "a=1&b=%zz" {
		t.Errorf("query reached the site as %q, want it untouched", q)
	}
	code, body = get(t, c, "https://"+b.tlsAddr+"/page")
	if code != 200 || body != "hello page" {
		t.Fatalf("allowed https page through CONNECT = %d %q", code, body)
	}
	// The redirect itself is passed to the browser, which asks the proxy
	// for the next hop: that request is refused like any other.
	if code, _ := get(t, c, "http://"+b.siteAddr+"/redir"); code != http.StatusFound {
		t.Fatalf("redirect = %d, want 302 passed through", code)
	}

	cp := b.counter.port()
	refused := []struct {
		url, shown string
		code       fault.Code
	}{
		{"http://127.0.0.1:" + cp + "/x.png?secret=1", "http://127.0.0.1:" + cp + "/x.png", fault.DNSTargetProhibited},
		{"http://127.0.0.1:" + cp + "/after-redirect", "http://127.0.0.1:" + cp + "/after-redirect", fault.DNSTargetProhibited},
		{"http://169.254.169.254/latest/meta-data/", "http://169.254.169.254/latest/meta-data/", fault.DNSTargetProhibited},
		{"http://" + rebindName + ":" + cp + "/api#frag", "http://" + rebindName + ":" + cp + "/api", fault.DNSTargetProhibited},
		{"http://unknown.test-bastion.example/", "http://unknown.test-bastion.example/", fault.DNSTargetProhibited},
		{"http://" + siteName + ":1/", "http://" + siteName + ":1/", fault.URLNotAllowed}, // port policy
		{"http://0x7f.1:" + cp + "/", "http://0x7f.1:" + cp + "/", fault.URLNotAllowed},   // non-canonical IPv4
		{"https://127.0.0.1:" + cp + "/", "https://127.0.0.1:" + cp + "/", fault.DNSTargetProhibited},
		{"https://" + rebindName + ":" + cp + "/", "https://" + rebindName + ":" + cp + "/", fault.DNSTargetProhibited},
		{"https://169.254.169.254/", "https://169.254.169.254/", fault.DNSTargetProhibited},
	}
	for _, r := range refused {
		code, body := get(t, c, r.url)
		if strings.HasPrefix(r.url, "https:") {
			// CONNECT refused: the client sees a failed tunnel, no body.
			if code != 0 || !strings.Contains(body, "Forbidden") {
				t.Errorf("GET %s = %d %q, want the CONNECT refused with 403", r.url, code, body)
			}
			continue
		}
		if code != http.StatusForbidden || !strings.Contains(body, string(r.code)) {
			t.Errorf("GET %s = %d %q, want 403 naming %s", r.url, code, body, r.code)
		}
		if strings.Contains(body, "127.0.0.1") || strings.Contains(body, "93.184") {
			t.Errorf("GET %s: the error page names an address: %q", r.url, body)
		}
	}
	if n := b.counter.n.Load(); n != 0 {
		t.Errorf("the loopback listener got %d connections, want 0", n)
	}
	var want []browserproxy.Blocked
	for _, r := range refused {
		want = append(want, browserproxy.Blocked{URL: r.shown, Code: r.code})
	}
	if got := s.Blocked(); !slices.Equal(got, want) {
		t.Errorf("Blocked() =\n%v\nwant\n%v", got, want)
	}
}

func TestPlainHTTPNotAllowed(t *testing.T) {
	t.Parallel()
	b := setup(t, browserproxy.Options{}) // AllowHTTP false
	b.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	s := b.proxy.NewSession()
	defer s.Close()
	c := b.client(s.Addr(), nil)
	if code, body := get(t, c, "http://"+b.siteAddr+"/?q=1"); code != http.StatusForbidden || !strings.Contains(body, "URL_NOT_ALLOWED") {
		t.Errorf("plain http = %d %q, want 403 URL_NOT_ALLOWED", code, body)
	}
	if code, body := get(t, c, "https://"+b.tlsAddr+"/"); code != 200 || body != "ok" {
		t.Errorf("https = %d %q, want 200 ok", code, body)
	}
	want := []browserproxy.Blocked{{URL: "http://" + b.siteAddr + "/", Code: fault.URLNotAllowed}}
	if got := s.Blocked(); !slices.Equal(got, want) {
		t.Errorf("Blocked() = %v, want %v", got, want)
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	b := setup(t, browserproxy.Options{RequireAuth: true, AllowHTTP: true})
	b.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	s1, s2 := b.proxy.NewSession(), b.proxy.NewSession()
	defer s2.Close()
	if s1.Username() == s2.Username() || s1.Password() == s2.Password() || len(s1.Password()) < 32 {
		t.Fatal("sessions share or have weak credentials")
	}
	page := "http://" + b.siteAddr + "/"
	for _, tc := range []struct {
		name string
		user *url.Userinfo
		want int
	}{
		{"NoCredentials", nil, http.StatusProxyAuthRequired},
		{"WrongPassword", url.UserPassword(s1.Username(), s2.Password()), http.StatusProxyAuthRequired},
		{"UnknownUser", url.UserPassword("nobody", s1.Password()), http.StatusProxyAuthRequired},
		{"Valid", url.UserPassword(s1.Username(), s1.Password()), http.StatusOK},
	} {
		resp, err := b.client(b.proxy.Addr(), tc.user).Get(page)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
		if tc.want == http.StatusProxyAuthRequired && resp.Header.Get("Proxy-Authenticate") != `Basic realm="bastion"` {
			t.Errorf("%s: Proxy-Authenticate = %q", tc.name, resp.Header.Get("Proxy-Authenticate"))
		}
	}
	// CONNECT without credentials is refused too.
	if code, body := get(t, b.client(b.proxy.Addr(), nil), "https://"+b.tlsAddr+"/"); code != 0 || !strings.Contains(body, "Proxy Authentication Required") {
		t.Errorf("CONNECT without credentials = %d %q, want 407", code, body)
	}
	// A session's dedicated port needs no credentials: the port is the identity.
	if code, _ := get(t, b.client(s1.Addr(), nil), page); code != 200 {
		t.Errorf("dedicated listener = %d, want 200", code)
	}
	s1.Close()
	if code, _ := get(t, b.client(b.proxy.Addr(), url.UserPassword(s1.Username(), s1.Password())), page); code != http.StatusProxyAuthRequired {
		t.Errorf("closed session's credentials = %d, want 407", code)
	}
	if code, _ := get(t, b.client(s1.Addr(), nil), page); code != 0 {
		t.Errorf("closed session's listener answered %d, want a refused connection", code)
	}
}

// Sessions keep separate blocked logs, whichever listener they came in by.
func TestSessionAttribution(t *testing.T) {
	t.Parallel()
	b := setup(t, browserproxy.Options{AllowHTTP: true})
	s1, s2 := b.proxy.NewSession(), b.proxy.NewSession()
	defer s1.Close()
	defer s2.Close()
	get(t, b.client(s1.Addr(), nil), "http://169.254.169.254/one")
	get(t, b.client(b.proxy.Addr(), url.UserPassword(s2.Username(), s2.Password())), "http://169.254.169.254/two")
	get(t, b.client(b.proxy.Addr(), nil), "http://169.254.169.254/anonymous")
	if got, want := s1.Blocked(), []browserproxy.Blocked{{"http://169.254.169.254/one", fault.DNSTargetProhibited}}; !slices.Equal(got, want) {
		t.Errorf("s1.Blocked() = %v, want %v", got, want)
	}
	if got, want := s2.Blocked(), []browserproxy.Blocked{{"http://169.254.169.254/two", fault.DNSTargetProhibited}}; !slices.Equal(got, want) {
		t.Errorf("s2.Blocked() = %v, want %v", got, want)
	}
}

// echoUpgrade switches to a line-echo protocol, like a websocket server
// switches after its handshake.
func echoUpgrade(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Upgrade") != "echo" {
		http.Error(w, "upgrade required", http.StatusUpgradeRequired)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer func() { _ = conn.Close() }()
	_, _ = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	for {
		line, err := brw.ReadString('\n')
		if err != nil {
			return
		}
		if _, err := io.WriteString(conn, "echo "+line); err != nil {
			return
		}
	}
}

// rawRequest sends head on a new connection to addr and returns the
// connection and the parsed response.
func rawRequest(t *testing.T, addr, head string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	return conn, br, resp
}

func TestUpgradeOverPlainHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t, browserproxy.Options{AllowHTTP: true})
	b.mux.HandleFunc("/ws", echoUpgrade)
	s := b.proxy.NewSession()
	defer s.Close()

	conn, br, resp := rawRequest(t, s.Addr(), "GET http://"+b.siteAddr+"/ws HTTP/1.1\r\nHost: "+b.siteAddr+
		"\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade status = %d", resp.StatusCode)
	}
	for _, msg := range []string{"one", "two"} {
		if _, err := io.WriteString(conn, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		line, err := br.ReadString('\n')
		if err != nil || line != "echo "+msg+"\n" {
			t.Fatalf("echo = %q, %v", line, err)
		}
	}

	// The same upgrade to a loopback address is refused before any dial.
	_, _, resp = rawRequest(t, s.Addr(), "GET http://127.0.0.1:"+b.counter.port()+"/ws HTTP/1.1\r\nHost: x\r\n"+
		"Connection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("upgrade to loopback = %d, want 403", resp.StatusCode)
	}
	if n := b.counter.n.Load(); n != 0 {
		t.Errorf("loopback listener got %d connections", n)
	}
}

// connectTunnel opens a CONNECT tunnel to target and returns it after the
// 200, or the status.
func connectTunnel(t *testing.T, proxyAddr, target string) (net.Conn, int) {
	t.Helper()
	conn, _, resp := rawRequest(t, proxyAddr, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	_ = conn.SetDeadline(time.Time{})
	return conn, resp.StatusCode
}

func TestTunnelLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, browserproxy.Options{MaxTunnels: 2, IdleTimeout: 300 * time.Millisecond})
	s := b.proxy.NewSession()

	c1, st1 := connectTunnel(t, s.Addr(), b.tlsAddr)
	_, st2 := connectTunnel(t, s.Addr(), b.tlsAddr)
	_, st3 := connectTunnel(t, s.Addr(), b.tlsAddr)
	if st1 != 200 || st2 != 200 || st3 != http.StatusTooManyRequests {
		t.Fatalf("tunnel statuses = %d %d %d, want 200 200 429", st1, st2, st3)
	}
	if got := s.Blocked(); len(got) != 1 || got[0].Code != fault.RateLimited {
		t.Errorf("Blocked() = %v, want one RATE_LIMITED", got)
	}

	// Idle tunnels are closed by the proxy: a read sees EOF well before the
	// test's own deadline, and the slots free up.
	_ = c1.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if _, err := c1.Read(make([]byte, 1)); err == nil {
		t.Fatal("idle tunnel delivered data")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("idle tunnel closed after %v, want about 300ms", d)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		if _, st := connectTunnel(t, s.Addr(), b.tlsAddr); st == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("tunnel slots were not released after idle close")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSessionCloseEndsTunnels(t *testing.T) {
	t.Parallel()
	b := setup(t, browserproxy.Options{})
	s := b.proxy.NewSession()
	conn, st := connectTunnel(t, s.Addr(), b.tlsAddr)
	if st != 200 {
		t.Fatalf("CONNECT = %d", st)
	}
	s.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Fatal("tunnel still delivers data after Session.Close")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("tunnel closed %v after Session.Close", d)
	}
}

func TestResponseCap(t *testing.T) {
	t.Parallel()
	b := setup(t, browserproxy.Options{AllowHTTP: true, MaxBodyBytes: 1000})
	b.mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "5000")
		_, _ = w.Write(make([]byte, 5000))
	})
	b.mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		for range 10 {
			_, _ = w.Write(make([]byte, 500))
			http.NewResponseController(w).Flush()
		}
	})
	b.mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(make([]byte, 1000)) })
	s := b.proxy.NewSession()
	defer s.Close()
	c := b.client(s.Addr(), nil)
	resp, err := c.Get("http://" + b.siteAddr + "/small")
	if err != nil {
		t.Fatal(err)
	}
	small, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || len(small) != 1000 || err != nil {
		t.Errorf("body at the cap = %d, %d bytes, %v; want 200, 1000 bytes, no error", resp.StatusCode, len(small), err)
	}
	if code, body := get(t, c, "http://"+b.siteAddr+"/big"); code != http.StatusBadGateway || !strings.Contains(body, "RESPONSE_TOO_LARGE") {
		t.Errorf("declared oversize body = %d %q, want 502 RESPONSE_TOO_LARGE", code, body)
	}
	resp, err = c.Get("http://" + b.siteAddr + "/stream")
	if err == nil {
		n, rerr := io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if rerr == nil || n > 1000 {
			t.Errorf("streamed oversize body: read %d bytes, err %v; want it cut at 1000", n, rerr)
		}
	}
}

func TestNotAProxyRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, browserproxy.Options{AllowHTTP: true})
	s := b.proxy.NewSession()
	defer s.Close()
	for _, addr := range []string{b.proxy.Addr(), s.Addr()} {
		_, _, resp := rawRequest(t, addr, "GET /admin HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("origin-form request on %s = %d, want 400", addr, resp.StatusCode)
		}
		_, _, resp = rawRequest(t, addr, "CONNECT nonsense HTTP/1.1\r\nHost: nonsense\r\n\r\n")
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("CONNECT without a port on %s = %d, want 400", addr, resp.StatusCode)
		}
	}
	if h, _, _ := net.SplitHostPort(b.proxy.Addr()); h != "127.0.0.1" {
		t.Errorf("proxy listens on %s, want loopback", b.proxy.Addr())
	}
	if h, _, _ := net.SplitHostPort(s.Addr()); h != "127.0.0.1" {
		t.Errorf("session listens on %s, want loopback", s.Addr())
	}
}

func ExampleChromiumFlags() {
	// The launcher's own disabled features join the one --disable-features.
	fmt.Println(strings.Join(browserproxy.ChromiumFlags("127.0.0.1:8080", "site-per-process"), "\n"))
	// Output:
	// --proxy-server=http://127.0.0.1:8080
	// --proxy-bypass-list=<-loopback>
	// --disable-quic
	// --force-webrtc-ip-handling-policy=disable_non_proxied_udp
	// --webrtc-ip-handling-policy=disable_non_proxied_udp
	// --dns-prefetch-disable
	// --disable-background-networking
	// --disable-component-update
	// --disable-field-trial-config
	// --disable-sync
	// --disable-domain-reliability
	// --no-pings
	// --metrics-recording-only
	// --disable-breakpad
	// --disable-client-side-phishing-detection
	// --safebrowsing-disable-auto-update
	// --disable-extensions
	// --disable-default-apps
	// --disable-component-extensions-with-background-pages
	// --no-first-run
	// --no-default-browser-check
	// --no-service-autorun
	// --disable-search-engine-choice-screen
	// --disable-features=AutofillServerCommunication,OptimizationHints,OptimizationHintsFetching,OptimizationGuideModelDownloading,OptimizationTargetPrediction,NetworkTimeServiceQuerying,Translate,MediaRouter,DialMediaRouteProvider,CertificateTransparencyComponentUpdater,site-per-process
}

// BenchmarkForward measures one plain-http request through the proxy and
// the guard (static DNS) to a loopback server, with keep-alive on both legs,
// and one CONNECT tunnel setup plus a TLS request.
func BenchmarkForward(b *testing.B) {
	bb := setup(b, browserproxy.Options{AllowHTTP: true})
	bb.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	s := bb.proxy.NewSession()
	defer s.Close()
	b.Run("HTTP", func(b *testing.B) {
		c := bb.client(s.Addr(), nil)
		c.Transport.(*http.Transport).DisableKeepAlives = false
		for b.Loop() {
			resp, err := c.Get("http://" + bb.siteAddr + "/")
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	})
	b.Run("CONNECT", func(b *testing.B) {
		c := bb.client(s.Addr(), nil) // keep-alives off: a new tunnel per request
		for b.Loop() {
			resp, err := c.Get("https://" + bb.tlsAddr + "/")
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	})
}
