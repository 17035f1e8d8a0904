// Package egress is bastion's one SSRF boundary: every outbound connection of
// the project (the browser's requests, HTTP upstreams, JWKS fetches, ownership
// proofs) is canonicalized, resolved and classified here, and dialed only to
// the address that was classified.
//
// Invariants:
//   - Classify is pure, allocation-free and fails closed (the zero Class is
//     Invalid); only Public, explicit Allow holes and, for a local operator,
//     the private classes are ever dialed.
//   - A host is resolved once; if any answer is prohibited the whole answer
//     set is rejected (DNS rebinding), and only an already-classified address
//     is dialed, re-checked at connect time in net.Dialer.Control.
//   - bastion's own listeners (ExcludeListener) are never a target and never
//     dialed, whatever the policy.
//   - HTTP_PROXY and friends are never consulted.
//   - Failures are *fault.Error values in the peer's vocabulary whose messages
//     never name the internal address a host resolved to; the class is logged.
package egress

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/bastion-mcp/bastion/fault"
)

// Policy is the egress policy. The zero Policy allows https on port 443 to
// public addresses only.
type Policy struct {
	// AllowHTTP allows plain http; otherwise only https is allowed.
	AllowHTTP bool
	// Ports are the allowed ports. Empty means 443, plus 80 when AllowHTTP.
	Ports []uint16
	// AllowPrivate lets a local operator review a development server:
	// loopback, RFC 1918, CGNAT, ULA and link-local addresses are allowed, over
	// http or https and on any port, and localhost resolves to loopback.
	// Metadata endpoints, unspecified, multicast and reserved addresses stay
	// denied. Public addresses still get the strict scheme and port policy.
	AllowPrivate bool
	// Deny are operator deny CIDRs; they beat everything else.
	Deny []netip.Prefix
	// Allow are explicit holes: an address inside one is allowed whatever
	// its class, except that Deny and the metadata list still win.
	Allow []netip.Prefix
	// Logger receives one record per refusal with the host and the class
	// (never returned to a caller). Nil discards.
	Logger *slog.Logger
	// UnsafeDialOverride is for the offline demo and tests only: a connection
	// to an already-classified, allowed address A (key) is opened to local
	// address B (value) instead. Every check (resolution, classification,
	// scheme and port policy) still runs on A; only the final connect goes to
	// B, and the connect-time check then requires exactly B. Never set it in
	// a production composition.
	UnsafeDialOverride map[netip.AddrPort]netip.AddrPort
	// Refused, if non-nil, is told the code of every refusal the guard
	// makes (URL_NOT_ALLOWED, DNS_TARGET_PROHIBITED) once it resolves and
	// classifies a URL's host, and at dial time (every request of the
	// browser), for the operator's bastion_egress_blocks_total. A URL
	// refused for its spelling before any lookup (Canonicalize) is the
	// caller's input, not counted; nor is a resolver outage or an
	// unreachable host. It must be cheap and safe for concurrent use.
	Refused func(code fault.Code)
}

// Resolver looks up the addresses of a host. *net.Resolver satisfies it; tests
// and `bastion egress check --resolve` use a StaticResolver.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// HostVerifier reports whether host is on the caller's verified-host list
// (exact match). The targets package implements it per tenant.
type HostVerifier interface {
	IsVerified(ctx context.Context, host string) (bool, error)
}

// Target is a URL that passed a policy, with the addresses it may be dialed at.
type Target struct {
	URL   *url.URL
	Host  string       // canonical host, without port or brackets
	Addrs []netip.Addr // classified, allowed answers; Addrs[0] is the pinned address
}

// Guard applies a Policy. It is safe for concurrent use; its fields are set
// once by NewGuard and never change, except the set of bastion's own
// listeners (ExcludeListener), which has its own lock.
type Guard struct {
	policy   Policy
	resolver Resolver
	log      *slog.Logger
	dialer   net.Dialer
	self     *self // bastion's own listeners; shared with WithPrivate's guard
}

// NewGuard returns a Guard for p that looks hosts up with r. A nil r means the
// system resolver (net.DefaultResolver); answers from /etc/hosts are classified
// like any other. p's slices are copied.
func NewGuard(p Policy, r Resolver) *Guard {
	if r == nil {
		r = net.DefaultResolver
	}
	p.Ports = slices.Clone(p.Ports)
	p.Deny = slices.Clone(p.Deny)
	p.Allow = slices.Clone(p.Allow)
	p.UnsafeDialOverride = maps.Clone(p.UnsafeDialOverride)
	log := p.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &Guard{policy: p, resolver: r, log: log, self: &self{exact: map[netip.AddrPort]int{}, port: map[uint16]int{}}}
	g.dialer = net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return g
}

