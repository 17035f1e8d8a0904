package egress

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/bastion-mcp/bastion/fault"
	"golang.org/x/net/idna"
)

// MaxURLLen is the longest URL, in bytes, that Canonicalize accepts.
const MaxURLLen = 2048

// Canonicalize parses raw and returns its one canonical spelling, or a
// URL_NOT_ALLOWED error. The rules:
//
//   - absolute http(s) URL with a host, at most MaxURLLen bytes both as given
//     and as canonically spelled (escaping can lengthen it); no spaces,
//     control characters or backslashes anywhere (parsers disagree on them);
//   - no userinfo, and no '@' or percent-escape in the authority;
//   - the fragment is dropped, the query kept, an empty path becomes "/";
//   - the host is lowercased and loses one trailing dot; a non-ASCII host goes
//     through IDNA (UTS-46) to punycode, and is rejected as a look-alike when a
//     non-ASCII label maps to plain ASCII (full-width letters, enclosed
//     alphanumerics, ideographic dots);
//   - a numeric-looking host must be a canonical dotted-quad IPv4 address:
//     2130706433, 0177.0.0.1, 0x7f.1 and 127.1 are rejected before any lookup;
//   - an IPv6 literal must have no zone and must not embed an IPv4 address
//     (mapped, compatible, NAT64, 6to4, Teredo); it is written in RFC 5952 form;
//   - the default port is dropped;
//   - scheme and port follow the policy (https and 443 by default). With
//     AllowPrivate any scheme and port pass here, and Check applies the strict
//     rules unless every address the host resolves to is private.
func (g *Guard) Canonicalize(raw string) (*url.URL, error) {
	u, port, err := canonicalize(raw)
	if err != nil {
		return nil, err
	}
	if !g.policy.AllowPrivate {
		if err := g.strictSchemePort(u.Scheme, port); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// strict applies the strict scheme and port policy to a canonical URL.
func (g *Guard) strict(u *url.URL) error {
	port := defaultPort(u.Scheme)
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return fault.New(fault.URLNotAllowed, "the URL's port is not valid")
		}
		port = uint16(n)
	}
	return g.strictSchemePort(u.Scheme, port)
}

func (g *Guard) strictSchemePort(scheme string, port uint16) error {
	if scheme != "https" && !g.policy.AllowHTTP {
		if g.policy.AllowPrivate {
			return fault.New(fault.URLNotAllowed, "plain http is allowed only for a loopback or private development server; a public host needs https")
		}
		return fault.New(fault.URLNotAllowed, "only https URLs are allowed")
	}
	if !g.portAllowed(port) {
		return fault.New(fault.URLNotAllowed, "port %d is not allowed", port)
	}
	return nil
}

func defaultPort(scheme string) uint16 {
	if scheme == "http" {
		return 80
	}
	return 443
}

func notAllowed(format string, args ...any) error {
	return fault.New(fault.URLNotAllowed, format, args...)
}

// canonicalize applies the policy-free rules and returns the canonical URL and
// its effective port.
func canonicalize(raw string) (*url.URL, uint16, error) {
	if raw == "" || len(raw) > MaxURLLen {
		return nil, 0, notAllowed("the URL must be 1 to %d bytes long", MaxURLLen)
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c == 0x7f || c == '\\' {
			return nil, 0, notAllowed("the URL contains a space, control character or backslash")
		}
	}
	i := strings.Index(raw, "://")
	if i <= 0 {
		return nil, 0, notAllowed("the URL must be absolute, like https://host/path")
	}
	scheme := strings.ToLower(raw[:i])
	if scheme != "https" && scheme != "http" {
		return nil, 0, notAllowed("only http and https URLs are allowed")
	}
	rest := raw[i+3:]
	authority := rest
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		authority = rest[:end]
	}
	if strings.ContainsAny(authority, "@%") {
		return nil, 0, notAllowed("credentials and percent-escapes are not allowed in the URL's host")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.Host == "" {
		return nil, 0, notAllowed("the URL is not a valid absolute URL")
	}
	if u.User != nil {
		return nil, 0, notAllowed("credentials in the URL are not allowed")
	}
	host, lit, err := CanonicalHost(u.Hostname())
	if err != nil {
		return nil, 0, err
	}
	port := defaultPort(scheme)
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return nil, 0, notAllowed("the URL's port is not valid")
		}
		port = uint16(n)
	}
	hostport := host
	if lit.Is6() {
		hostport = "[" + host + "]"
	}
	if port != defaultPort(scheme) {
		hostport += ":" + strconv.Itoa(int(port))
	}
	out := &url.URL{Scheme: scheme, Host: hostport, Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery}
	if out.Path == "" {
		out.Path, out.RawPath = "/", ""
	}
	// Escaping can triple a byte, so a URL that fits as given may not fit as
	// spelled; refusing it here keeps every accepted URL acceptable again.
	if len(out.String()) > MaxURLLen {
		return nil, 0, notAllowed("the URL must be 1 to %d bytes long once its path and query are escaped", MaxURLLen)
	}
	return out, port, nil
}

