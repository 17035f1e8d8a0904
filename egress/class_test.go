package egress

import (
	"net/netip"
	"testing"
)

// special is the reference table, written from the IANA IPv4 and IPv6
// special-purpose address registries (plus multicast, site-local, the rest
// of ::/8 and the metadata list). embed marks ranges whose class is that of an
// embedded IPv4 address; they are tested in TestClassifyEmbedded. The table is
// deliberately a different implementation from Classify's switch: the
// boundary test compares the two at every edge.
var special = []struct {
	prefix string
	class  Class
	embed  bool
}{
	// IPv4 special-purpose registry.
	{"0.0.0.0/8", Unspecified, false},
	{"0.0.0.0/32", Unspecified, false},
	{"10.0.0.0/8", Private, false},
	{"100.64.0.0/10", SharedCGNAT, false},
	{"127.0.0.0/8", Loopback, false},
	{"169.254.0.0/16", LinkLocal, false},
	{"172.16.0.0/12", Private, false},
	{"192.0.0.0/24", IETFProtocol, false},
	{"192.0.0.0/29", IETFProtocol, false},  // IPv4 service continuity prefix
	{"192.0.0.8/32", IETFProtocol, false},  // IPv4 dummy address
	{"192.0.0.9/32", IETFProtocol, false},  // PCP anycast (globally reachable, still denied)
	{"192.0.0.10/32", IETFProtocol, false}, // TURN anycast (globally reachable, still denied)
	{"192.0.0.170/31", IETFProtocol, false},
	{"192.0.2.0/24", Documentation, false},
	{"192.31.196.0/24", Public, false}, // AS112-v4, globally reachable
	{"192.52.193.0/24", Public, false}, // AMT, globally reachable
	{"192.88.99.0/24", Reserved, false},
	{"192.168.0.0/16", Private, false},
	{"192.175.48.0/24", Public, false}, // direct delegation AS112, globally reachable
	{"198.18.0.0/15", Benchmarking, false},
	{"198.51.100.0/24", Documentation, false},
	{"203.0.113.0/24", Documentation, false},
	{"224.0.0.0/4", Multicast, false},
	{"233.252.0.0/24", Multicast, false}, // MCAST-TEST-NET
	{"240.0.0.0/4", Reserved, false},
	{"255.255.255.255/32", Broadcast, false},
	// Metadata deny list (IPv4).
	{"169.254.169.0/24", Metadata, false},
	{"169.254.170.0/24", Metadata, false},
	{"169.254.0.23/32", Metadata, false},
	{"169.254.42.42/32", Metadata, false},
	{"168.63.129.16/32", Metadata, false},
	{"100.100.100.200/32", Metadata, false},
	{"192.0.0.192/32", Metadata, false},

	// IPv6 special-purpose registry and neighbours.
	{"::/8", Reserved, false},
	{"::/128", Unspecified, false},
	{"::1/128", Loopback, false},
	{"::/96", Invalid, true},             // IPv4-compatible
	{"::ffff:0:0/96", Invalid, true},     // IPv4-mapped
	{"::ffff:0:0:0/96", Invalid, true},   // SIIT IPv4-translated
	{"64:ff9b::/96", Invalid, true},      // NAT64 well-known prefix
	{"64:ff9b:1::/48", Invalid, true},    // local-use NAT64
	{"100::/64", Discard, false},         // discard-only
	{"100:0:0:1::/64", Discard, false},   // dummy prefix
	{"2000::/3", Public, false},          // global unicast
	{"2001::/23", IETFProtocolV6, false}, // IETF protocol assignments
	{"2001::/32", Invalid, true},         // Teredo
	{"2001:1::1/128", IETFProtocolV6, false},
	{"2001:1::2/128", IETFProtocolV6, false},
	{"2001:1::3/128", IETFProtocolV6, false},
	{"2001:2::/48", Benchmarking, false},
	{"2001:3::/32", IETFProtocolV6, false},
	{"2001:4:112::/48", IETFProtocolV6, false},
	{"2001:10::/28", IETFProtocolV6, false},
	{"2001:20::/28", IETFProtocolV6, false},
	{"2001:30::/28", IETFProtocolV6, false},
	{"2001:db8::/32", Documentation, false},
	{"2002::/16", Invalid, true}, // 6to4
	{"2620:4f:8000::/48", Public, false},
	{"3fff::/20", Documentation, false},
	{"5f00::/16", Reserved, false}, // SRv6 SIDs
	{"fc00::/7", UniqueLocal, false},
	{"fe80::/10", LinkLocal, false},
	{"fec0::/10", SiteLocal, false},
	{"ff00::/8", Multicast, false},
	// Metadata deny list (IPv6).
	{"fd00:ec2::/64", Metadata, false},
	{"fd20:ce::254/128", Metadata, false},
	{"fd00:42::42/128", Metadata, false},
	{"fe80::a9fe:a9fe/128", Metadata, false},
}

