package egress

import (
	"net"
	"net/netip"
	"sync"

	"github.com/bastion-mcp/bastion/fault"
)

// self is the set of bastion's own listening addresses (the edge, the admin
// listener, the browser proxy and its sessions). No egress reaches them,
// whatever the policy: with Policy.AllowPrivate every loopback port is open
// to a page, and a page must not call the server that is reviewing it.
type self struct {
	mu    sync.RWMutex // guards the fields below; never held across I/O
	exact map[netip.AddrPort]int
	port  map[uint16]int // listeners bound to an unspecified address: every local address at the port
}

// ExcludeListener adds addr, one of bastion's own listeners, to the addresses
// g never dials and never accepts as a target (Check, CheckTarget and
// DialContext refuse them with URL_NOT_ALLOWED, under any policy), and
// returns the function that removes it again. A listener bound to an
// unspecified address (0.0.0.0, ::) excludes its port on every loopback
// address and every address of this machine's interfaces. Guards made by
// WithPrivate share g's set.
func (g *Guard) ExcludeListener(addr net.Addr) (remove func()) {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return func() {}
	}
	ap = netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())
	s := g.self
	s.mu.Lock()
	defer s.mu.Unlock()
	if ap.Addr().IsUnspecified() {
		s.port[ap.Port()]++
		return sync.OnceFunc(func() { s.drop(func() { dec(s.port, ap.Port()) }) })
	}
	s.exact[ap]++
	return sync.OnceFunc(func() { s.drop(func() { dec(s.exact, ap) }) })
}

func (s *self) drop(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

func dec[K comparable](m map[K]int, k K) {
	if m[k]--; m[k] <= 0 {
		delete(m, k)
	}
}

// isSelf reports whether a:port is one of bastion's own listeners.
func (s *self) isSelf(a netip.Addr, port uint16) bool {
	a = a.Unmap().WithZone("")
	s.mu.RLock()
	exact := s.exact[netip.AddrPortFrom(a, port)] > 0
	wild := s.port[port] > 0
	s.mu.RUnlock()
	if exact {
		return true
	}
	return wild && isLocal(a)
}

// isLocal reports whether a is loopback or an address of one of this
// machine's interfaces.
func isLocal(a netip.Addr) bool {
	if Classify(a) == Loopback || a.IsUnspecified() {
		return true
	}
	ifAddrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // fail closed: the port is one of ours
	}
	for _, ia := range ifAddrs {
		if p, err := netip.ParsePrefix(ia.String()); err == nil && p.Addr().Unmap().WithZone("") == a {
			return true
		}
	}
	return false
}

// refuseSelf returns the error for a target or dial at one of bastion's own
// listeners, or nil.
func (g *Guard) refuseSelf(host string, addrs []netip.Addr, port uint16) error {
	for _, a := range addrs {
		if g.self.isSelf(a, port) {
			g.log.Info("egress denied", "host", host, "class", "bastion-listener")
			return fault.New(fault.URLNotAllowed, "%s:%d is one of bastion's own listeners, never a review target", host, port)
		}
	}
	return nil
}
