package targets

import (
	"strings"
	"unicode/utf8"

	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/fault"
)

// CanonicalHost returns raw as the registry keys it: a DNS name of at least
// two labels, lowercase ASCII (punycode for internationalized labels),
// without a trailing dot. It refuses with URL_NOT_ALLOWED anything else: a
// URL, a port, an IP literal or numeric-looking name, localhost, and a
// non-ASCII spelling of a plain-ASCII name (full-width letters, ideographic
// dots) that would let a look-alike be verified in place of the real name.
//
// The spelling is egress.CanonicalHost's, the rule the guard applies to every
// URL it captures, so a verified host and a captured URL's host are compared
// in one canonical form; the refusals after it are the registry's own, since
// a registry entry names one DNS name that a TXT record can prove.
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
	// egress takes a host out of a parsed URL; a registry entry is typed
	// bare, so any URL part (an IPv6 literal's colon included) is refused here.
	if strings.ContainsAny(raw, ":/\\@?#%[] \t\r\n") {
		return "", notAllowed("host has a scheme, port, path or other URL part")
	}
	out, addr, err := egress.CanonicalHost(raw)
	if err != nil {
		why := "host is not a valid DNS name"
		if e, ok := fault.As(err); ok {
			why = e.Message
		}
		return "", notAllowed(why)
	}
	if addr.IsValid() {
		return "", notAllowed("host is an IP address")
	}
	labels := strings.Split(out, ".")
	if len(labels) < 2 {
		return "", notAllowed("host is a single label")
	}
	if strings.HasPrefix(labels[len(labels)-1], "0x") {
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

// isLDH reports whether l is a hostname label in the strict letter, digit,
// hyphen form: egress also admits underscores (some real URLs have them), but
// a registry entry must be a name a certificate and a TXT record can carry.
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
