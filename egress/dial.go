package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"syscall"

	"github.com/bastion-mcp/bastion/fault"
)

// pinKey carries a Target, already checked for the request being sent, from
// the guarded transport to DialContext so the host is not resolved twice.
type pinKey struct{}

// DialContext dials address (host:port) through the guard: the port must pass
// the policy, the host is resolved once and classified, and only the pinned,
// classified addresses are dialed, in order; the actual remote address is
// checked again in net.Dialer.Control just before connect. network must be
// tcp, tcp4 or tcp6.
func (g *Guard) DialContext(ctx context.Context, network, address string) (_ net.Conn, err error) {
	defer func() { g.refused(err) }()
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fault.New(fault.URLNotAllowed, "only TCP connections are allowed")
	}
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fault.New(fault.URLNotAllowed, "the address to dial is not host:port")
	}
	port64, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port64 == 0 {
		return nil, fault.New(fault.URLNotAllowed, "the port to dial is not valid")
	}
	port := uint16(port64)
	host, _, err = CanonicalHost(host)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	relaxed := false
	if t, ok := ctx.Value(pinKey{}).(Target); ok && t.Host == host && targetPort(t) == port && len(t.Addrs) > 0 {
		addrs = t.Addrs // resolved and classified by Check for this very request
		relaxed = true
		for _, a := range addrs {
			_, _, rel := g.allowed(a)
			relaxed = relaxed && rel
		}
	} else {
		addrs, relaxed, err = g.resolve(ctx, host)
		if err != nil {
			return nil, err
		}
	}
	if !relaxed && !g.portAllowed(port) {
		return nil, fault.New(fault.URLNotAllowed, "port %d is not allowed", port)
	}
	if err := g.refuseSelf(host, addrs, port); err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		if network == "tcp4" && !a.Is4() || network == "tcp6" && !a.Is6() {
			continue
		}
		pinned := netip.AddrPortFrom(a, port)
		d := g.dialer
		d.Control = g.control(pinned)
		if to, ok := g.policy.UnsafeDialOverride[pinned]; ok {
			// pinned passed every check above; only the connect moves.
			d.Control = overrideControl(to)
			pinned = to
		}
		conn, err := d.DialContext(ctx, network, pinned.String())
		if err == nil {
			return conn, nil
		}
		if fe, ok := fault.As(err); ok {
			return nil, fe
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fault.Wrap(errors.Join(errs...), fault.UpstreamUnavailable, "host %s could not be reached", host)
}

// targetPort returns the port a Target's URL is dialed at, so a pinned Target
// is used only for the connection it was checked for.
func targetPort(t Target) uint16 {
	if t.URL == nil {
		return 0
	}
	n, err := strconv.ParseUint(t.URL.Port(), 10, 16)
	if err != nil {
		return defaultPort(t.URL.Scheme)
	}
	return uint16(n)
}

// control returns a net.Dialer.Control that refuses to connect anywhere but
// pinned, and re-classifies the remote address it is about to connect to.
func (g *Guard) control(pinned netip.AddrPort) func(network, address string, c syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fault.New(fault.DNSTargetProhibited, "the address to connect to is not valid")
		}
		a := ap.Addr().Unmap().WithZone("")
		if a != pinned.Addr().Unmap() || ap.Port() != pinned.Port() {
			return fault.New(fault.DNSTargetProhibited, "the connection did not go to the checked address")
		}
		if c, ok, _ := g.allowed(a); !ok {
			g.log.Info("egress denied at connect", "class", c.String())
			return fault.New(fault.DNSTargetProhibited, "the address to connect to is prohibited")
		}
		if g.self.isSelf(a, ap.Port()) {
			g.log.Info("egress denied at connect", "class", "bastion-listener")
			return fault.New(fault.URLNotAllowed, "the address to connect to is one of bastion's own listeners")
		}
		return nil
	}
}

// overrideControl returns a net.Dialer.Control for Policy.UnsafeDialOverride:
// the connection must go to exactly to, which the operator chose in place of
// an address the guard already classified.
func overrideControl(to netip.AddrPort) func(network, address string, c syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || ap.Addr().Unmap().WithZone("") != to.Addr().Unmap() || ap.Port() != to.Port() {
			return fault.New(fault.DNSTargetProhibited, "the connection did not go to the checked address")
		}
		return nil
	}
}
