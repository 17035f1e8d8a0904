package egress

import "net/netip"

// Class is what an address is, as far as egress is concerned: Public, the only
// class the egress policy allows by default, or one special-purpose family of
// the IANA IPv4 and IPv6 special-purpose registries, the built-in metadata
// deny list, or an operator's deny CIDR.
//
// The zero Class is Invalid, so a Class that was never assigned fails closed.
type Class uint8

// The classes. Their order and values are not part of any wire contract; the
// String forms are (they appear in logs and metrics).
const (
	Invalid        Class = iota // the zero netip.Addr, or not an address at all
	Public                      // globally routable unicast: the only class allowed by default
	Unspecified                 // 0.0.0.0/8, ::/128
	Loopback                    // 127.0.0.0/8, ::1/128
	Private                     // RFC 1918: 10/8, 172.16/12, 192.168/16
	SharedCGNAT                 // 100.64.0.0/10 (RFC 6598)
	LinkLocal                   // 169.254.0.0/16, fe80::/10
	Metadata                    // cloud metadata and platform endpoints (built-in deny list)
	IETFProtocol                // 192.0.0.0/24 (IETF protocol assignments)
	Documentation               // 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20
	Benchmarking                // 198.18.0.0/15, 2001:2::/48
	Multicast                   // 224.0.0.0/4, ff00::/8
	Reserved                    // 240.0.0.0/4, 192.88.99.0/24, and IPv6 outside 2000::/3 with no other class
	Broadcast                   // 255.255.255.255/32
	UniqueLocal                 // fc00::/7
	SiteLocal                   // fec0::/10 (deprecated)
	Discard                     // 100::/64 discard-only, 100:0:0:1::/64 dummy prefix
	IETFProtocolV6              // 2001::/23 (IETF protocol assignments) outside Teredo and benchmarking
	Denied                      // an operator deny CIDR; never returned by Classify
)

var classNames = [...]string{
	Invalid:        "invalid",
	Public:         "public",
	Unspecified:    "unspecified",
	Loopback:       "loopback",
	Private:        "private",
	SharedCGNAT:    "shared-cgnat",
	LinkLocal:      "link-local",
	Metadata:       "metadata",
	IETFProtocol:   "ietf-protocol",
	Documentation:  "documentation",
	Benchmarking:   "benchmarking",
	Multicast:      "multicast",
	Reserved:       "reserved",
	Broadcast:      "broadcast",
	UniqueLocal:    "unique-local",
	SiteLocal:      "site-local",
	Discard:        "discard",
	IETFProtocolV6: "ietf-protocol-v6",
	Denied:         "denied",
}

// String returns the class's stable lower-case name, such as "link-local".
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "invalid"
}

// private reports whether c is one of the classes a local operator may open
// with Policy.AllowPrivate to review a development server. Metadata,
// unspecified, multicast and the rest stay closed even then.
func (c Class) private() bool {
	switch c {
	case Loopback, Private, SharedCGNAT, LinkLocal, UniqueLocal:
		return true
	}
	return false
}

// AllPrivate reports whether addrs is not empty and every address in it is
// of a class Policy.AllowPrivate opens (loopback, RFC 1918, CGNAT, ULA,
// link-local, metadata excluded): a local development server. It is the one
// test of "every address is loopback or private" that the target rule and
// the browser proxy share.
func AllPrivate(addrs []netip.Addr) bool {
	for _, a := range addrs {
		if !Classify(a).private() {
			return false
		}
	}
	return len(addrs) > 0
}

// Classify reports the egress class of a. It is pure and does not allocate.
//
// a is unmapped first, and an IPv4 address embedded in an IPv6 one is unwrapped
// and classified in its place for the IPv4-compatible (::/96), SIIT
// (::ffff:0:0:0/96), NAT64 (64:ff9b::/96, 64:ff9b:1::/48), 6to4 (2002::/16) and
// Teredo (2001::/32) forms, because a packet to such an address reaches the
// IPv4 host. The zone is ignored. Classify never returns Denied: operator deny
// lists are the Guard's business.
func Classify(a netip.Addr) Class {
	a = a.Unmap()
	if a.Is4() {
		return classify4(a.As4())
	}
	if !a.Is6() {
		return Invalid
	}
	return classify6(a.As16())
}

