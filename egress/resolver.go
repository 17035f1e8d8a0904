package egress

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strings"
)

// StaticResolver answers from a fixed map of host name to addresses, for tests
// and `bastion egress check --resolve`. It never asks real DNS: a host not in
// the map is NXDOMAIN, and a host mapped to no addresses has no records. Keys
// are matched lower-case and without a trailing dot.
type StaticResolver map[string][]netip.Addr

// LookupNetIP implements Resolver. network is "ip", "ip4" or "ip6".
func (s StaticResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	addrs, ok := s.lookup(host)
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if network == "ip4" && !a.Unmap().Is4() || network == "ip6" && !a.Is6() {
			continue
		}
		out = append(out, a)
	}
	return out, nil
}

func (s StaticResolver) lookup(host string) ([]netip.Addr, bool) {
	addrs, ok := s[strings.TrimSuffix(strings.ToLower(host), ".")]
	return slices.Clone(addrs), ok
}

// Over returns a Resolver that answers the hosts in s itself and asks next
// only about the others.
func (s StaticResolver) Over(next Resolver) Resolver {
	return layered{static: s, next: next}
}

type layered struct {
	static StaticResolver
	next   Resolver
}

func (l layered) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if _, ok := l.static.lookup(host); ok {
		return l.static.LookupNetIP(ctx, network, host)
	}
	return l.next.LookupNetIP(ctx, network, host)
}