// WithPrivate returns a Guard like g that also allows private and loopback
// addresses (Policy.AllowPrivate), for one upstream an operator runs on
// their own network. g is unchanged; its deny lists and metadata denial
// carry over.
func (g *Guard) WithPrivate() *Guard {
	p := g.policy
	p.AllowPrivate = true
	w := NewGuard(p, g.resolver)
	w.self = g.self
	return w
}

// allowed reports a's class (Denied for an operator deny CIDR) and whether the
// policy lets it be dialed, and whether it was let in only by AllowPrivate
// (in which case the strict scheme and port policy does not apply).
func (g *Guard) allowed(a netip.Addr) (c Class, ok, relaxed bool) {
	a = a.Unmap().WithZone("")
	c = Classify(a)
	if g.denied(a) {
		return Denied, false, false
	}
	if c == Metadata || c == Invalid {
		return c, false, false
	}
	for _, p := range g.policy.Allow {
		if p.Contains(a) {
			return c, true, false
		}
	}
	switch {
	case c == Public:
		return c, true, false
	case g.policy.AllowPrivate && c.private():
		return c, true, true
	}
	return c, false, false
}

// denied reports whether a, or the IPv4 address it embeds, is in an operator
// deny CIDR.
func (g *Guard) denied(a netip.Addr) bool {
	if len(g.policy.Deny) == 0 {
		return false
	}
	v4, hasV4 := embedded4(a)
	for _, p := range g.policy.Deny {
		if p.Contains(a) || hasV4 && p.Contains(v4) {
			return true
		}
	}
	return false
}

// embedded4 returns the IPv4 address an IPv6 spelling carries, for the forms
// Classify unwraps (the client address for Teredo).
func embedded4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() || !embedsIPv4(a) {
		return netip.Addr{}, false
	}
	b := a.As16()
	if [4]byte(b[:4]) == [4]byte{0x20, 0x01} {
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), true
	}
	if b[0] == 0x20 && b[1] == 0x02 {
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.AddrFrom4([4]byte(b[12:])), true
}

// portAllowed reports whether port passes the strict port policy.
func (g *Guard) portAllowed(port uint16) bool {
	if len(g.policy.Ports) == 0 {
		return port == 443 || g.policy.AllowHTTP && port == 80
	}
	return slices.Contains(g.policy.Ports, port)
}

// Check applies the egress policy to raw: it canonicalizes the URL, checks
// scheme and port, resolves the host once and classifies every answer.
func (g *Guard) Check(ctx context.Context, raw string) (Target, error) {
	u, err := g.Canonicalize(raw)
	if err != nil {
		return Target{}, err
	}
	return g.check(ctx, u)
}

// CheckTarget applies the target policy to raw: the egress policy, plus a DNS
// name (never an IP literal) that v reports verified, exact host match. The
// verified check runs before any DNS lookup, so an unverified host is never
// resolved on an agent's behalf.
func (g *Guard) CheckTarget(ctx context.Context, raw string, v HostVerifier) (Target, error) {
	u, err := g.Canonicalize(raw)
	if err != nil {
		return Target{}, err
	}
	host := u.Hostname()
	if _, err := netip.ParseAddr(host); err == nil {
		return Target{}, fault.New(fault.URLNotAllowed, "IP-literal targets are not allowed; use a verified host name")
	}
	if v == nil {
		return Target{}, fault.New(fault.DomainUnverified, "host %s is not an ownership-verified target", host)
	}
	ok, err := v.IsVerified(ctx, host)
	if err != nil {
		return Target{}, fault.From(err, "the target's verification could not be checked")
	}
	if !ok {
		return Target{}, fault.New(fault.DomainUnverified, "host %s is not an ownership-verified target", host)
	}
	return g.check(ctx, u)
}

// check resolves and classifies a canonical URL's host and applies the strict
// scheme and port policy unless every answer was let in by AllowPrivate.
func (g *Guard) check(ctx context.Context, u *url.URL) (_ Target, err error) {
	defer func() { g.refused(err) }()
	host := u.Hostname()
	addrs, relaxed, err := g.resolve(ctx, host)
	if err != nil {
		return Target{}, err
	}
	if !relaxed {
		if err := g.strict(u); err != nil {
			return Target{}, err
		}
	}
	t := Target{URL: u, Host: host, Addrs: addrs}
	if err := g.refuseSelf(host, addrs, targetPort(t)); err != nil {
		return Target{}, err
	}
	return t, nil
}

