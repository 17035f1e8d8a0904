// Package browserproxy is the browser's only way out: an HTTP forward proxy
// with CONNECT on 127.0.0.1 that sends every request a headless Chromium
// makes (documents, subresources, redirects, websockets) through the egress
// guard's dialer.
//
// Invariants:
//   - Every upstream connection is opened by the Dialer given to New (the
//     egress guard: resolve once, classify every answer, dial the pinned
//     address). The proxy never resolves a name or dials by itself.
//   - The proxy listens on loopback only; a session's dedicated listener too.
//   - A refused request is answered with a 403 that names only the fault code,
//     never an internal address, and is recorded on its session as
//     Blocked{URL without query, Code} for the page-health report.
//   - Tunnels (CONNECT and websocket upgrades) are capped per session and
//     closed when idle, when their session closes, or when the proxy closes.
//
// Chromium must be launched with the proxy as its only route out, see
// ChromiumFlags. A capture binds its browser to its Session in one of two
// ways, both tested with a real Chromium:
//
//   - Session.Addr (recommended): the session's own loopback port. Every
//     request arriving there is the session's; no credentials are needed, so
//     nothing has to answer a 407.
//   - Proxy.Addr with Options.RequireAuth: the shared port answers 407 until
//     Chromium sends the session's Basic credentials. Chromium has no switch
//     for proxy credentials; the capture supplies them over CDP: call
//     Fetch.enable with handleAuthRequests true, answer every
//     Fetch.requestPaused with Fetch.continueRequest, and each
//     Fetch.authRequired whose challenge source is "Proxy" with
//     Fetch.continueWithAuth{response: "ProvideCredentials", username,
//     password} (CancelAuth for any other source).
//
// Chromium sends websockets, ws:// included, as CONNECT tunnels, so a
// refused websocket is recorded as "https://host:port/". Chromium's own
// background requests (component and extension updates, account and time
// services, some of them added by Debian's /usr/bin/chromium wrapper) also
// come through the proxy and are judged like any other.
package browserproxy

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bastion-mcp/bastion/fault"
)

// Dialer opens upstream connections. *egress.Guard satisfies it: it resolves
// the host once, refuses prohibited answers with a *fault.Error and dials the
// pinned address.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// excluder is optionally implemented by the Dialer (*egress.Guard does):
// the proxy's own listeners are registered with it, so no request a page
// makes can be sent back into the proxy.
type excluder interface {
	ExcludeListener(addr net.Addr) (remove func())
}

// canonicalizer is optionally implemented by the Dialer (*egress.Guard does).
// When present, every request URL is canonicalized by it before dialing, so
// parser-confusion hosts are refused with the guard's own code.
type canonicalizer interface {
	Canonicalize(raw string) (*url.URL, error)
}

// Defaults for zero Options fields.
const (
	DefaultMaxBodyBytes = 64 << 20
	DefaultIdleTimeout  = 60 * time.Second
	DefaultMaxTunnels   = 64
	maxBlocked          = 256 // per session; a hostile page cannot grow it unbounded
)

// Options configures a Proxy. The zero value means defaults and no
// authentication on the shared listener.
type Options struct {
	Logger *slog.Logger // nil means slog.Default()

	// RequireAuth makes the shared listener (Proxy.Addr) answer 407 to
	// requests without a live session's Proxy-Authorization Basic
	// credentials. A session's dedicated listener (Session.Addr) is
	// identified by its port and never asks for credentials.
	RequireAuth bool

	// MaxBodyBytes caps each plain-http request body and response body; 0
	// means DefaultMaxBodyBytes. Tunnelled (TLS) traffic is opaque and is
	// bounded by IdleTimeout and MaxTunnels instead.
	MaxBodyBytes int64

	// AllowHTTP permits plain http:// requests (absolute-form). Without it
	// only CONNECT tunnels are served and every http:// request is refused
	// with URL_NOT_ALLOWED. The guard still applies its own scheme and port
	// policy on top.
	AllowHTTP bool

	// IdleTimeout closes a tunnel or upstream connection that moved no bytes
	// for this long; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration

	// MaxTunnels caps a session's concurrent CONNECT tunnels and websocket
	// upgrades; 0 means DefaultMaxTunnels. Excess tunnels get 429 and are
	// recorded with RATE_LIMITED.
	MaxTunnels int

	// PrivateTLS makes the proxy accept a development server's untrusted
	// certificate for an https destination whose every address is loopback
	// or private, and only there (see privatetls.go): the browser must
	// trust PrivateTLSSPKI. It needs a Dialer that can Resolve (the guard).
	// For `--allow-private` only.
	PrivateTLS bool
}

