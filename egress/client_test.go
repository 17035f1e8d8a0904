package egress

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/fault"
)

// clientBundle is two real HTTP servers on loopback: app on 127.0.0.1, which
// tests reach through an explicit Allow hole under the public-looking name
// app.example, and internal on 127.0.0.2, which stands for an internal
// service (internal.example) that must never be reached.
type clientBundle struct {
	app, internal  *httptest.Server
	appPort        uint16
	internalPort   uint16
	internalHits   atomic.Int32
	appHits        atomic.Int32
	resolver       *countingResolver
	appURL, intURL string
}

func setupClient(t *testing.T) *clientBundle {
	t.Helper()
	b := &clientBundle{}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		b.appHits.Add(1)
		fmt.Fprint(w, "hello")
	})
	redirect := func(path, to string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			b.appHits.Add(1)
			http.Redirect(w, r, strings.NewReplacer("$APP", b.appURL, "$INT", b.intURL, "$PORT", strconv.Itoa(int(b.appPort))).Replace(to), http.StatusFound)
		})
	}
	redirect("/to-internal", "$INT/secret")
	redirect("/to-rebind", "http://rebind.example:$PORT/secret")
	redirect("/to-metadata", "http://169.254.169.254/latest/meta-data/")
	redirect("/to-userinfo", "http://user:pass@app.example:$PORT/")
	redirect("/to-ftp", "ftp://app.example/")
	redirect("/to-app", "$APP/")
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		b.appHits.Add(1)
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		http.Redirect(w, r, fmt.Sprintf("/loop?n=%d", n+1), http.StatusFound)
	})
	mux.HandleFunc("/sized", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Length", strconv.Itoa(n))
		w.Write([]byte(strings.Repeat("x", n)))
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		for i := 0; i < n; i += 1024 {
			w.Write([]byte(strings.Repeat("y", min(1024, n-i))))
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // until the client gives up
	})
	b.app = httptest.NewServer(mux)
	t.Cleanup(b.app.Close)

	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("listen on 127.0.0.2: %v", err)
	}
	b.internal = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.internalHits.Add(1)
		fmt.Fprint(w, "internal secret")
	}))
	b.internal.Listener.Close()
	b.internal.Listener = ln
	b.internal.Start()
	t.Cleanup(b.internal.Close)

	b.appPort = netip.MustParseAddrPort(b.app.Listener.Addr().String()).Port()
	b.internalPort = netip.MustParseAddrPort(ln.Addr().String()).Port()
	b.appURL = fmt.Sprintf("http://app.example:%d", b.appPort)
	b.intURL = fmt.Sprintf("http://internal.example:%d", b.internalPort)
	b.resolver = &countingResolver{Resolver: StaticResolver{
		"app.example":      addrs("127.0.0.1"),
		"internal.example": addrs("127.0.0.2"),
		"rebind.example":   addrs("127.0.0.1", "127.0.0.2"),
	}}
	return b
}

// guard returns a guard whose only hole is 127.0.0.1/32 (the app server),
// or, with openInternal, all of loopback: the control case that proves the
// internal server is reachable when the policy lets it be.
func (b *clientBundle) guard(openInternal bool) *Guard {
	hole := netip.MustParsePrefix("127.0.0.1/32")
	if openInternal {
		hole = netip.MustParsePrefix("127.0.0.0/8")
	}
	return NewGuard(Policy{AllowHTTP: true, Ports: []uint16{b.appPort, b.internalPort}, Allow: []netip.Prefix{hole}}, b.resolver)
}