// reference classifies a by longest-prefix match over the special table;
// ok is false when a falls in an embedding range.
func reference(a netip.Addr) (c Class, ok bool) {
	best := -1
	c = Public
	if a.Is6() {
		c = Reserved // outside 2000::/3 and every listed range
	}
	embed := false
	for _, s := range special {
		p := netip.MustParsePrefix(s.prefix)
		if p.Contains(a) && p.Bits() > best {
			best, c, embed = p.Bits(), s.class, s.embed
		}
	}
	return c, !embed
}

func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr()
	b := a.AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	out, _ := netip.AddrFromSlice(b)
	return out
}

// boundaryAddrs returns, for every range of the table, its first and last
// address and the addresses just outside it.
func boundaryAddrs() []netip.Addr {
	var out []netip.Addr
	for _, s := range special {
		p := netip.MustParsePrefix(s.prefix)
		first, last := p.Masked().Addr(), lastAddr(p)
		for _, a := range []netip.Addr{first, last, first.Prev(), last.Next()} {
			if a.IsValid() {
				out = append(out, a)
			}
		}
	}
	return out
}

func TestClassifyBoundaries(t *testing.T) {
	t.Parallel()
	n := 0
	for _, a := range boundaryAddrs() {
		want, ok := reference(a)
		if !ok {
			continue
		}
		n++
		if got := Classify(a); got != want {
			t.Errorf("Classify(%v) = %v, want %v", a, got, want)
		}
	}
	if n < 200 {
		t.Fatalf("only %d boundary addresses checked; the table lost ranges", n)
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		want Class
	}{
		{"8.8.8.8", Public},
		{"1.1.1.1", Public},
		{"9.255.255.255", Public},
		{"10.0.0.0", Private},
		{"10.255.255.255", Private},
		{"11.0.0.0", Public},
		{"100.63.255.255", Public},
		{"100.64.0.0", SharedCGNAT},
		{"100.127.255.255", SharedCGNAT},
		{"100.128.0.0", Public},
		{"126.255.255.255", Public},
		{"127.0.0.1", Loopback},
		{"128.0.0.0", Public},
		{"169.253.255.255", Public},
		{"169.254.0.1", LinkLocal},
		{"169.254.169.254", Metadata},
		{"169.254.170.2", Metadata},
		{"169.255.0.0", Public},
		{"172.15.255.255", Public},
		{"172.16.0.0", Private},
		{"172.31.255.255", Private},
		{"172.32.0.0", Public},
		{"168.63.129.16", Metadata},
		{"168.63.129.15", Public},
		{"168.63.129.17", Public},
		{"100.100.100.200", Metadata},
		{"192.0.0.192", Metadata},
		{"192.0.0.255", IETFProtocol},
		{"192.0.1.0", Public},
		{"192.0.2.0", Documentation},
		{"192.0.3.0", Public},
		{"192.88.99.1", Reserved},
		{"192.167.255.255", Public},
		{"192.168.1.1", Private},
		{"192.169.0.0", Public},
		{"198.17.255.255", Public},
		{"198.18.0.0", Benchmarking},
		{"198.19.255.255", Benchmarking},
		{"198.20.0.0", Public},
		{"198.51.100.7", Documentation},
		{"203.0.113.255", Documentation},
		{"223.255.255.255", Public},
		{"224.0.0.1", Multicast},
		{"239.255.255.255", Multicast},
		{"240.0.0.0", Reserved},
		{"255.255.255.254", Reserved},
		{"255.255.255.255", Broadcast},
		{"0.0.0.0", Unspecified},
		{"::", Unspecified},
		{"::1", Loopback},
		{"::2", Unspecified}, // IPv4-compatible 0.0.0.2
		{"::ffff:127.0.0.1", Loopback},
		{"::ffff:169.254.169.254", Metadata},
		{"::ffff:8.8.8.8", Public},
		{"::127.0.0.1", Loopback},
		{"::8.8.8.8", Public},
		{"::ffff:0:10.0.0.1", Private},
		{"64:ff9b::10.0.0.1", Private},
		{"64:ff9b::169.254.169.254", Metadata},
		{"64:ff9b::8.8.8.8", Public},
		{"64:ff9b:1::192.168.0.1", Private},
		{"64:ff9b:1::8.8.8.8", Public},
		{"64:ff9b:1:a00:0:100::", Private}, // RFC 6052 /48 position: 10.0.0.1
		{"2002:7f00:1::", Loopback},
		{"2002:a9fe:a9fe::1", Metadata},
		{"2002:808:808::1", Public},
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", Loopback}, // Teredo client 127.0.0.1
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", Public},   // Teredo client 8.8.8.8
		{"2001:0:a00:1:8000:63bf:f7f7:f7f7", Private},      // Teredo server 10.0.0.1
		{"2001:0:4136:e378:8000:63bf:3f57:fef5", Private},  // client 192.168.1.10
		{"2001:1::1", IETFProtocolV6},
		{"2001:2::1", Benchmarking},
		{"2001:db8::1", Documentation},
		{"2001:db9::1", Public},
		{"2001:200::1", Public},
		{"2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", IETFProtocolV6},
		{"2606:4700:4700::1111", Public},
		{"3fff::1", Documentation},
		{"3fff:fff::1", Documentation},
		{"3fff:1000::", Public},
		{"4000::1", Reserved},
		{"5f00::1", Reserved},
		{"100::1", Discard},
		{"100:0:0:1::1", Discard},
		{"100:0:0:2::1", Reserved},
		{"fc00::1", UniqueLocal},
		{"fdff:ffff::1", UniqueLocal},
		{"fd00:ec2::254", Metadata},
		{"fd00:ec2::23", Metadata},
		{"fd20:ce::254", Metadata},
		{"fd20:ce::253", UniqueLocal},
		{"fd00:42::42", Metadata},
		{"fe80::1", LinkLocal},
		{"fe80::1%eth0", LinkLocal},
		{"fe80::a9fe:a9fe", Metadata},
		{"febf:ffff::1", LinkLocal},
		{"fec0::1", SiteLocal},
		{"ff02::1", Multicast},
	}
	for _, tt := range tests {
		if got := Classify(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("Classify(%s) = %v, want %v", tt.addr, got, tt.want)
		}
	}
	if got := Classify(netip.Addr{}); got != Invalid {
		t.Errorf("Classify(zero) = %v, want invalid", got)
	}
}