// Blocked is one request the proxy refused.
type Blocked struct {
	URL  string     // the requested URL without userinfo, query or fragment
	Code fault.Code // the guard's code, e.g. DNS_TARGET_PROHIBITED
}

// Proxy is a guarded forward proxy. Create it with New; it is safe for
// concurrent use.
type Proxy struct {
	// Initialized once by New.
	dialer Dialer
	canon  canonicalizer // or nil
	excl   excluder      // or nil
	unexcl func()        // removes ln from excl
	opts   Options
	log    *slog.Logger
	ptls   *privateTLS // or nil without Options.PrivateTLS
	ln     net.Listener
	srv    *http.Server
	anon   *Session // traffic on the shared listener without credentials (RequireAuth false)

	mu       sync.Mutex          // guards the fields below
	sessions map[string]*Session // live sessions by username
	closed   bool
}

// New starts a proxy on 127.0.0.1 with a random port that dials through g.
func New(g Dialer, o Options) (*Proxy, error) {
	if g == nil {
		return nil, errors.New("browserproxy: nil dialer")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxTunnels <= 0 {
		o.MaxTunnels = DefaultMaxTunnels
	}
	var ptls *privateTLS
	if o.PrivateTLS {
		var err error
		if ptls, err = newPrivateTLS(); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("browserproxy: listen: %w", err)
	}
	p := &Proxy{
		ptls:     ptls,
		dialer:   g,
		opts:     o,
		log:      o.Logger.With("component", "browserproxy"),
		ln:       ln,
		sessions: make(map[string]*Session),
	}
	p.canon, _ = g.(canonicalizer)
	p.excl, _ = g.(excluder)
	p.unexcl = p.exclude(ln)
	p.anon = p.newSession("", "")
	p.srv = p.newServer(handler{p: p})
	go p.serve(p.srv, ln)
	return p, nil
}

func (p *Proxy) newServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       p.opts.IdleTimeout, // keep-alive between Chromium's requests
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
	}
}

func (p *Proxy) serve(srv *http.Server, ln net.Listener) {
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		p.log.Warn("proxy listener stopped", "err", err)
	}
}

// Addr returns the shared listener's address, "127.0.0.1:PORT".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops the shared listener and closes every session and tunnel.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	ss := make([]*Session, 0, len(p.sessions))
	for _, s := range p.sessions {
		ss = append(ss, s)
	}
	p.mu.Unlock()
	for _, s := range ss {
		s.Close()
	}
	p.anon.Close()
	p.unexcl()
	return p.srv.Close()
}

// exclude registers ln as one of bastion's own listeners with the dialer,
// when it supports that, and returns the function that removes it.
func (p *Proxy) exclude(ln net.Listener) func() {
	if p.excl == nil {
		return func() {}
	}
	return p.excl.ExcludeListener(ln.Addr())
}