func get(ctx context.Context, c *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

func TestHTTPClientRedirects(t *testing.T) {
	t.Parallel()
	b := setupClient(t)
	tests := []struct {
		name string
		path string
		code fault.Code // "" means the request succeeds
		body string
	}{
		{"Plain", "/", "", "hello"},
		{"RedirectToAllowed", "/to-app", "", "hello"},
		{"RedirectToInternal", "/to-internal", fault.DNSTargetProhibited, ""},
		{"RedirectToRebinding", "/to-rebind", fault.DNSTargetProhibited, ""},
		{"RedirectToMetadata", "/to-metadata", fault.URLNotAllowed, ""}, // port 80 is not in the policy
		{"RedirectToUserinfo", "/to-userinfo", fault.URLNotAllowed, ""},
		{"RedirectToFTP", "/to-ftp", fault.URLNotAllowed, ""},
		{"TooManyRedirects", "/loop", fault.RedirectNotAllowed, ""},
	}
	c := b.guard(false).HTTPClient(ClientOptions{})
	for _, tt := range tests {
		body, err := get(context.Background(), c, b.appURL+tt.path)
		if tt.code == "" {
			if err != nil || body != tt.body {
				t.Errorf("%s: GET = %q, %v; want %q", tt.name, body, err, tt.body)
			}
			continue
		}
		if !fault.Is(err, tt.code) {
			t.Errorf("%s: GET error = %v, want %s", tt.name, err, tt.code)
		}
		if err != nil && strings.Contains(err.Error(), "127.0.0.2") {
			t.Errorf("%s: error %q names the internal address", tt.name, err)
		}
	}
	if n := b.internalHits.Load(); n != 0 {
		t.Fatalf("the internal server was reached %d times", n)
	}

	// Control: with loopback opened, the same redirect does reach it, so the
	// zero above is the guard's doing.
	open := b.guard(true).HTTPClient(ClientOptions{})
	if body, err := get(context.Background(), open, b.appURL+"/to-internal"); err != nil || body != "internal secret" {
		t.Fatalf("control GET = %q, %v", body, err)
	}
	if n := b.internalHits.Load(); n != 1 {
		t.Fatalf("control reached the internal server %d times, want 1", n)
	}
}

func TestHTTPClientRedirectLimit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ max, wantHits int32 }{{0, 6}, {2, 3}, {9, 6}, {-1, 1}} {
		b := setupClient(t)
		c := b.guard(false).HTTPClient(ClientOptions{MaxRedirects: int(tt.max)})
		_, err := get(context.Background(), c, b.appURL+"/loop")
		if !fault.Is(err, fault.RedirectNotAllowed) {
			t.Errorf("MaxRedirects %d: %v, want REDIRECT_NOT_ALLOWED", tt.max, err)
		}
		if n := b.appHits.Load(); n != tt.wantHits {
			t.Errorf("MaxRedirects %d: %d requests, want %d", tt.max, n, tt.wantHits)
		}
	}
}

func TestHTTPClientBodyCap(t *testing.T) {
	t.Parallel()
	b := setupClient(t)
	c := b.guard(false).HTTPClient(ClientOptions{MaxBytes: 4096})
	tests := []struct {
		path string
		ok   bool
	}{
		{"/sized?n=4096", true},
		{"/sized?n=4097", false},
		{"/stream?n=4096", true},
		{"/stream?n=4097", false},
		{"/stream?n=1000000", false},
	}
	for _, tt := range tests {
		body, err := get(context.Background(), c, b.appURL+tt.path)
		if tt.ok {
			if err != nil || len(body) != 4096 {
				t.Errorf("GET %s = %d bytes, %v; want 4096", tt.path, len(body), err)
			}
			continue
		}
		if !fault.Is(err, fault.ResponseTooLarge) {
			t.Errorf("GET %s = %d bytes, %v; want RESPONSE_TOO_LARGE", tt.path, len(body), err)
		}
		if len(body) > 4096 {
			t.Errorf("GET %s read %d bytes past the cap", tt.path, len(body))
		}
	}
	// The default cap is 1 MiB.
	d := b.guard(false).HTTPClient(ClientOptions{})
	if _, err := get(context.Background(), d, b.appURL+"/stream?n=1048577"); !fault.Is(err, fault.ResponseTooLarge) {
		t.Errorf("default cap: %v, want RESPONSE_TOO_LARGE", err)
	}
}

func TestHTTPClientTimeout(t *testing.T) {
	t.Parallel()
	b := setupClient(t)
	c := b.guard(false).HTTPClient(ClientOptions{Timeout: 200 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := get(context.Background(), c, b.appURL+"/slow")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a response that never comes did not time out")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the client's time cap did not end the request")
	}
}

func TestHTTPClientResolvesOnce(t *testing.T) {
	t.Parallel()
	b := setupClient(t)
	c := b.guard(false).HTTPClient(ClientOptions{})
	if _, err := get(context.Background(), c, b.appURL+"/"); err != nil {
		t.Fatal(err)
	}
	if n := b.resolver.n.Load(); n != 1 {
		t.Errorf("%d lookups for one request, want 1 (Check pins, the dial reuses)", n)
	}
}

// TestHTTPClientIgnoresProxyEnv sets HTTP_PROXY to a real proxy that counts
// what it is asked; the guarded client must go direct. Not parallel: Setenv.
func TestHTTPClientIgnoresProxyEnv(t *testing.T) {
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		fmt.Fprint(w, "from the proxy")
	}))
	defer proxy.Close()
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("HTTPS_PROXY", proxy.URL)
	t.Setenv("NO_PROXY", "")
	b := setupClient(t)
	body, err := get(context.Background(), b.guard(false).HTTPClient(ClientOptions{}), b.appURL+"/")
	if err != nil || body != "hello" || proxied.Load() != 0 {
		t.Fatalf("GET = %q, %v; proxy asked %d times", body, err, proxied.Load())
	}
	// Control: a stock client does use the proxy here.
	if body, _ := get(context.Background(), &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}, b.appURL+"/"); body != "from the proxy" {
		t.Fatalf("control: the environment proxy was not in effect (%q)", body)
	}
}
