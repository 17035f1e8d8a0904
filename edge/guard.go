package edge

import (
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/bastion-mcp/bastion/fault"
)

// Guard wraps next, in the net/http style of http.MaxBytesHandler, with the
// edge's request guard: forwarding headers (unless a trusted proxy sets
// them), then Host, then Origin. It is DNS-rebinding and cross-site
// protection, and the one place those rules live: the edge wraps its MCP
// path with it, and a server composing other routes beside the edge (the
// REST API) wraps them with the same guard. Refusals are counted and
// reported like the edge's own.
func (e *Edge) Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, counted := w.(*statusWriter); !counted {
			// Not under ServeHTTP (REST, which app mounts beside the edge):
			// count it here, as the rest route.
			sw := newStatusWriter(w)
			defer e.metrics.request(routeREST, sw)
			w = sw
		}
		if reason := e.guard(r); reason != "" {
			e.reject(w, r, reason)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// guard is Guard's decision: the refusal reason, or "" to pass.
func (e *Edge) guard(r *http.Request) rejection {
	if !e.opts.TrustedProxy && hasForwarding(r.Header) {
		return reasonForwarded
	}
	host, ok := parseHost(r.Host, false)
	if !ok || !e.hosts.allows(host) {
		return reasonHost
	}
	if !originAllowed(r.Header, host, e.opts.AllowedOrigins) {
		return reasonOrigin
	}
	return ""
}

// hasForwarding reports whether h carries Forwarded or any X-Forwarded-*
// header, which only a configured trusted proxy may set. Keys are in
// canonical form, as net/http's server stores them.
func hasForwarding(h http.Header) bool {
	for k := range h {
		if k == "Forwarded" || strings.HasPrefix(k, "X-Forwarded-") {
			return true
		}
	}
	return false
}

// hostPort is a Host value or allowlist entry in canonical form, so that
// equal hosts compare equal: name is a lower-case DNS name without its
// trailing dot, or an IP address's canonical text (IPv6 without brackets,
// an IPv4-mapped IPv6 address as its IPv4); port is decimal without leading
// zeros, "" when absent.
type hostPort struct {
	name, port string
}

// parseHost parses a Host header (RFC 9110 §7.2: uri-host [":" port]). An
// IPv6 literal must be bracketed there, as the URI grammar requires; an
// allowlist entry may also be a bare IPv6 address (which then has no port).
// Zones, empty or out-of-range ports, and bytes outside a DNS name are
// refused rather than normalised, so no junk value can collide with an
// allowed one.
func parseHost(s string, entry bool) (hostPort, bool) {
	if s == "" || len(s) > 300 {
		return hostPort{}, false
	}
	if rest, ok := strings.CutPrefix(s, "["); ok {
		lit, after, ok := strings.Cut(rest, "]")
		a, err := netip.ParseAddr(lit)
		if !ok || err != nil || !a.Is6() || a.Zone() != "" {
			return hostPort{}, false
		}
		port, ok := parsePort(after)
		if !ok {
			return hostPort{}, false
		}
		return hostPort{a.Unmap().String(), port}, true
	}
	if entry && strings.Count(s, ":") > 1 {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return hostPort{}, false
		}
		return hostPort{a.Unmap().String(), ""}, true
	}
	name, port := s, ""
	if i := strings.IndexByte(s, ':'); i >= 0 {
		p, ok := parsePort(s[i:])
		if !ok {
			return hostPort{}, false
		}
		name, port = s[:i], p
	}
	if a, err := netip.ParseAddr(name); err == nil {
		return hostPort{a.String(), port}, true // IPv4: a colon would have split it
	}
	name, ok := dnsName(name)
	if !ok {
		return hostPort{}, false
	}
	return hostPort{name, port}, true
}

// parsePort parses "" or ":" followed by a port in 1..65535.
func parsePort(s string) (string, bool) {
	if s == "" {
		return "", true
	}
	digits, ok := strings.CutPrefix(s, ":")
	if !ok || digits == "" || len(digits) > 5 || strings.TrimLeft(digits, "0123456789") != "" {
		return "", false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 || n > 65535 {
		return "", false
	}
	return strconv.Itoa(n), true
}

// dnsName lower-cases s (ASCII only: Unicode case folding would map, say,
// the Kelvin sign onto "k") and drops one trailing dot, which names the
// same host. Labels are 1..63 letters, digits, '-' or '_'.
func dnsName(s string) (string, bool) {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return "", false
	}
	b := []byte(s)
	label := 0
	for i, c := range b {
		switch {
		case c >= 'A' && c <= 'Z':
			b[i] = c + 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
		case c == '.':
			if label == 0 {
				return "", false
			}
			label = 0
			continue
		default:
			return "", false
		}
		if label++; label > 63 {
			return "", false
		}
	}
	return string(b), label > 0
}

// hostSet is the Host allowlist: names that match any port, and exact
// name:port pairs.
type hostSet struct {
	anyPort map[string]bool
	exact   map[hostPort]bool
}

func newHostSet(allowed []string) (hostSet, error) {
	s := hostSet{anyPort: map[string]bool{}, exact: map[hostPort]bool{}}
	if len(allowed) == 0 {
		allowed = []string{"localhost", "127.0.0.1", "::1"} // loopback names only
	}
	for _, a := range allowed {
		h, ok := parseHost(strings.TrimSpace(a), true)
		if !ok {
			return hostSet{}, fault.New(fault.InvalidArgument, "edge: allowed host %q is not a host name or IP address with an optional port", a)
		}
		if h.port == "" {
			s.anyPort[h.name] = true
		} else {
			s.exact[h] = true
		}
	}
	return s, nil
}

// allows reports whether the parsed Host h is on the list. A Host without
// a port matches only entries without one: which port it means depends on
// a scheme the edge may not see (TLS can end at a proxy).
func (s hostSet) allows(h hostPort) bool {
	return s.anyPort[h.name] || s.exact[h]
}

// originAllowed is cross-site and DNS-rebinding protection: a request
// without Origin is not from a browser and passes; a browser's one Origin
// must be listed (compared case-insensitively) or, with no list, be
// same-origin with the request's (already allowed) Host, compared parsed.
func originAllowed(h http.Header, host hostPort, allowed []string) bool {
	values := h.Values("Origin")
	switch len(values) {
	case 0:
		return true
	case 1:
	default:
		return false
	}
	origin := values[0]
	if len(allowed) > 0 {
		for _, a := range allowed {
			if strings.EqualFold(origin, a) {
				return true
			}
		}
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return false
	}
	o, ok := parseHost(u.Host, false)
	return ok && o == host
}

// isLoopback reports whether host (a name or IP, no port) is loopback.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && a.Unmap().IsLoopback()
}