// NewSession returns a session for one capture: fresh random credentials
// for the shared listener, a dedicated loopback listener (Session.Addr) and
// its own blocked-request log and connection pool. Close it when the
// capture ends.
func (p *Proxy) NewSession() *Session {
	s := p.newSession(randomHex(16), randomHex(32))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		// Fail closed: Addr falls back to the shared listener, where traffic
		// is still guarded (and, with RequireAuth, refused without creds).
		p.log.Error("session listener failed; falling back to the shared listener", "err", err)
	} else {
		s.ln = ln
		s.unexcl = p.exclude(ln)
		s.srv = p.newServer(handler{p: p, fixed: s})
		go p.serve(s.srv, ln)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		s.Close()
		return s
	}
	p.sessions[s.user] = s
	p.mu.Unlock()
	return s
}

func (p *Proxy) forget(s *Session) {
	p.mu.Lock()
	if p.sessions[s.user] == s {
		delete(p.sessions, s.user)
	}
	p.mu.Unlock()
}

// authenticate returns the live session whose credentials r carries.
func (p *Proxy) authenticate(r *http.Request) (*Session, bool) {
	user, pass, ok := parseBasic(r.Header.Get("Proxy-Authorization"))
	if !ok {
		return nil, false
	}
	p.mu.Lock()
	s := p.sessions[user]
	p.mu.Unlock()
	if s == nil {
		return nil, false
	}
	// The map lookup only finds a candidate; both halves are compared in
	// constant time so timing says nothing about the password.
	uOK := subtle.ConstantTimeCompare([]byte(user), []byte(s.user))
	pOK := subtle.ConstantTimeCompare([]byte(pass), []byte(s.pass))
	if uOK&pOK != 1 || s.isClosed() {
		return nil, false
	}
	return s, true
}

func parseBasic(h string) (user, pass string, ok bool) {
	const prefix = "Basic "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", "", false
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(h[len(prefix):]))
	if err != nil {
		return "", "", false
	}
	user, pass, ok = strings.Cut(string(b), ":")
	if !ok {
		return "", "", false
	}
	return user, pass, true
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// Session is one capture's view of the proxy.
type Session struct {
	// Initialized once.
	p         *Proxy
	id        string // for logs; not a credential
	user      string
	pass      string
	ln        net.Listener // dedicated listener, or nil
	unexcl    func()       // removes ln from the dialer's own listeners, or nil
	srv       *http.Server // serves ln, or nil
	transport *http.Transport
	rp        *httputil.ReverseProxy
	ctx       context.Context // canceled by Close; ends the session's tunnels
	cancel    context.CancelFunc
	tunnels   chan struct{} // semaphore, cap MaxTunnels

	mu      sync.Mutex // guards the fields below
	blocked []Blocked
	seen    map[Blocked]bool
	closed  bool
}

func (p *Proxy) newSession(user, pass string) *Session {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{
		p:       p,
		id:      randomHex(4),
		user:    user,
		pass:    pass,
		ctx:     ctx,
		cancel:  cancel,
		tunnels: make(chan struct{}, p.opts.MaxTunnels),
		seen:    make(map[Blocked]bool),
	}
	s.transport = &http.Transport{
		Proxy:                  nil, // HTTP_PROXY and friends never apply
		DialContext:            s.dial,
		MaxIdleConnsPerHost:    6,
		IdleConnTimeout:        p.opts.IdleTimeout / 2, // below the conn idle close, so the pool drops first
		ResponseHeaderTimeout:  30 * time.Second,
		ExpectContinueTimeout:  time.Second,
		DisableCompression:     true, // pass the page's encoding through untouched
		MaxResponseHeaderBytes: 64 << 10,
	}
	s.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// A forward proxy is transparent: keep the query exactly as sent.
			pr.Out.URL.RawQuery = pr.In.URL.RawQuery
			pr.Out.Host = pr.In.URL.Host
		},
		Transport:      s.transport,
		ModifyResponse: s.modifyResponse,
		ErrorHandler:   s.upstreamError,
		ErrorLog:       slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
	}
	return s
}

// Username returns the session's proxy user name for the shared listener.
func (s *Session) Username() string { return s.user }

// Password returns the session's proxy password for the shared listener.
func (s *Session) Password() string { return s.pass }