// refused tells the policy's Refused hook of err when it is one of the
// guard's own refusals.
func (g *Guard) refused(err error) {
	if err == nil || g.policy.Refused == nil {
		return
	}
	if f, ok := fault.As(err); ok && (f.Code == fault.URLNotAllowed || f.Code == fault.DNSTargetProhibited) {
		g.policy.Refused(f.Code)
	}
}

// Resolve resolves host (a canonical host name or IP literal) once and
// classifies every answer. One prohibited answer rejects the whole set, as a
// DNS rebinding attempt; zero answers and NXDOMAIN are DNS_TARGET_PROHIBITED,
// and a resolver outage is DNS_RESOLUTION_FAILED (retriable). localhost and
// *.localhost never reach the resolver: they are prohibited, or loopback when
// the policy allows private addresses. The result lists IPv4 answers first.
func (g *Guard) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	addrs, _, err := g.resolve(ctx, host)
	return addrs, err
}

func (g *Guard) resolve(ctx context.Context, host string) (addrs []netip.Addr, relaxed bool, err error) {
	host, lit, err := CanonicalHost(host)
	if err != nil {
		return nil, false, err
	}
	switch {
	case lit.IsValid():
		addrs = []netip.Addr{lit}
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		if !g.policy.AllowPrivate {
			g.log.LogAttrs(ctx, slog.LevelInfo, "egress denied", slog.String("host", host), slog.String("class", Loopback.String()))
			return nil, false, fault.New(fault.DNSTargetProhibited, "host %s resolves to a prohibited address", host)
		}
		addrs = []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}
	case isMetadataName(host):
		g.log.LogAttrs(ctx, slog.LevelInfo, "egress denied", slog.String("host", host), slog.String("class", Metadata.String()))
		return nil, false, fault.New(fault.DNSTargetProhibited, "host %s resolves to a prohibited address", host)
	default:
		addrs, err = g.lookup(ctx, host)
		if err != nil {
			return nil, false, err
		}
	}
	relaxed = true
	for i, a := range addrs {
		a = a.Unmap().WithZone("")
		addrs[i] = a
		c, ok, rel := g.allowed(a)
		if !ok {
			g.log.LogAttrs(ctx, slog.LevelInfo, "egress denied", slog.String("host", host), slog.String("class", c.String()), slog.Int("answers", len(addrs)))
			if len(addrs) > 1 {
				return nil, false, fault.New(fault.DNSTargetProhibited, "host %s resolves to a mix of allowed and prohibited addresses", host)
			}
			return nil, false, fault.New(fault.DNSTargetProhibited, "host %s resolves to a prohibited address", host)
		}
		relaxed = relaxed && rel
	}
	// IPv4 first: many hosts that run bastion have no IPv6 route.
	slices.SortStableFunc(addrs, func(a, b netip.Addr) int {
		switch {
		case a.Is4() == b.Is4():
			return 0
		case a.Is4():
			return -1
		}
		return 1
	})
	out := addrs[:0]
	for _, a := range addrs {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out, relaxed, nil
}

// isMetadataName reports whether host names a metadata service. Such names
// are never asked of the resolver (their answers are on the metadata list
// anyway, but a local resolver may know them when an Allow hole would not).
func isMetadataName(host string) bool {
	switch host {
	case "metadata", "metadata.google.internal", "metadata.goog", "instance-data",
		"instance-data.ec2.internal", "metadata.tencentyun.com", "metadata.azure.internal":
		return true
	}
	return false
}

// lookup asks the resolver once and maps its failures: not found and zero
// answers are a prohibited target, anything else is a retriable outage.
func (g *Guard) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	addrs, err := g.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			return nil, fault.Wrap(err, fault.DNSTargetProhibited, "host %s has no DNS records", host)
		}
		return nil, fault.Wrap(err, fault.DNSResolutionFailed, "host %s could not be resolved right now", host)
	}
	if len(addrs) == 0 {
		return nil, fault.New(fault.DNSTargetProhibited, "host %s has no DNS records", host)
	}
	return slices.Clone(addrs), nil
}
