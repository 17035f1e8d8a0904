package edge

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// guarded serves b's edge at /mcp and, beside it, another route behind the
// same edge's Guard, as app composes REST: both answer through one listener.
func guarded(t *testing.T, b *bundle) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/api/", b.e.Guard(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "passed")
	})))
	mux.Handle("/", b.e)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// guardStatus sends rq to path on srv and returns the status and whether
// the guard refused it (a 403 with one of its bodies).
func guardStatus(t *testing.T, srv *httptest.Server, path string, rq req) (int, string) {
	t.Helper()
	rq.path = path
	if path != "/mcp" {
		rq.method, rq.body = http.MethodGet, ""
	}
	resp, err := srv.Client().Do(rq.build(t, srv.URL))
	if err != nil {
		t.Fatalf("%s Host %q: %v", path, rq.host, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(raw))
}

// TestGuardHosts pins the Host rule on both guarded paths over a real
// listener: names by case and trailing dot, IP addresses by value, ports
// exact, IPv6 bracketed, and nothing malformed normalised into a match.
func TestGuardHosts(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *Options) {
		o.AllowedHosts = []string{"Example.COM", " api.example.com:8443 ", "::1", "[2001:db8::1]:9000", "127.0.0.1"}
	})
	srv := guarded(t, b)
	cases := map[string]bool{
		"example.com": true, "EXAMPLE.com:1234": true, "example.com.:80": true, "example.com.": true,
		"example.com..": false, ".example.com": false, "evil.example.com": false, "example.com.evil": false,
		"example.com:0": false, "example.com:65536": false, "example.com:": false, "example.com:abc": false,
		"example.com:80:80": false, "example.com:+80": false, "exa_mple.com": false,
		"api.example.com:8443": true, "API.example.com.:08443": true, "api.example.com": false, "api.example.com:443": false,
		"[::1]:8080": true, "[::1]": true, "[0:0:0:0:0:0:0:1]:80": true, "[::1]:": false,
		"::1": false, "::1:80": false, "[::1": false, "[::1]x": false, "[::1]8080": false, "[fe80::1%25eth0]": false,
		"[2001:db8::1]:9000": true, "[2001:DB8:0::1]:9000": true, "[2001:db8::1]:9001": false, "[2001:db8::1]": false,
		"127.0.0.1:1": true, "127.0.0.1": true, "[::ffff:127.0.0.1]:1": true,
		"127.000.000.001": false, "127.1": false, "[127.0.0.1]": false, "[localhost]:80": false, "localhost": false,
	}
	for host, ok := range cases {
		rq := req{host: host, headers: baseHeaders("t1/alice"), body: pingBody}
		for _, path := range []string{"/mcp", "/api/v1/x"} {
			status, body := guardStatus(t, srv, path, rq)
			refused := status == http.StatusForbidden && body == `{"error":"forbidden","error_description":"host not allowed"}`
			if refused == ok {
				t.Errorf("%s Host %q: %d %q, want allowed=%t", path, host, status, body, ok)
			}
		}
	}
	// Each refusal was counted once per path.
	refused := 0
	for _, ok := range cases {
		if !ok {
			refused++
		}
	}
	if n := b.rejections(t, "host_not_allowed"); n != float64(2*refused) {
		t.Errorf("host_not_allowed = %v, want %d", n, 2*refused)
	}
}

// TestGuardDefaultHosts: with no allowlist only loopback names pass.
func TestGuardDefaultHosts(t *testing.T) {
	t.Parallel()
	srv := guarded(t, setup(t, nil))
	for host, ok := range map[string]bool{
		"localhost:1": true, "LOCALHOST.": true, "[::1]:5": true, "127.0.0.1": true, "[::ffff:7f00:1]:80": true,
		"example.com": false, "::1": false, "127.0.0.2": false, "localhost.localdomain": false,
	} {
		for _, path := range []string{"/mcp", "/api/v1/x"} {
			status, _ := guardStatus(t, srv, path, req{host: host, headers: baseHeaders("t1/alice"), body: pingBody})
			if (status != http.StatusForbidden) != ok {
				t.Errorf("%s Host %q: %d, want allowed=%t", path, host, status, ok)
			}
		}
	}
}