// wrappers spell v4 in each IPv6 form that Classify unwraps.
func wrappers(v4 netip.Addr) map[string]netip.Addr {
	b := v4.As4()
	teredoServer := netip.MustParseAddr("65.54.227.120").As4()
	return map[string]netip.Addr{
		"mapped":     netip.AddrFrom16(v4.As16()),
		"compatible": netip.AddrFrom16([16]byte{12: b[0], 13: b[1], 14: b[2], 15: b[3]}),
		"siit":       netip.AddrFrom16([16]byte{8: 0xff, 9: 0xff, 12: b[0], 13: b[1], 14: b[2], 15: b[3]}),
		"nat64":      netip.AddrFrom16([16]byte{1: 0x64, 2: 0xff, 3: 0x9b, 12: b[0], 13: b[1], 14: b[2], 15: b[3]}),
		"nat64-local-96": netip.AddrFrom16([16]byte{1: 0x64, 2: 0xff, 3: 0x9b, 5: 1,
			12: b[0], 13: b[1], 14: b[2], 15: b[3]}),
		"nat64-local-48": netip.AddrFrom16([16]byte{1: 0x64, 2: 0xff, 3: 0x9b, 5: 1,
			6: b[0], 7: b[1], 9: b[2], 10: b[3]}),
		"6to4": netip.AddrFrom16([16]byte{0x20, 0x02, b[0], b[1], b[2], b[3], 15: 1}),
		"teredo": netip.AddrFrom16([16]byte{0x20, 0x01, 0, 0,
			teredoServer[0], teredoServer[1], teredoServer[2], teredoServer[3],
			0x80, 0, 0x63, 0xbf, ^b[0], ^b[1], ^b[2], ^b[3]}),
	}
}

func TestClassifyEmbedded(t *testing.T) {
	t.Parallel()
	for _, v4 := range boundaryAddrs() {
		if !v4.Is4() {
			continue
		}
		want := Classify(v4)
		for form, a := range wrappers(v4) {
			if form == "compatible" && v4.As4()[0] == 0 && v4.As4()[1] == 0 && v4.As4()[2] == 0 && v4.As4()[3] <= 1 {
				continue // ::0.0.0.0 and ::0.0.0.1 are :: and ::1
			}
			if v4 == netip.IPv4Unspecified() && (form == "nat64-local-96" || form == "nat64-local-48") {
				continue // 64:ff9b:1:: holds no address in either position
			}
			if got := Classify(a); got != want {
				t.Errorf("Classify(%v) [%s of %v] = %v, want %v", a, form, v4, got, want)
			}
			if !embedsIPv4(a) {
				t.Errorf("embedsIPv4(%v) [%s] = false", a, form)
			}
		}
	}
}

var sinkClass Class

