package targets

import (
	"net/netip"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/bastion-mcp/bastion/fault"
)

// hostProfile maps a host the way a browser would for lookup (UTS-46,
// non-transitional) and then insists on a strict, length-checked DNS name.
var hostProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.StrictDomainName(true),
	idna.VerifyDNSLength(true),
	idna.CheckHyphens(true),
)

// CanonicalHost returns raw as the registry keys it: a DNS name of at least
// two labels, lowercase ASCII (punycode for internationalized labels),
// without a trailing dot. It refuses with URL_NOT_ALLOWED anything else: a
// URL, a port, an IP literal or numeric-looking name, localhost, and a
// non-ASCII spelling of a plain-ASCII name (full-width letters, ideographic
// dots) that would let a look-alike be verified in place of the real name.
func CanonicalHost(raw string) (string, error) {
	notAllowed := func(why string) error {
		return fault.New(fault.URLNotAllowed, "%s; give a bare DNS host name such as preview.example.com", why)
	}
	if raw == "" {
		return "", notAllowed("empty host")
	}
	if len(raw) > 254 {
		return "", notAllowed("host longer than 253 characters")
	}
	if !utf8.ValidString(raw) {
		return "", notAllowed("host is not valid UTF-8")
	}
	if strings.ContainsAny(raw, ":/\\@?#%[] \t\r\n") {
		return "", notAllowed("host has a scheme, port, path or other URL part")
	}
	for _, dot := range []string{"\u3002", "\uff0e", "\uff61"} { // ideographic and full-width dots
		if strings.Contains(raw, dot) {
			return "", notAllowed("host uses a look-alike dot")
		}
	}
	h := strings.TrimSuffix(raw, ".")
	out, err := hostProfile.ToASCII(h)
	if err != nil || out == "" {
		return "", notAllowed("host is not a valid DNS name")
	}
	out = strings.ToLower(out)
	// A punycode label must decode to a valid name that encodes back to
	// itself, or two spellings could name one entry.
	if again, err := hostProfile.ToASCII(out); err != nil || again != out {
		return "", notAllowed("host is not a valid DNS name")
	}
	if !isASCII(h) {
		in, labels := strings.Split(h, "."), strings.Split(out, ".")
		if len(in) != len(labels) {
			return "", notAllowed("host is not a valid DNS name")
		}
		for i, l := range in {
			if !isASCII(l) && !strings.HasPrefix(labels[i], "xn--") {
				return "", notAllowed("host spells a plain-ASCII name with look-alike characters")
			}
		}
	}
	if _, err := netip.ParseAddr(out); err == nil {
		return "", notAllowed("host is an IP address")
	}
	labels := strings.Split(out, ".")
	if len(labels) < 2 {
		return "", notAllowed("host is a single label")
	}
	if numericLooking(labels[len(labels)-1]) {
		return "", notAllowed("host looks numeric")
	}
	if out == "localhost" || strings.HasSuffix(out, ".localhost") {
		return "", notAllowed("host is localhost")
	}
	for _, l := range labels {
		if !isLDH(l) {
			return "", notAllowed("host is not a valid DNS name")
		}
	}
	return out, nil
}

// numericLooking reports whether a top label could be read as a number
// (decimal, octal or hex) by some resolver: no real TLD is.
func numericLooking(l string) bool {
	if strings.HasPrefix(l, "0x") {
		return true
	}
	for _, c := range l {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func isLDH(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
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
