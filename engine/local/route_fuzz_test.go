package local

import (
	"net/url"
	"testing"

	"github.com/bastion-mcp/bastion/egress"
)

// FuzzRouteStaysOnOrigin: whatever route a caller sends, an accepted one
// joins to a URL on the reviewed origin, never another host or scheme.
func FuzzRouteStaysOnOrigin(f *testing.F) {
	for _, s := range []string{
		"/", "/pricing", "/a?b=c", "//evil.example/", "/\\evil.example", "https://evil.example/",
		"/%2e%2e/%2e%2e/", "/..;/x", "/@evil.example", "/a#frag", "/a\tb", "/ä/ü?ö=1", "/%00", "?x=1",
		"/a/../../b", "/:80", "/%2F%2Fevil.example",
	} {
		f.Add(s)
	}
	guard := egress.NewGuard(egress.Policy{AllowHTTP: true, AllowPrivate: true}, egress.StaticResolver{})
	e := New(nil, guard, Options{})
	base, err := guard.Canonicalize("http://127.0.0.1:8080/app")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, route string) {
		if checkRoute(route) != nil {
			return
		}
		u, err := e.routeURL(base, route)
		if err != nil {
			return
		}
		p, err := url.Parse(u)
		if err != nil {
			t.Fatalf("route %q gave an unparsable URL %q", route, u)
		}
		if p.Scheme != base.Scheme || p.Host != base.Host || p.User != nil {
			t.Fatalf("route %q left the origin: %q", route, u)
		}
	})
}