func TestNoAllocs(t *testing.T) {
	addrs := benchAddrs()
	if n := testing.AllocsPerRun(100, func() {
		for _, a := range addrs {
			sinkClass = Classify(a)
		}
	}); n != 0 {
		t.Errorf("Classify allocates %v times per run, want 0", n)
	}
}

func TestClassString(t *testing.T) {
	t.Parallel()
	seen := map[string]Class{}
	for c := Invalid; c <= Denied; c++ {
		s := c.String()
		if s == "" {
			t.Errorf("Class(%d).String() is empty", c)
		}
		if prev, dup := seen[s]; dup && c != Invalid {
			t.Errorf("Class(%d) and Class(%d) are both %q", prev, c, s)
		}
		seen[s] = c
	}
	if got := Class(200).String(); got != "invalid" {
		t.Errorf("Class(200).String() = %q, want invalid", got)
	}
}

// benchAddrs is a mix of what a guard sees: mostly public answers, some
// private, metadata and embedded forms.
func benchAddrs() []netip.Addr {
	var out []netip.Addr
	for _, s := range []string{
		"93.184.216.34", "8.8.8.8", "1.1.1.1", "151.101.1.69", "140.82.112.3",
		"10.1.2.3", "192.168.1.1", "172.20.0.5", "127.0.0.1", "169.254.169.254",
		"100.100.100.200", "168.63.129.16", "203.0.113.9", "224.0.0.251", "255.255.255.255",
		"2606:4700:4700::1111", "2a00:1450:4001:82b::200e", "2001:4860:4860::8888",
		"::1", "fe80::1", "fd00:ec2::254", "fc00::1", "::ffff:10.0.0.1",
		"64:ff9b::7f00:1", "2002:c0a8:101::1", "2001:0:4136:e378:8000:63bf:3f57:fef5",
		"2001:db8::1", "ff02::1", "::", "100::1", "3fff::1", "5f00::1",
	} {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func BenchmarkClassify(b *testing.B) {
	addrs := benchAddrs()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		sinkClass = Classify(addrs[i%len(addrs)])
	}
}

// BenchmarkClassifyNaivePrefixLoop classifies the same addresses with a
// longest-prefix loop over the same ranges as a []netip.Prefix, the obvious
// alternative to Classify's switch (and it does not even unwrap embedded
// IPv4).
func BenchmarkClassifyNaivePrefixLoop(b *testing.B) {
	type entry struct {
		p netip.Prefix
		c Class
	}
	var table []entry
	for _, s := range special {
		if !s.embed {
			table = append(table, entry{netip.MustParsePrefix(s.prefix), s.class})
		}
	}
	naive := func(a netip.Addr) Class {
		a = a.Unmap()
		best, c := -1, Public
		for _, e := range table {
			if e.p.Bits() > best && e.p.Contains(a) {
				best, c = e.p.Bits(), e.c
			}
		}
		return c
	}
	addrs := benchAddrs()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		sinkClass = naive(addrs[i%len(addrs)])
	}
}

func FuzzClassify(f *testing.F) {
	for _, a := range benchAddrs() {
		f.Add(a.AsSlice(), a.String())
	}
	for _, s := range []string{"127.1", "0177.0.0.1", "0x7f.0.0.1", "2130706433", "::ffff:127.0.0.1",
		"::ffff:7f00:1", "fe80::1%eth0", "::ffff:169.254.169.254%25x", "64:ff9b::a9fe:a9fe", "1.2.3.4.5", ""} {
		f.Add([]byte(s), s)
	}
	f.Fuzz(func(t *testing.T, raw []byte, s string) {
		check := func(a netip.Addr) {
			c := Classify(a)
			if a.IsValid() == (c == Invalid) {
				t.Fatalf("Classify(%v) = %v", a, c)
			}
			if c == Denied {
				t.Fatalf("Classify(%v) = denied; only a Guard denies", a)
			}
			if u := a.Unmap(); Classify(u) != c {
				t.Fatalf("Classify(%v) = %v but Classify(Unmap) = %v", a, c, Classify(u))
			}
			if a.Zone() != "" && Classify(a.WithZone("")) != c {
				t.Fatalf("Classify(%v) depends on the zone", a)
			}
			if a.Is4() {
				for form, w := range wrappers(a) {
					if form == "compatible" || form == "nat64-local-96" || form == "nat64-local-48" {
						continue // :: / ::1 and empty positions are special
					}
					if Classify(w) != c {
						t.Fatalf("Classify(%v) [%s] = %v, want %v as %v", w, form, Classify(w), c, a)
					}
				}
			}
		}
		if a, ok := netip.AddrFromSlice(raw); ok {
			check(a)
		}
		if a, err := netip.ParseAddr(s); err == nil {
			check(a)
		}
	})
}
