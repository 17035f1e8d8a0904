package app

import (
	"context"

	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/targets"
)

// Authorizer is review.Service's target check: the egress guard's target
// policy (canonical URL, no IP literal, scheme, port, every resolved address
// classified) plus the tenant's verified-host registry, checked before any
// DNS lookup.
type Authorizer struct {
	Guard   *egress.Guard
	Targets *targets.Registry
	// AllowPrivate also admits, without an ownership proof, a target whose
	// every address is loopback or private (a local development server).
	// The guard must have been built with Policy.AllowPrivate.
	AllowPrivate bool
}

// AuthorizeTarget implements review.Authorizer.
func (a Authorizer) AuthorizeTarget(ctx context.Context, tenant, rawURL string) (string, string, error) {
	t, err := a.Guard.CheckTarget(ctx, rawURL, a.Targets.Verifier(tenant))
	if err == nil {
		return t.URL.String(), t.Host, nil
	}
	if a.AllowPrivate && (fault.Is(err, fault.DomainUnverified) || fault.Is(err, fault.URLNotAllowed)) {
		if pt, perr := a.Guard.Check(ctx, rawURL); perr == nil && allPrivate(pt) {
			return pt.URL.String(), pt.Host, nil
		}
	}
	return "", "", err
}

// allPrivate reports whether every address of t is of a non-public class
// (the guard has already refused metadata, reserved and the like).
func allPrivate(t egress.Target) bool {
	for _, a := range t.Addrs {
		if egress.Classify(a) == egress.Public {
			return false
		}
	}
	return len(t.Addrs) > 0
}