// TestGuardOrigin pins same-origin (no list) by parsed host and port, and
// the forwarding-header refusal, on both guarded paths.
func TestGuardOrigin(t *testing.T) {
	t.Parallel()
	srv := guarded(t, setup(t, func(o *Options) { o.AllowedHosts = []string{"localhost", "::1"} }))
	cases := []struct {
		host    string
		headers map[string]string
		reason  string // "" when allowed
	}{
		{"localhost:8080", nil, ""},
		{"localhost:8080", map[string]string{"Origin": "http://localhost:8080"}, ""},
		{"localhost:8080", map[string]string{"Origin": "https://LOCALHOST.:8080"}, ""},
		{"[::1]:8080", map[string]string{"Origin": "http://[0::1]:8080"}, ""},
		{"localhost:8080", map[string]string{"Origin": "http://localhost:8081"}, "origin"},
		{"localhost:8080", map[string]string{"Origin": "http://localhost"}, "origin"},
		{"localhost:8080", map[string]string{"Origin": "null"}, "origin"},
		{"localhost:8080", map[string]string{"Origin": ""}, "origin"},
		{"localhost:8080", map[string]string{"Origin": "http://localhost:8080/"}, "origin"},
		{"localhost:8080", map[string]string{"Origin": "http://u@localhost:8080"}, "origin"},
		{"localhost:8080", map[string]string{"Origin": "ftp://localhost:8080"}, "origin"},
		{"localhost:8080", map[string]string{"Origin": "http://evil.example:8080"}, "origin"},
		{"localhost:8080", map[string]string{"X-Forwarded-For": "203.0.113.9"}, "forwarded"},
		{"localhost:8080", map[string]string{"Forwarded": "for=203.0.113.9"}, "forwarded"},
		{"localhost:8080", map[string]string{"x-forwarded-host": "evil.example"}, "forwarded"},
	}
	bodies := map[string]string{
		"origin":    `{"error":"forbidden","error_description":"origin not allowed"}`,
		"forwarded": `{"error":"forbidden","error_description":"forwarded requests are not accepted"}`,
	}
	for _, c := range cases {
		h := baseHeaders("t1/alice")
		for k, v := range c.headers {
			h[k] = v
		}
		for _, path := range []string{"/mcp", "/api/v1/x"} {
			status, body := guardStatus(t, srv, path, req{host: c.host, headers: h, body: pingBody})
			if c.reason == "" && status == http.StatusForbidden {
				t.Errorf("%s %v: refused %q", path, c.headers, body)
			}
			if c.reason != "" && (status != http.StatusForbidden || body != bodies[c.reason]) {
				t.Errorf("%s %v: %d %q, want %s refusal", path, c.headers, status, body, c.reason)
			}
		}
	}
	// Two Origin headers are one too many, whatever they say.
	r := req{host: "localhost:8080", headers: baseHeaders("t1/alice"), body: pingBody}.build(t, srv.URL)
	r.Header["Origin"] = []string{"http://localhost:8080", "http://evil.example"}
	resp, err := srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("two Origin headers: %d", resp.StatusCode)
	}
}

// TestGuardTrustedProxy: a declared proxy may set forwarding headers.
func TestGuardTrustedProxy(t *testing.T) {
	t.Parallel()
	srv := guarded(t, setup(t, func(o *Options) { o.TrustedProxy = true }))
	h := baseHeaders("t1/alice")
	h["X-Forwarded-For"] = "203.0.113.9"
	for _, path := range []string{"/mcp", "/api/v1/x"} {
		if status, body := guardStatus(t, srv, path, req{headers: h, body: pingBody}); status != http.StatusOK {
			t.Errorf("%s behind a trusted proxy: %d %q", path, status, body)
		}
	}
}

// TestAllowedHostsRefused: New refuses an entry that can match no Host.
func TestAllowedHostsRefused(t *testing.T) {
	t.Parallel()
	for _, entry := range []string{"*.example.com", "example.com:0", "a b", "[::1", "fe80::1%eth0", "example.com:http", ""} {
		_, err := New(Options{Enabled: true, BindAddr: "127.0.0.1:0", Authenticate: testAuth, AllowedHosts: []string{entry}}, newTestServer)
		if err == nil {
			t.Errorf("AllowedHosts %q accepted", entry)
		}
	}
}