// Addr returns the session's dedicated listener, "127.0.0.1:PORT". Every
// request arriving there belongs to this session without credentials. If
// the dedicated listener could not be opened it returns the shared
// listener's address, where the session's credentials identify it.
func (s *Session) Addr() string {
	if s.ln == nil {
		return s.p.Addr()
	}
	return s.ln.Addr().String()
}

// Blocked returns a copy of the requests refused so far, in order, each
// distinct (URL, Code) once, at most 256.
func (s *Session) Blocked() []Blocked {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Blocked(nil), s.blocked...)
}

// Close revokes the credentials, closes the dedicated listener and ends
// every tunnel and pooled connection of the session. Blocked stays readable.
func (s *Session) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.p.forget(s)
	s.cancel()
	if s.srv != nil {
		_ = s.srv.Close()
	}
	if s.unexcl != nil {
		s.unexcl()
	}
	s.transport.CloseIdleConnections()
}

func (s *Session) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Session) record(rawURL string, code fault.Code) {
	b := Blocked{URL: rawURL, Code: code}
	s.mu.Lock()
	if !s.seen[b] && len(s.blocked) < maxBlocked {
		s.seen[b] = true
		s.blocked = append(s.blocked, b)
	}
	s.mu.Unlock()
}

// dial opens an upstream connection through the guard and closes it when
// idle or when the session ends.
func (s *Session) dial(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := s.p.dialer.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return newIdleConn(s.ctx, c, s.p.opts.IdleTimeout), nil
}

func (s *Session) acquireTunnel() bool {
	select {
	case s.tunnels <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s *Session) releaseTunnel() { <-s.tunnels }

// handler serves one listener: the shared one (fixed == nil) or a session's.
type handler struct {
	p     *Proxy
	fixed *Session
}

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := h.fixed
	if s == nil {
		var ok bool
		s, ok = h.p.authenticate(r)
		if !ok {
			if h.p.opts.RequireAuth || r.Header.Get("Proxy-Authorization") != "" {
				w.Header().Set("Proxy-Authenticate", `Basic realm="bastion"`)
				http.Error(w, "proxy authentication required", http.StatusProxyAuthRequired)
				return
			}
			s = h.p.anon
		}
	}
	// Tie the request to the session: closing it ends the request.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	r = r.WithContext(ctx)

	if r.Method == http.MethodConnect {
		s.serveConnect(w, r)
		return
	}
	s.serveHTTP(w, r)
}

// serveConnect opens a tunnel (https, wss, and ws through a proxy) to the
// authority in the request line.
func (s *Session) serveConnect(w http.ResponseWriter, r *http.Request) {
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil || host == "" || port == "" {
		http.Error(w, "bad CONNECT authority", http.StatusBadRequest)
		return
	}
	shown := "https://" + r.Host + "/"
	if port == "443" {
		shown = "https://" + host + "/"
	}
	if strings.Contains(host, ":") { // an IPv6 literal; SplitHostPort removed the brackets
		shown = "https://" + r.Host + "/"
	}
	address := r.Host
	if s.p.canon != nil {
		u, err := s.p.canon.Canonicalize("https://" + r.Host + "/")
		if err != nil {
			s.refuse(w, r, shown, err)
			return
		}
		address = hostPort(u, port)
	}
	if !s.acquireTunnel() {
		s.record(shown, fault.RateLimited)
		http.Error(w, "too many tunnels", http.StatusTooManyRequests)
		return
	}
	defer s.releaseTunnel()
	if h, _, _ := net.SplitHostPort(address); s.p.interceptsPrivate(r.Context(), h) {
		client, err := hijackConnect(w)
		if err != nil {
			return
		}
		defer func() { _ = client.Close() }()
		s.servePrivateTLS(client, h, address, shown)
		return
	}

	up, err := s.p.dialer.DialContext(r.Context(), "tcp", address)
	if err != nil {
		s.refuse(w, r, shown, err)
		return
	}
	defer func() { _ = up.Close() }()

	rc := http.NewResponseController(w)
	client, brw, err := rc.Hijack()
	if err != nil {
		http.Error(w, "tunnel unsupported", http.StatusInternalServerError)
		return
	}
	defer func() { _ = client.Close() }()
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// Bytes the client sent after the CONNECT head (a TLS ClientHello sent
	// early) sit in the server's read buffer: forward them first.
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	splice(r.Context(), client, up, s.p.opts.IdleTimeout)
}

