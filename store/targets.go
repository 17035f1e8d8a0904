package store

import (
	"context"
	"errors"

	"github.com/bastion-mcp/bastion/targets"
)

// Targets is targets.Store over a Driver: the registry's rules (what a
// target needs, what "missing" returns) once, the SQL in the adapter.
type Targets struct {
	Driver Driver
}

// TargetPut implements targets.Store: an upsert by (tenant, host).
func (s Targets) TargetPut(ctx context.Context, t targets.Target) error {
	if t.Tenant == "" || t.Host == "" {
		return errors.New("store: target needs a tenant and a host")
	}
	return inTx(ctx, s.Driver, t.Tenant, func(tx ExecutorTx) error { return tx.TargetUpsert(ctx, &t) })
}

// TargetGet implements targets.Store; a missing target is targets.ErrNotFound.
func (s Targets) TargetGet(ctx context.Context, tenant, host string) (targets.Target, error) {
	var out targets.Target
	err := s.Driver.Read(ctx, tenant, func(ex Executor) (err error) {
		out, err = ex.TargetGet(ctx, tenant, host)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return targets.Target{}, targets.ErrNotFound
	}
	return out, err
}

// TargetList implements targets.Store, ordered by host.
func (s Targets) TargetList(ctx context.Context, tenant string) ([]targets.Target, error) {
	var out []targets.Target
	err := s.Driver.Read(ctx, tenant, func(ex Executor) (err error) {
		out, err = ex.TargetList(ctx, tenant)
		return err
	})
	return out, err
}

// TargetDelete implements targets.Store; a missing target is targets.ErrNotFound.
func (s Targets) TargetDelete(ctx context.Context, tenant, host string) error {
	return inTx(ctx, s.Driver, tenant, func(tx ExecutorTx) error {
		deleted, err := tx.TargetDelete(ctx, tenant, host)
		if err == nil && !deleted {
			err = targets.ErrNotFound
		}
		return err
	})
}
