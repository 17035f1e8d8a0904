package edge

import (
	"bytes"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// FuzzRoute checks the wire choice is total and deterministic, never
// modifies the body, and honours the header rules whatever the body says.
func FuzzRoute(f *testing.F) {
	seeds := []struct {
		method, session, version, body string
	}{
		{"POST", "", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`},
		{"POST", "", "2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`},
		{"POST", "", "", `{"jsonrpc":"2.0","id":1,"method":"server/discover"}`},
		{"POST", "", "", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}]`},
		{"POST", "abc", "2026-07-28", `{"method":"server/discover"}`},
		{"GET", "", "", ""},
		{"DELETE", "s1", "2025-11-25", ""},
		{"POST", "", "2025-06-18", `{"method":"tools/call","params":{"_meta":null}}`},
		{"POST", "", "", `{"method":"tools/call","params":[]}`},
		{"POST", "", "", "\xff\xfe{"},
		{"POST", "", "9999-99-99", `[`},
		{"POST", "", "", `   [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`},
		{"POST", "", "", `{"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":1}},"method":"server/discover"}`},
	}
	for _, s := range seeds {
		f.Add(s.method, s.session, s.version, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, method, session, version string, body []byte) {
		h := http.Header{}
		if session != "" {
			h.Set(sessionHeader, session)
		}
		if version != "" {
			h.Set(protocolVersionHeader, version)
		}
		orig := bytes.Clone(body)
		w := Route(method, h, body)
		if w != WireStateful && w != WireStateless {
			t.Fatalf("Route = %v", w)
		}
		if !bytes.Equal(body, orig) {
			t.Fatal("Route modified the body")
		}
		if again := Route(method, h, body); again != w {
			t.Fatalf("Route not deterministic: %v then %v", w, again)
		}
		// Permit sees the methods of the same body: reading them must not
		// change it, and a stateless-only method is among them.
		methods := Methods(body)
		if !bytes.Equal(body, orig) {
			t.Fatal("Methods modified the body")
		}
		for _, m := range methods {
			if m == "" {
				t.Fatal("Methods returned an empty method")
			}
			if statelessMethods[m] && method == http.MethodPost && h.Get(sessionHeader) == "" && w != WireStateless {
				t.Fatalf("body with %s routed to %v", m, w)
			}
		}
		if h.Get(sessionHeader) != "" && w != WireStateful {
			t.Fatalf("session id routed to %v", w)
		}
		if h.Get(sessionHeader) == "" && h.Get(protocolVersionHeader) >= firstStatelessVersion && w != WireStateless {
			t.Fatalf("version %q routed to %v", version, w)
		}
		if method != http.MethodPost && h.Get(protocolVersionHeader) < firstStatelessVersion && w != WireStateful {
			t.Fatalf("%s without a new version routed to %v", method, w)
		}
	})
}

func TestRoute(t *testing.T) {
	t.Parallel()
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	cases := []struct {
		name   string
		method string
		h      http.Header
		body   string
		want   Wire
	}{
		{"Initialize", "POST", hdr(), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, WireStateful},
		{"SessionWins", "POST", hdr("Mcp-Session-Id", "s", "Mcp-Protocol-Version", "2026-07-28"), `{"method":"server/discover"}`, WireStateful},
		{"NewVersionHeader", "POST", hdr("Mcp-Protocol-Version", "2026-07-28"), `{"method":"initialize"}`, WireStateless},
		{"OldVersionHeader", "POST", hdr("Mcp-Protocol-Version", "2025-11-25"), `{"method":"tools/list"}`, WireStateful},
		{"MetaVersionNoHeader", "POST", hdr(), `{"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, WireStateless},
		{"Discover", "POST", hdr(), `{"jsonrpc":"2.0","id":1,"method":"server/discover"}`, WireStateless},
		{"BatchWithMeta", "POST", hdr(), `[{"method":"ping"},{"method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}]`, WireStateless},
		{"GetNoSession", "GET", hdr(), "", WireStateful},
		{"GetNewVersion", "GET", hdr("Mcp-Protocol-Version", "2026-07-28"), "", WireStateless},
		{"Garbage", "POST", hdr(), `{{{`, WireStateful},
	}
	for _, c := range cases {
		if got := Route(c.method, c.h, []byte(c.body)); got != c.want {
			t.Errorf("%s: Route = %v, want %v", c.name, got, c.want)
		}
	}
}

// FuzzHost checks Host parsing is total, canonical (the canonical form
// parses back to itself), case-insensitive, never accepts a bare IPv6
// Host, and agrees with net/url on which host and port a value names.
func FuzzHost(f *testing.F) {
	for _, s := range []string{
		"example.com", "EXAMPLE.com.:0080", "[::1]:8080", "[0:0::1]", "::1", "[::ffff:127.0.0.1]:1", "127.0.0.1:65535",
		"[fe80::1%25eth0]:80", "[::1", "[localhost]:80", "a..b", "xn--bcher-kva.example", "\u212aube.example", "h:",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, ok := parseHost(s, false)
		if !ok {
			if h != (hostPort{}) {
				t.Fatalf("refused %q but returned %+v", s, h)
			}
			return
		}
		if !strings.HasPrefix(s, "[") && strings.Count(s, ":") > 1 {
			t.Fatalf("bare IPv6 Host %q accepted", s)
		}
		canon := h.name
		if strings.Contains(canon, ":") {
			canon = "[" + canon + "]"
		}
		if h.port != "" {
			canon += ":" + h.port
		}
		if again, ok := parseHost(canon, false); !ok || again != h {
			t.Fatalf("%q parsed to %+v, whose form %q parses to %+v, %t", s, h, canon, again, ok)
		}
		if up, ok := parseHost(strings.ToUpper(s), false); !ok || up != h {
			t.Fatalf("%q and its upper case parse differently: %+v, %+v", s, h, up)
		}
		u, err := url.Parse("http://" + s + "/")
		if err != nil {
			t.Fatalf("%q accepted but net/url refuses it: %v", s, err)
		}
		name, ok := parseHost(u.Hostname(), true)
		port, _ := parsePort(":" + u.Port())
		if !ok || name.name != h.name || port != h.port {
			t.Fatalf("%q: parsed %+v, net/url names host %q port %q", s, h, u.Hostname(), u.Port())
		}
		if a, err := netip.ParseAddr(h.name); err == nil && (a.Zone() != "" || a.Is4In6()) {
			t.Fatalf("%q: address %v kept a zone or its IPv6 mapping", s, a)
		}
	})
}