// hijackConnect answers a CONNECT with 200 and returns the client's
// connection, bytes it sent early included.
func hijackConnect(w http.ResponseWriter) (net.Conn, error) {
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "tunnel unsupported", http.StatusInternalServerError)
		return nil, err
	}
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		_ = client.Close()
		return nil, err
	}
	return &bufferedConn{Conn: client, r: brw.Reader}, nil
}

// bufferedConn reads what the server had already buffered first.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// serveHTTP forwards an absolute-form plain http request, including a
// websocket upgrade.
func (s *Session) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Scheme == "" || r.URL.Host == "" {
		// Origin-form: someone talks to the proxy as if it were a server.
		http.Error(w, "this is a proxy", http.StatusBadRequest)
		return
	}
	shown := redact(r.URL)
	if !strings.EqualFold(r.URL.Scheme, "http") || !s.p.opts.AllowHTTP {
		s.refuse(w, r, shown, fault.New(fault.URLNotAllowed, "plain http is not allowed"))
		return
	}
	r.URL.User = nil // never turn URL userinfo into an Authorization header
	r.URL.Fragment = ""
	if s.p.canon != nil {
		// Only the origin is the guard's business: path and query pass as
		// sent (a long analytics query must not fail a length rule meant
		// for agent-supplied URLs).
		u, err := s.p.canon.Canonicalize("http://" + r.URL.Host + "/")
		if err != nil {
			s.refuse(w, r, shown, err)
			return
		}
		r.URL.Scheme = u.Scheme
		r.URL.Host = u.Host
		r.Host = u.Host
	}
	if isUpgrade(r) {
		if !s.acquireTunnel() {
			s.record(shown, fault.RateLimited)
			http.Error(w, "too many tunnels", http.StatusTooManyRequests)
			return
		}
		defer s.releaseTunnel()
	}
	if r.ContentLength > s.p.opts.MaxBodyBytes {
		s.refuse(w, r, shown, fault.New(fault.ResponseTooLarge, "request body too large"))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.p.opts.MaxBodyBytes)
	s.rp.ServeHTTP(w, r)
}

func (s *Session) modifyResponse(resp *http.Response) error {
	resp.Header.Del("Alt-Svc") // no hints toward a QUIC path around the proxy
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return nil
	}
	max := s.p.opts.MaxBodyBytes
	if resp.ContentLength > max {
		return fault.New(fault.ResponseTooLarge, "response body too large")
	}
	resp.Body = &cappedBody{rc: resp.Body, left: max}
	return nil
}

// upstreamError answers a failed forward: a typed guard refusal is recorded
// and shown by code; anything else is a bare 502.
func (s *Session) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	s.refuse(w, r, redact(r.URL), err)
}

// refuse answers a request the proxy did not complete. A typed verdict of
// the guard or the proxy is recorded on the session; an unreachable
// upstream (the site's own failure, which Chromium reports itself) is not.
// Only the code reaches the page; the cause, which may name an internal
// address, goes to the log only.
func (s *Session) refuse(w http.ResponseWriter, r *http.Request, shown string, err error) {
	code, status := fault.UpstreamUnavailable, http.StatusBadGateway
	if fe, ok := fault.As(err); ok {
		code = fe.Code
		switch code {
		case fault.UpstreamUnavailable, fault.DNSResolutionFailed, fault.ResponseTooLarge, fault.Unavailable:
		default:
			status = http.StatusForbidden
		}
		if code != fault.UpstreamUnavailable {
			s.record(shown, code)
			s.p.log.Info("egress refused", "url", shown, "code", code, "session", s.id, "cause", err)
		}
	}
	if code == fault.UpstreamUnavailable && r.Context().Err() == nil {
		s.p.log.Debug("upstream failed", "url", shown, "session", s.id, "err", err)
	}
	if r.Method == http.MethodConnect {
		w.WriteHeader(status)
		return
	}
	writeErrorPage(w, status, string(code))
}

