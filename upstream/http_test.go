package upstream_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/internal/testmcp"
	"github.com/bastion-mcp/bastion/upstream"
)

// headerLog records the headers of every request an HTTP upstream receives.
type headerLog struct {
	mu  sync.Mutex
	all []http.Header
}

func (l *headerLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.all = append(l.all, r.Header.Clone())
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (l *headerLog) snapshot() []http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]http.Header(nil), l.all...)
}

// bearer is a header value "Bearer " + the value of an env: reference.
type bearer struct{ ref envRef }

func (b bearer) Resolve(getenv func(string) (string, bool)) (string, error) {
	v, err := b.ref.Resolve(getenv)
	return "Bearer " + v, err
}

// guardFor returns an egress guard that reaches srv's loopback port as
// upstream.test, and nothing else private.
func guardFor(t *testing.T, srv *httptest.Server, open bool) *egress.Guard {
	t.Helper()
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	p := egress.Policy{AllowHTTP: true, Ports: []uint16{uint16(port)}}
	if open {
		p.Allow = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	}
	return egress.NewGuard(p, egress.StaticResolver{"upstream.test": {netip.MustParseAddr("127.0.0.1")}})
}

func upstreamURL(srv *httptest.Server, path string) string {
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return "http://upstream.test:" + port + path
}

// clientHeaders adds a downstream client's credentials to its requests.
type clientHeaders struct{ base http.RoundTripper }

func (c clientHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer downstream-secret")
	r.Header.Set("X-Downstream", "downstream-marker")
	r.Header.Set("Cookie", "session=downstream-cookie")
	return c.base.RoundTrip(r)
}

func TestHTTPUpstreams(t *testing.T) {
	t.Parallel()
	needBuild(t)
	server := testmcp.New(testmcp.Options{})
	getServer := func(*http.Request) *mcp.Server { return server }
	for _, tc := range []struct {
		kind    upstream.Kind
		handler http.Handler
		path    string
	}{
		// The upstream plays a remote server reached by name (upstream.test)
		// on a loopback listener, so its DNS-rebinding check is off.
		{upstream.HTTP, mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{DisableLocalhostProtection: true}), "/mcp"},
		{upstream.SSE, mcp.NewSSEHandler(getServer, &mcp.SSEOptions{DisableLocalhostProtection: true}), "/sse"},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			t.Parallel()
			var log headerLog
			up := httptest.NewServer(log.wrap(tc.handler))
			t.Cleanup(up.Close)
			spec := upstream.Spec{
				Name: "remote-" + string(tc.kind), Kind: tc.kind, URL: upstreamURL(up, tc.path),
				Headers: map[string]upstream.Value{"Authorization": bearer{envRef(tokenVar)}},
			}
			c := open(t, spec, upstream.Deps{Guard: guardFor(t, up, true)})

			// The downstream client reaches the front over real HTTP with its
			// own token; the front calls the upstream for it.
			fr := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return front(c) }, nil))
			t.Cleanup(fr.Close)
			cl := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "0"}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{
				Endpoint: fr.URL, HTTPClient: &http.Client{Transport: clientHeaders{http.DefaultTransport}},
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "relay", Arguments: RelayIn{Tool: "echo", Args: map[string]any{"text": "over http"}}})
			if err != nil || res.IsError || resultText(res) != "over http" {
				t.Fatalf("relay echo = %q %+v, %v", resultText(res), res, err)
			}
			if got := mustCall(t, c, "echo", map[string]any{"text": "direct"}); got != "direct" {
				t.Errorf("echo = %q", got)
			}

			hs := log.snapshot()
			if len(hs) == 0 {
				t.Fatal("the upstream saw no requests")
			}
			for i, h := range hs {
				if got := h.Get("Authorization"); got != "Bearer configured-token" {
					t.Errorf("request %d: Authorization = %q, want the configured credential", i, got)
				}
				for k, vs := range h {
					for _, v := range vs {
						if strings.Contains(v, "downstream") {
							t.Errorf("request %d: header %s = %q leaks the downstream client's", i, k, v)
						}
					}
				}
			}
		})
	}
}

func TestHTTPUpstreamDialsThroughGuard(t *testing.T) {
	t.Parallel()
	var log headerLog
	up := httptest.NewServer(log.wrap(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testmcp.New(testmcp.Options{}) }, &mcp.StreamableHTTPOptions{DisableLocalhostProtection: true})))
	t.Cleanup(up.Close)
	spec := upstream.Spec{Name: "guarded", Kind: upstream.HTTP, URL: upstreamURL(up, "/mcp")}
	// Without the Allow hole, loopback is a prohibited target.
	c, err := upstream.New(context.Background(), spec, upstream.Deps{Guard: guardFor(t, up, false), Backoff: upstream.Backoff{Min: 20 * time.Millisecond, Max: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := c.Session(ctx); err == nil {
		t.Fatal("connected to a loopback upstream the guard prohibits")
	}
	if h := c.Health(); !strings.Contains(h.LastError, string("DNS_TARGET_PROHIBITED")) {
		t.Errorf("LastError = %q, want the guard's refusal", h.LastError)
	}
	if n := len(log.snapshot()); n != 0 {
		t.Errorf("the upstream received %d requests past the guard", n)
	}
	if _, err := upstream.New(context.Background(), spec, upstream.Deps{}); err == nil {
		t.Error("an HTTP upstream without a guard was accepted")
	}
}

// TestHTTPUpstreamReusesConnections: every call ends its own context as
// soon as it has its answer (the gateway's per-call deadline), and that
// must not cut the response stream the transport is still draining, or the
// connection is closed and the next call dials (and the guard checks) a new
// one. Sequential calls need the session's stream and one connection for
// the calls; a few more appear when a call starts before the previous
// stream is drained, and then stay pooled.
func TestHTTPUpstreamReusesConnections(t *testing.T) {
	t.Parallel()
	up := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testmcp.New(testmcp.Options{}) },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true}))
	var dialed atomic.Int64
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialed.Add(1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	c := open(t, upstream.Spec{Name: "pooled", Kind: upstream.HTTP, URL: upstreamURL(up, "/mcp")}, upstream.Deps{Guard: guardFor(t, up, true)})
	before := dialed.Load()
	const calls, most = 200, 4
	for i := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := call(ctx, t, c, "echo", map[string]any{"text": strconv.Itoa(i)})
		cancel()
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if n := dialed.Load() - before; n > most {
		t.Errorf("%d calls opened %d connections to the upstream, want at most %d", calls, n, most)
	}
}
