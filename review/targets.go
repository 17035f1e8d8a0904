package review

import (
	"context"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/targets"
)

// Registry is the tenant-keyed targets registry; *targets.Registry
// implements it. It knows tenants, not principals, so it decides no scope.
type Registry interface {
	Add(ctx context.Context, tenant, host string) (targets.Challenge, error)
	Verify(ctx context.Context, tenant, host string) (targets.Target, error)
	List(ctx context.Context, tenant string) ([]targets.Target, error)
	Remove(ctx context.Context, tenant, host string) error
}

// Targets is the principal-scoped targets registry, beside Service: the one
// place a principal's right to the registry is decided. Listing needs
// reviews:read (whoever may read reviews may see which hosts can be
// reviewed); adding, verifying and removing need targets:write. The tenant
// is always the principal's own. targets.Registry takes a tenant rather than
// a Principal, so every adapter goes through Targets, never the bare
// registry.
type Targets struct {
	reg Registry
}

// NewTargets returns the principal-scoped view of reg.
func NewTargets(reg Registry) *Targets { return &Targets{reg: reg} }

// Add issues (or shows) the ownership challenge for host in p's tenant.
// Requires targets:write.
func (s *Targets) Add(ctx context.Context, p principal.Principal, host string) (targets.Challenge, error) {
	if err := authorize(p, principal.TargetsWrite, "adding a target"); err != nil {
		return targets.Challenge{}, err
	}
	if host == "" {
		return targets.Challenge{}, fault.New(fault.InvalidArgument, "host: is required")
	}
	c, err := s.reg.Add(ctx, p.Tenant(), host)
	return c, targetsFault(err, "the target could not be added")
}

// Verify checks host's published proof in p's tenant. Requires
// targets:write.
func (s *Targets) Verify(ctx context.Context, p principal.Principal, host string) (targets.Target, error) {
	if err := authorize(p, principal.TargetsWrite, "verifying a target"); err != nil {
		return targets.Target{}, err
	}
	t, err := s.reg.Verify(ctx, p.Tenant(), host)
	return t, targetsFault(err, "the target could not be verified")
}

// List returns p's tenant's targets. Requires reviews:read.
func (s *Targets) List(ctx context.Context, p principal.Principal) ([]targets.Target, error) {
	if err := authorize(p, principal.ReviewsRead, "listing targets"); err != nil {
		return nil, err
	}
	ts, err := s.reg.List(ctx, p.Tenant())
	return ts, targetsFault(err, "the targets could not be listed")
}

// Remove deletes host from p's tenant. Requires targets:write.
func (s *Targets) Remove(ctx context.Context, p principal.Principal, host string) error {
	if err := authorize(p, principal.TargetsWrite, "removing a target"); err != nil {
		return err
	}
	return targetsFault(s.reg.Remove(ctx, p.Tenant(), host), "the target could not be removed")
}

// targetsFault keeps the registry's typed errors and hides any other (a
// store failure) behind a fixed INTERNAL_ERROR.
func targetsFault(err error, msg string) error {
	if err == nil {
		return nil
	}
	return fault.From(err, msg)
}
