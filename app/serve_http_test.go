package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/principal"
)

// TestGuardBothPaths sends requests over a real loopback listener to the
// composed handler and checks /mcp and /api/v1 give the one Guard's answer:
// the same refusal, body and count for forwarding headers, Host and Origin,
// and the same Host parsing (bracketed IPv6 by value, bare IPv6 refused,
// names by case and trailing dot).
func TestGuardBothPaths(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, err := Open(ctx, Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Close(context.WithoutCancel(ctx)); err != nil {
			t.Error(err)
		}
	})
	guardBodies := map[string]string{
		"forwarded_rejected": "forwarded requests are not accepted",
		"host_not_allowed":   "host not allowed",
		"origin_not_allowed": "origin not allowed",
	}
	for _, tc := range []struct {
		name    string
		allowed []string
		self    string            // an allowed Host, for the header checks
		cases   map[string]string // Host → "" (passes) or the refusal reason
	}{
		{"default", nil, "127.0.0.1:PORT", map[string]string{
			"127.0.0.1:PORT": "", "LOCALHOST.:PORT": "", "[::1]:PORT": "", "[0:0::1]:PORT": "",
			"::1": "host_not_allowed", "evil.example:PORT": "host_not_allowed", "localhost:0": "host_not_allowed",
		}},
		// The copies disagreed here: a bare "::1" entry let REST take a bare
		// ::1 Host and refuse [::1]:port, the edge the other way round.
		{"bare IPv6 entry", []string{"::1", "Bastion.Example:8443"}, "[::1]:PORT", map[string]string{
			"[::1]:PORT": "", "::1": "host_not_allowed", "bastion.example.:8443": "", "bastion.example": "host_not_allowed",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := a.NewHTTP(ServeConfig{UnsafeNoAuth: true, DevPrincipal: principal.Local(), AllowedHosts: tc.allowed})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h.Handler)
			defer srv.Close()
			port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
			want := map[string]int{}
			check := func(host string, hdr map[string]string, reason string) {
				for _, path := range []string{"/mcp", "/api/v1/targets"} {
					status, body := guardDo(t, srv, path, strings.ReplaceAll(host, "PORT", port), hdr)
					if reason == "" && (status < 200 || status > 299) {
						t.Errorf("%s Host %q %v: %d %q, want it served", path, host, hdr, status, body)
					}
					if reason != "" && (status != http.StatusForbidden || !strings.Contains(body, guardBodies[reason])) {
						t.Errorf("%s Host %q %v: %d %q, want the %s refusal", path, host, hdr, status, body, reason)
					}
				}
				if reason != "" {
					want[reason] += 2
				}
			}
			for host, reason := range tc.cases {
				check(host, nil, reason)
			}
			self := tc.self
			check(self, map[string]string{"X-Forwarded-For": "203.0.113.9"}, "forwarded_rejected")
			check(self, map[string]string{"Origin": "http://" + strings.ReplaceAll(self, "PORT", port)}, "")
			check(self, map[string]string{"Origin": "http://evil.example"}, "origin_not_allowed")
			metrics := scrape(t, h.Admin)
			for reason, n := range want {
				line := fmt.Sprintf("bastion_edge_rejections_total{reason=%q} %d\n", reason, n)
				if !strings.Contains(metrics, line) {
					t.Errorf("metrics lack %q", strings.TrimSpace(line))
				}
			}
		})
	}
}

func guardDo(t *testing.T, srv *httptest.Server, path, host string, hdr map[string]string) (int, string) {
	t.Helper()
	method, body := http.MethodGet, io.Reader(nil)
	if path == "/mcp" {
		method, body = http.MethodPost, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	}
	r, err := http.NewRequest(method, srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	r.Host = host
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(r)
	if err != nil {
		t.Fatalf("%s Host %q: %v", path, host, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

func scrape(t *testing.T, admin http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(admin)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return string(raw)
}
