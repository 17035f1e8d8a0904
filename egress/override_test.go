package egress

import (
	"context"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/fault"
)

// TestUnsafeDialOverride shows that the demo's override moves only the final
// connect: the classified public address is dialed at the loopback listener,
// while every address, port and host check still runs on the original.
func TestUnsafeDialOverride(t *testing.T) {
	t.Parallel()
	l := listen(t, "127.0.0.1")
	stub := netip.MustParseAddr("93.184.216.34")
	private := netip.MustParseAddr("10.1.2.3")
	g := NewGuard(Policy{UnsafeDialOverride: map[netip.AddrPort]netip.AddrPort{
		netip.AddrPortFrom(stub, 443):    l.addr,
		netip.AddrPortFrom(private, 443): l.addr, // never reached: 10/8 is refused first
	}}, StaticResolver{
		"preview.example.com":  {stub},
		"internal.example.com": {private},
		"mixed.example.com":    {stub, private},
	})
	ctx := context.Background()

	c, err := g.DialContext(ctx, "tcp", "preview.example.com:443")
	if err != nil {
		t.Fatalf("dial through the override: %v", err)
	}
	if _, err := c.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case got := <-l.conns:
		got.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 2)
		if _, err := io.ReadFull(got, buf); err != nil || string(buf) != "hi" {
			t.Fatalf("the listener got %q, %v; want the overridden connection", buf, err)
		}
		got.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the overridden connection never arrived")
	}

	refused := []struct {
		name, addr string
		code       fault.Code
	}{
		{"private address is still classified", "internal.example.com:443", fault.DNSTargetProhibited},
		{"rebinding answer set is still refused", "mixed.example.com:443", fault.DNSTargetProhibited},
		{"port policy still applies to the original", "preview.example.com:8443", fault.URLNotAllowed},
		{"the local address itself is still refused", l.addr.String(), fault.DNSTargetProhibited},
	}
	for _, tc := range refused {
		_, err := g.DialContext(ctx, "tcp", tc.addr)
		if !fault.Is(err, tc.code) {
			t.Errorf("%s: dial %s = %v; want %s", tc.name, tc.addr, err, tc.code)
		}
	}
	l.assertOnlyMarker(t)
}

// TestUnsafeDialOverrideCopied shows NewGuard copies the map, so a caller
// cannot redirect a running guard's connections.
func TestUnsafeDialOverrideCopied(t *testing.T) {
	t.Parallel()
	l := listen(t, "127.0.0.1")
	stub := netip.MustParseAddrPort("93.184.216.34:443")
	m := map[netip.AddrPort]netip.AddrPort{stub: l.addr}
	g := NewGuard(Policy{UnsafeDialOverride: m}, StaticResolver{"preview.example.com": {stub.Addr()}})
	m[stub] = netip.MustParseAddrPort("127.0.0.1:1") // nothing listens there
	c, err := g.DialContext(context.Background(), "tcp", "preview.example.com:443")
	if err != nil {
		t.Fatalf("dial after the caller changed its map: %v", err)
	}
	c.Close()
}
