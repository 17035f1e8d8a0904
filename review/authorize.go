package review

import (
	"context"
	"net/netip"
	"net/url"
	"strings"

	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/targets"
)

// Who may review what is decided here and nowhere else: authorize is the
// principal's scope check every Service and Targets method starts with, and
// TargetPolicy is the target check (the egress guard's policy, the tenant's
// verified hosts and the private-development rule) every submission and
// recheck passes. Adapters (MCP, REST, the gateway's in-process path, the
// CLI) call these; none decides a scope or a target itself.

// authorize checks that p is authenticated and holds scope.
func authorize(p principal.Principal, scope principal.Scope, doing string) error {
	if !p.IsValid() {
		return fault.New(fault.AuthRequired, "authentication is required")
	}
	if !p.Has(scope) {
		return fault.New(fault.InsufficientScope, "%s requires %s", doing, scope)
	}
	return nil
}

// TargetPolicy is the production Authorizer: the egress guard's target
// policy (canonical URL, no IP literal, scheme, port, every resolved address
// classified) plus the tenant's verified-host registry, checked before any
// DNS lookup.
//
// The private-development rule lives here, in one place: with AllowPrivate a
// target whose every address is loopback or private (a local development
// server) is admitted without an ownership proof, over http or https on any
// port, IP literals included; a public host still needs https, a standard
// port and a verified host, and metadata endpoints and bastion's own
// listeners stay refused (the guard's rules).
type TargetPolicy struct {
	Guard   *egress.Guard
	Targets *targets.Registry
	// AllowPrivate also admits, without an ownership proof, a target whose
	// every address is loopback or private (a local development server).
	// The guard must have been built with Policy.AllowPrivate.
	AllowPrivate bool
}

// AuthorizeTarget implements Authorizer.
func (a TargetPolicy) AuthorizeTarget(ctx context.Context, tenant, rawURL string) (string, string, error) {
	t, err := a.Guard.CheckTarget(ctx, rawURL, a.Targets.Verifier(tenant))
	if err == nil {
		return t.URL.String(), t.Host, nil
	}
	if !fault.Is(err, fault.DomainUnverified) && !fault.Is(err, fault.URLNotAllowed) {
		return "", "", err
	}
	if !a.AllowPrivate {
		if hint := PrivateTargetHint(rawURL); hint != nil {
			return "", "", hint
		}
		return "", "", err
	}
	pt, perr := a.Guard.Check(ctx, rawURL)
	switch {
	case perr == nil && egress.AllPrivate(pt.Addrs):
		return pt.URL.String(), pt.Host, nil
	case perr != nil && (fault.Is(perr, fault.URLNotAllowed) || isLiteral(rawURL)):
		// The policy's own reason (a public http URL, one of bastion's
		// listeners, a metadata address given literally) says more than
		// "not verified" or "no IP literals".
		return "", "", perr
	}
	return "", "", err
}

// PrivateTargetHint returns the refusal of a URL that names a development
// server itself (localhost, or a loopback or private IP literal) when
// bastion runs without --allow-private, and nil for any other URL. Only the
// URL's own spelling is read, never DNS, so it says nothing about where a
// name resolves.
func PrivateTargetHint(rawURL string) *fault.Error {
	host, ok := urlHost(rawURL)
	if !ok {
		return nil
	}
	local := host == "localhost" || strings.HasSuffix(host, ".localhost")
	if ip, err := netip.ParseAddr(host); err == nil {
		switch egress.Classify(ip) {
		case egress.Loopback, egress.Private, egress.SharedCGNAT, egress.UniqueLocal:
			local = true
		}
	}
	if !local {
		return nil
	}
	return fault.New(fault.URLNotAllowed, "%s is a loopback or private development server: start bastion with --allow-private to review it", host)
}

// isLiteral reports whether rawURL's host is an IP literal.
func isLiteral(rawURL string) bool {
	host, ok := urlHost(rawURL)
	if !ok {
		return false
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}

// urlHost returns rawURL's host, lower case, without brackets or port. It
// only chooses an error message: the guard has already judged the URL.
func urlHost(rawURL string) (string, bool) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return "", false
	}
	return strings.TrimSuffix(strings.ToLower(u.Hostname()), "."), true
}