func writeErrorPage(w http.ResponseWriter, status int, code string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Connection", "close")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "<!doctype html><title>%s</title><p>bastion's egress proxy did not complete this request (%s).</p>\n", code, code)
}

// redact renders u without userinfo, query or fragment.
func redact(u *url.URL) string {
	c := url.URL{Scheme: strings.ToLower(u.Scheme), Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	if c.Path == "" {
		c.Path = "/"
	}
	return c.String()
}

// hostPort is u's host with port, the explicit one or the CONNECT one.
func hostPort(u *url.URL, port string) string {
	if p := u.Port(); p != "" {
		port = p
	}
	return net.JoinHostPort(u.Hostname(), port)
}

func isUpgrade(r *http.Request) bool {
	for _, v := range r.Header.Values("Connection") {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), "upgrade") {
				return r.Header.Get("Upgrade") != ""
			}
		}
	}
	return false
}

// cappedBody fails a response body that grows past its cap, so a page
// cannot stream without bound through the proxy.
type cappedBody struct {
	rc   io.ReadCloser
	left int64 // bytes still allowed; negative once the cap is exceeded
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, fault.New(fault.ResponseTooLarge, "response body too large")
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1] // one byte past the cap tells "too large" from "exactly full"
	}
	n, err := c.rc.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n + int(c.left), fault.New(fault.ResponseTooLarge, "response body too large")
	}
	return n, err
}

func (c *cappedBody) Close() error { return c.rc.Close() }

// idleConn closes itself after idle with no bytes moved, or when ctx ends.
type idleConn struct {
	net.Conn
	idle  time.Duration
	timer *time.Timer
	stop  func() bool
}

func newIdleConn(ctx context.Context, c net.Conn, idle time.Duration) *idleConn {
	ic := &idleConn{Conn: c, idle: idle}
	ic.timer = time.AfterFunc(idle, func() { _ = c.Close() })
	ic.stop = context.AfterFunc(ctx, func() { _ = c.Close() })
	return ic
}

func (c *idleConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.timer.Reset(c.idle)
	}
	return n, err
}

func (c *idleConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.timer.Reset(c.idle)
	}
	return n, err
}

func (c *idleConn) Close() error {
	c.timer.Stop()
	c.stop()
	return c.Conn.Close()
}

// splice copies both ways between a and b until both directions end, ctx
// ends, or no byte moves for idle.
func splice(ctx context.Context, a, b net.Conn, idle time.Duration) {
	closeBoth := func() { _ = a.Close(); _ = b.Close() }
	timer := time.AfterFunc(idle, closeBoth)
	defer timer.Stop()
	stop := context.AfterFunc(ctx, closeBoth)
	defer stop()

	var wg sync.WaitGroup
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				timer.Reset(idle)
				if _, werr := dst.Write(buf[:n]); werr != nil {
					closeBoth()
					return
				}
			}
			if err != nil {
				// Half-close so the peer sees EOF but can still answer.
				if cw, ok := dst.(interface{ CloseWrite() error }); ok && errors.Is(err, io.EOF) {
					_ = cw.CloseWrite()
				} else {
					closeBoth()
				}
				return
			}
		}
	}
	wg.Add(2)
	go pipe(a, b)
	go pipe(b, a)
	wg.Wait()
}

