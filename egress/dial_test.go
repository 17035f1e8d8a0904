package egress

import (
	"context"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/fault"
)

// listener is a real loopback TCP listener that hands over every connection
// it accepts, in order, so a test can tell whether anything but its own
// marked connection ever arrived.
type listener struct {
	addr  netip.AddrPort
	conns chan net.Conn
}

func listen(t *testing.T, ip string) *listener {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	l := &listener{addr: netip.MustParseAddrPort(ln.Addr().String()), conns: make(chan net.Conn, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(l.conns)
				return
			}
			l.conns <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for c := range l.conns {
			c.Close()
		}
	})
	return l
}

// assertOnlyMarker dials the listener through a guard with an explicit hole,
// writes a marker, and asserts that the first connection the listener
// accepted is that one: every earlier, forbidden attempt would have been
// accepted first.
func (l *listener) assertOnlyMarker(t *testing.T) {
	t.Helper()
	hole := NewGuard(Policy{Allow: []netip.Prefix{netip.PrefixFrom(l.addr.Addr(), 32)}, Ports: []uint16{l.addr.Port()}},
		StaticResolver{"marker.example": {l.addr.Addr()}})
	c, err := hole.DialContext(context.Background(), "tcp", net.JoinHostPort("marker.example", strconv.Itoa(int(l.addr.Port()))))
	if err != nil {
		t.Fatalf("control dial through the hole failed: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	select {
	case first := <-l.conns:
		defer first.Close()
		first.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 2)
		if _, err := io.ReadFull(first, buf); err != nil || string(buf) != "ok" {
			t.Fatalf("the listener accepted a connection before the marker: %q, %v", buf, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the marker connection never arrived")
	}
}

func TestDialContextNeverConnects(t *testing.T) {
	t.Parallel()
	l := listen(t, "127.0.0.1")
	port := strconv.Itoa(int(l.addr.Port()))
	dns := StaticResolver{
		"internal.example": addrs("127.0.0.1"),
		"rebind.example":   addrs("93.184.216.34", "127.0.0.1"),
		"mapped.example":   addrs("::ffff:127.0.0.1"),
		"nat64.example":    addrs("64:ff9b::7f00:1"),
		"public.example":   addrs("93.184.216.34"),
	}
	g := NewGuard(Policy{Ports: []uint16{l.addr.Port()}}, dns)
	tests := []struct {
		network, address string
		code             fault.Code
	}{
		{"tcp", "internal.example:" + port, fault.DNSTargetProhibited},
		{"tcp", "rebind.example:" + port, fault.DNSTargetProhibited},
		{"tcp", "mapped.example:" + port, fault.DNSTargetProhibited},
		{"tcp", "nat64.example:" + port, fault.DNSTargetProhibited},
		{"tcp", "127.0.0.1:" + port, fault.DNSTargetProhibited},
		{"tcp4", "localhost:" + port, fault.DNSTargetProhibited},
		{"tcp", "app.localhost:" + port, fault.DNSTargetProhibited},
		{"tcp", "[::ffff:127.0.0.1]:" + port, fault.URLNotAllowed},
		{"tcp", "2130706433:" + port, fault.URLNotAllowed},
		{"tcp", "0x7f.1:" + port, fault.URLNotAllowed},
		{"tcp", "127.1:" + port, fault.URLNotAllowed},
		{"tcp", "public.example:22", fault.URLNotAllowed},
		{"tcp", "public.example:0", fault.URLNotAllowed},
		{"tcp", "public.example", fault.URLNotAllowed},
		{"udp", "public.example:" + port, fault.URLNotAllowed},
		{"unix", "/var/run/docker.sock", fault.URLNotAllowed},
	}
	for _, tt := range tests {
		c, err := g.DialContext(context.Background(), tt.network, tt.address)
		if err == nil {
			c.Close()
		}
		if !fault.Is(err, tt.code) {
			t.Errorf("DialContext(%s, %s) = %v, want %s", tt.network, tt.address, err, tt.code)
		}
	}
	l.assertOnlyMarker(t)
}

func TestDialContextPinned(t *testing.T) {
	t.Parallel()
	l := listen(t, "127.0.0.1")
	r := &countingResolver{Resolver: StaticResolver{"app.example": addrs("127.0.0.1")}}
	g := NewGuard(Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, Ports: []uint16{l.addr.Port()}}, r)
	c, err := g.DialContext(context.Background(), "tcp", net.JoinHostPort("app.example", strconv.Itoa(int(l.addr.Port()))))
	if err != nil {
		t.Fatalf("DialContext through the hole: %v", err)
	}
	defer c.Close()
	if got := netip.MustParseAddrPort(c.RemoteAddr().String()); got != l.addr {
		t.Errorf("connected to %v, want the pinned %v", got, l.addr)
	}
	if n := r.n.Load(); n != 1 {
		t.Errorf("%d lookups for one dial, want exactly 1", n)
	}
}

func TestDialContextPortPolicy(t *testing.T) {
	t.Parallel()
	l := listen(t, "127.0.0.1")
	port := strconv.Itoa(int(l.addr.Port()))
	// The hole opens the address but not the port: nothing may connect.
	g := NewGuard(Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
		StaticResolver{"app.example": addrs("127.0.0.1")})
	if _, err := g.DialContext(context.Background(), "tcp", "app.example:"+port); !fault.Is(err, fault.URLNotAllowed) {
		t.Errorf("dial to a port outside the policy = %v, want URL_NOT_ALLOWED", err)
	}
	// A local operator's dev server: private address, any port.
	dev := NewGuard(Policy{AllowPrivate: true}, StaticResolver{})
	c, err := dev.DialContext(context.Background(), "tcp", "localhost:"+port)
	if err != nil {
		t.Fatalf("AllowPrivate dial to localhost: %v", err)
	}
	c.Close()
	<-l.conns // the dev connection
	l.assertOnlyMarker(t)
}

func TestDialControl(t *testing.T) {
	t.Parallel()
	g := NewGuard(Policy{}, StaticResolver{})
	pinned := netip.MustParseAddrPort("93.184.216.34:443")
	tests := []struct {
		guard   *Guard
		pinned  netip.AddrPort
		address string
		ok      bool
	}{
		{g, pinned, "93.184.216.34:443", true},
		{g, pinned, "[::ffff:93.184.216.34]:443", true},
		{g, pinned, "10.0.0.1:443", false},                                    // not the pinned address
		{g, pinned, "93.184.216.34:444", false},                               // not the pinned port
		{g, pinned, "not an address", false},                                  // unparseable
		{g, netip.MustParseAddrPort("127.0.0.1:443"), "127.0.0.1:443", false}, // pinned but prohibited
	}
	for _, tt := range tests {
		err := tt.guard.control(tt.pinned)("tcp", tt.address, nil)
		if (err == nil) != tt.ok {
			t.Errorf("control(%v)(%q) = %v, want ok=%v", tt.pinned, tt.address, err, tt.ok)
		}
		if err != nil && !fault.Is(err, fault.DNSTargetProhibited) {
			t.Errorf("control error %v is not DNS_TARGET_PROHIBITED", err)
		}
	}
}

func TestDialContextUnreachable(t *testing.T) {
	t.Parallel()
	// A listener that is closed again leaves a port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ap := netip.MustParseAddrPort(ln.Addr().String())
	ln.Close()
	g := NewGuard(Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, Ports: []uint16{ap.Port()}},
		StaticResolver{"down.example": addrs("127.0.0.1")})
	_, err = g.DialContext(context.Background(), "tcp", net.JoinHostPort("down.example", strconv.Itoa(int(ap.Port()))))
	fe, ok := fault.As(err)
	if !ok || fe.Code != fault.UpstreamUnavailable || !fe.Retriable {
		t.Fatalf("dial to a closed port = %v, want retriable UPSTREAM_UNAVAILABLE", err)
	}
	if want := "127.0.0.1"; strings.Contains(fe.Message, want) {
		t.Errorf("message %q names the address", fe.Message)
	}
}