// classify4 classifies an IPv4 address. The metadata list comes first
// because its entries sit inside (or, like Azure's 168.63.129.16, outside)
// broader ranges and must win over them.
func classify4(b [4]byte) Class {
	if isMetadata4(b) {
		return Metadata
	}
	switch b[0] {
	case 0:
		return Unspecified // "this network", 0.0.0.0/8
	case 10:
		return Private
	case 100:
		if b[1]&0xc0 == 64 {
			return SharedCGNAT
		}
	case 127:
		return Loopback
	case 169:
		if b[1] == 254 {
			return LinkLocal
		}
	case 172:
		if b[1]&0xf0 == 16 {
			return Private
		}
	case 192:
		switch {
		case b[1] == 0 && b[2] == 0:
			return IETFProtocol
		case b[1] == 0 && b[2] == 2:
			return Documentation
		case b[1] == 88 && b[2] == 99:
			return Reserved // deprecated 6to4 relay anycast (RFC 7526)
		case b[1] == 168:
			return Private
		}
	case 198:
		if b[1]&0xfe == 18 {
			return Benchmarking
		}
		if b[1] == 51 && b[2] == 100 {
			return Documentation
		}
	case 203:
		if b[1] == 0 && b[2] == 113 {
			return Documentation
		}
	}
	switch {
	case b[0]&0xf0 == 224:
		return Multicast
	case b == [4]byte{255, 255, 255, 255}:
		return Broadcast
	case b[0] >= 240:
		return Reserved
	}
	return Public
}

// isMetadata4 reports whether b is a cloud metadata or platform endpoint:
//
//	169.254.169.0/24   AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean, IBM, Hetzner, Linode, Vultr
//	                   metadata at .254, AWS Route 53 resolver .253 and time sync .123
//	169.254.170.0/24   AWS ECS task metadata (.2) and EKS pod identity (.23)
//	169.254.0.23/32    Tencent Cloud metadata
//	169.254.42.42/32   Scaleway metadata
//	168.63.129.16/32   Azure WireServer (a public address)
//	100.100.100.200/32 Alibaba Cloud metadata
//	192.0.0.192/32     Oracle Cloud metadata
func isMetadata4(b [4]byte) bool {
	switch b[0] {
	case 169:
		return b[1] == 254 && (b[2] == 169 || b[2] == 170 ||
			b == [4]byte{169, 254, 0, 23} || b == [4]byte{169, 254, 42, 42})
	case 168:
		return b == [4]byte{168, 63, 129, 16}
	case 100:
		return b == [4]byte{100, 100, 100, 200}
	case 192:
		return b == [4]byte{192, 0, 0, 192}
	}
	return false
}

// isMetadata6 reports whether b is an IPv6 metadata endpoint:
//
//	fd00:ec2::/64        AWS IMDS (::254), resolver (::253), time sync (::123), EKS pod identity (::23)
//	fd20:ce::254/128     GCP metadata
//	fd00:42::42/128      Scaleway metadata
//	fe80::a9fe:a9fe/128  OpenStack metadata (169.254.169.254 in link-local IPv6)
func isMetadata6(b [16]byte) bool {
	switch b[0] {
	case 0xfd:
		rest := b[8:]
		switch [8]byte(b[:8]) {
		case [8]byte{0xfd, 0x00, 0x0e, 0xc2}:
			return true
		case [8]byte{0xfd, 0x20, 0x00, 0xce}:
			return [8]byte(rest) == [8]byte{6: 0x02, 7: 0x54}
		case [8]byte{0xfd, 0x00, 0x00, 0x42}:
			return [8]byte(rest) == [8]byte{7: 0x42}
		}
	case 0xfe:
		return b == [16]byte{0xfe, 0x80, 12: 0xa9, 13: 0xfe, 14: 0xa9, 15: 0xfe}
	}
	return false
}