// CanonicalHost returns host's canonical form as Canonicalize spells it
// and, for an IP literal, its address (the zero Addr for a name), or a
// URL_NOT_ALLOWED error. host comes without scheme, brackets or port. It is
// the one host-canonicalization rule: the guard and the dialer use it, and
// so does the target registry, which adds its own refusals on top.
func CanonicalHost(host string) (string, netip.Addr, error) {
	if host == "" {
		return "", netip.Addr{}, notAllowed("the URL has no host")
	}
	if strings.Contains(host, ":") {
		a, err := netip.ParseAddr(host)
		switch {
		case err != nil || !a.Is6():
			return "", netip.Addr{}, notAllowed("the host is not a valid IPv6 address")
		case a.Zone() != "":
			return "", netip.Addr{}, notAllowed("IPv6 zones are not allowed in URLs")
		case embedsIPv4(a):
			return "", netip.Addr{}, notAllowed("IPv6 literals that embed an IPv4 address are not allowed; use the IPv4 address")
		}
		return a.String(), a, nil
	}
	if !isASCII(host) {
		ascii, err := idnaHost(host)
		if err != nil {
			return "", netip.Addr{}, err
		}
		host = ascii
	}
	host = strings.ToLower(host)
	host = strings.TrimSuffix(host, ".")
	if numericLooking(host) {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is4() || a.String() != host {
			return "", netip.Addr{}, notAllowed("a numeric host must be a canonical dotted-quad IPv4 address")
		}
		return host, a, nil
	}
	if err := checkDNSName(host); err != nil {
		return "", netip.Addr{}, err
	}
	return host, netip.Addr{}, nil
}

// idnaHost maps a non-ASCII host to punycode with UTS-46 and rejects
// look-alikes: every label that had non-ASCII characters must still need
// punycode, and no character may map to a dot.
func idnaHost(host string) (string, error) {
	if strings.ContainsAny(host, "\u3002\uff0e\uff61") {
		return "", notAllowed("the host uses a look-alike dot")
	}
	ascii, err := idna.Lookup.ToASCII(host)
	if err != nil {
		return "", notAllowed("the host is not a valid internationalized domain name")
	}
	in := strings.Split(strings.TrimSuffix(host, "."), ".")
	out := strings.Split(strings.TrimSuffix(ascii, "."), ".")
	if len(in) != len(out) {
		return "", notAllowed("the host uses look-alike characters")
	}
	for i, label := range in {
		if !isASCII(label) && !strings.HasPrefix(out[i], "xn--") {
			return "", notAllowed("the host uses look-alike characters that spell a plain ASCII name")
		}
	}
	return ascii, nil
}

// checkDNSName checks a lower-case ASCII host: labels of 1 to 63 letters,
// digits, hyphens or underscores, not starting or ending with a hyphen, at
// most 253 bytes, and punycode labels that decode and re-encode to themselves.
func checkDNSName(host string) error {
	if len(host) > 253 {
		return notAllowed("the host name is longer than 253 bytes")
	}
	for label := range strings.SplitSeq(host, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return notAllowed("the host name is not a valid DNS name")
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return notAllowed("the host name is not a valid DNS name")
			}
		}
		if strings.HasPrefix(label, "xn--") {
			u, err := idna.Lookup.ToUnicode(label)
			if err != nil || isASCII(u) {
				return notAllowed("the host has an invalid punycode label")
			}
			if back, err := idna.Lookup.ToASCII(u); err != nil || back != label {
				return notAllowed("the host has a non-canonical punycode label")
			}
		}
	}
	return nil
}

// numericLooking reports whether host's last label is a number (decimal, or
// hex with 0x), which WHATWG URL parsers turn into an IPv4 address.
func numericLooking(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	digits := last
	if len(last) >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X') {
		for i := 2; i < len(last); i++ {
			c := last[i]
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