// ChromiumFlags returns the switches that leave Chromium no way out but the
// proxy at addr (a Proxy or Session address), and no request of its own to
// send there. It is the one list: a launcher passes every entry as given.
//
// The way out:
//   - --proxy-server sends every http, https, ws and wss request to the proxy;
//   - --proxy-bypass-list=<-loopback> removes Chromium's implicit bypass of
//     localhost and 127.0.0.0/8, so loopback URLs reach the guard too;
//   - --disable-quic: QUIC (UDP) would not go through an HTTP proxy;
//   - --force-webrtc-ip-handling-policy and --webrtc-ip-handling-policy
//     (disable_non_proxied_udp): no WebRTC UDP around the proxy;
//   - --dns-prefetch-disable: no lookups of Chromium's own.
//
// No requests of the browser's own, so that only the page's requests reach
// a capture's session and its blocked list (each of these was seen at the
// proxy without its switch):
//   - --disable-background-networking, --disable-component-update,
//     --disable-field-trial-config: component and variations downloads;
//   - --disable-sync, --disable-domain-reliability, --no-pings,
//     --metrics-recording-only, --disable-breakpad: sync, reliability
//     beacons, hyperlink auditing pings, metrics and crash uploads;
//   - --disable-client-side-phishing-detection,
//     --safebrowsing-disable-auto-update: Safe Browsing models and lists;
//   - --disable-extensions, --disable-default-apps,
//     --disable-component-extensions-with-background-pages, --no-first-run,
//     --no-default-browser-check, --no-service-autorun,
//     --disable-search-engine-choice-screen: extension updates and first-run
//     fetches;
//   - --disable-features= AutofillServerCommunication (the form-signature
//     query to content-autofill.googleapis.com that a page with a form
//     triggers in the page's own browser context), the OptimizationHints
//     family (optimizationguide-pa.googleapis.com), NetworkTimeServiceQuerying
//     (clients2.google.com/time), Translate, MediaRouter and
//     DialMediaRouteProvider, CertificateTransparencyComponentUpdater.
//
// Chromium honours only the last --disable-features switch, so the launcher
// names the features it disables for its own reasons in extraDisabled: they
// join this list in the one switch. Launch flags that are not about the
// network (--headless, --no-sandbox, a fresh --user-data-dir, rendering) are
// the launcher's.
//
// One request cannot be switched off: the default (regular) profile asks
// accounts.google.com for its signed-in accounts once its network is up, and
// update.googleapis.com for an on-demand component. A capture runs in a
// browser context of its own whose proxy is its Session, so these go to the
// launch-level proxy given here; with Options.RequireAuth they get 407 on
// the shared listener and reach no session and no site.
func ChromiumFlags(addr string, extraDisabled ...string) []string {
	features := append([]string{
		"AutofillServerCommunication",
		"OptimizationHints", "OptimizationHintsFetching", "OptimizationGuideModelDownloading", "OptimizationTargetPrediction",
		"NetworkTimeServiceQuerying",
		"Translate",
		"MediaRouter", "DialMediaRouteProvider",
		"CertificateTransparencyComponentUpdater",
	}, extraDisabled...)
	return []string{
		"--proxy-server=http://" + addr,
		"--proxy-bypass-list=<-loopback>",
		"--disable-quic",
		"--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
		"--webrtc-ip-handling-policy=disable_non_proxied_udp",
		"--dns-prefetch-disable",
		"--disable-background-networking",
		"--disable-component-update",
		"--disable-field-trial-config",
		"--disable-sync",
		"--disable-domain-reliability",
		"--no-pings",
		"--metrics-recording-only",
		"--disable-breakpad",
		"--disable-client-side-phishing-detection",
		"--safebrowsing-disable-auto-update",
		"--disable-extensions",
		"--disable-default-apps",
		"--disable-component-extensions-with-background-pages",
		"--no-first-run",
		"--no-default-browser-check",
		"--no-service-autorun",
		"--disable-search-engine-choice-screen",
		"--disable-features=" + strings.Join(features, ","),
	}
}