// classify6 classifies an IPv6 address that is not IPv4-mapped.
func classify6(b [16]byte) Class {
	if isMetadata6(b) {
		return Metadata
	}
	switch {
	case b[0] == 0 && [12]byte(b[:12]) == [12]byte{}:
		switch [4]byte(b[12:]) {
		case [4]byte{}:
			return Unspecified
		case [4]byte{3: 1}:
			return Loopback
		}
		return classify4([4]byte(b[12:])) // IPv4-compatible, deprecated
	case b[0] == 0 && [12]byte(b[:12]) == [12]byte{8: 0xff, 9: 0xff}:
		return classify4([4]byte(b[12:])) // SIIT ::ffff:0:a.b.c.d
	case [12]byte(b[:12]) == [12]byte{1: 0x64, 2: 0xff, 3: 0x9b}:
		return classify4([4]byte(b[12:])) // NAT64 well-known prefix
	case [6]byte(b[:6]) == [6]byte{1: 0x64, 2: 0xff, 3: 0x9b, 5: 0x01}:
		// Local-use NAT64 (RFC 8215) does not fix where the IPv4 address
		// sits: RFC 6052 puts it in bytes 6-7 and 9-10 of a /48, while
		// deployments commonly use a /96 out of it. An empty position is
		// the other form; when both are filled, both must be public.
		last, mid := [4]byte(b[12:]), [4]byte{b[6], b[7], b[9], b[10]}
		switch {
		case mid == [4]byte{}:
			return classify4(last)
		case last == [4]byte{}:
			return classify4(mid)
		}
		if c := classify4(last); c != Public {
			return c
		}
		return classify4(mid)
	case [8]byte(b[:8]) == [8]byte{0x01}:
		return Discard // 100::/64
	case [8]byte(b[:8]) == [8]byte{0x01, 7: 0x01}:
		return Discard // 100:0:0:1::/64, the dummy prefix (RFC 9780)
	case b[0]&0xe0 == 0x20:
		return classifyGlobal6(b)
	case b[0]&0xfe == 0xfc:
		return UniqueLocal
	case b[0] == 0xfe && b[1]&0xc0 == 0x80:
		return LinkLocal
	case b[0] == 0xfe && b[1]&0xc0 == 0xc0:
		return SiteLocal
	case b[0] == 0xff:
		return Multicast
	}
	// Everything else outside 2000::/3 is unallocated or reserved by the
	// IETF (the rest of ::/8, 5f00::/16 SRv6 SIDs, 4000::/2, ...).
	return Reserved
}

// classifyGlobal6 classifies an address in 2000::/3, the global unicast space.
func classifyGlobal6(b [16]byte) Class {
	if b[0] == 0x20 && b[1] == 0x01 && b[2]&0xfe == 0 { // 2001::/23
		switch {
		case b[2] == 0 && b[3] == 0: // Teredo 2001::/32: server at bytes 4-7, client inverted in 12-15
			client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
			if c := classify4(client); c != Public {
				return c
			}
			return classify4([4]byte(b[4:8]))
		case b[2] == 0 && b[3] == 2 && b[4] == 0 && b[5] == 0:
			return Benchmarking // 2001:2::/48
		}
		// PCP and TURN anycast, AMT, AS112, ORCHIDv2 and DRIP live here too;
		// none is a place an agent's URL needs to reach.
		return IETFProtocolV6
	}
	switch {
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8:
		return Documentation // 2001:db8::/32
	case b[0] == 0x20 && b[1] == 0x02:
		return classify4([4]byte(b[2:6])) // 6to4
	case b[0] == 0x3f && b[1] == 0xff && b[2]&0xf0 == 0:
		return Documentation // 3fff::/20
	}
	return Public
}

// embedsIPv4 reports whether a is an IPv6 spelling that carries an IPv4
// address (mapped, compatible, SIIT, NAT64, 6to4, Teredo). Such spellings are
// classified through the embedded address, and a URL may not use them as
// literals.
func embedsIPv4(a netip.Addr) bool {
	if a.Is4In6() {
		return true
	}
	if !a.Is6() {
		return false
	}
	b := a.As16()
	switch {
	case [12]byte(b[:12]) == [12]byte{}:
		return [4]byte(b[12:]) != [4]byte{} && [4]byte(b[12:]) != [4]byte{3: 1}
	case [12]byte(b[:12]) == [12]byte{8: 0xff, 9: 0xff}:
		return true
	case [12]byte(b[:12]) == [12]byte{1: 0x64, 2: 0xff, 3: 0x9b}:
		return true
	case [6]byte(b[:6]) == [6]byte{1: 0x64, 2: 0xff, 3: 0x9b, 5: 0x01}:
		return true
	case b[0] == 0x20 && b[1] == 0x02:
		return true
	case [4]byte(b[:4]) == [4]byte{0x20, 0x01}:
		return true
	}
	return false
}
