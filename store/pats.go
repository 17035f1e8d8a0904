package store

import (
	"context"
	"errors"
	"time"

	"github.com/bastion-mcp/bastion/auth"
)

// PATs is PATStore over a Driver: what a token needs and what "missing"
// returns, once; the SQL, and how a hash is found before its tenant is
// known, in the adapter.
type PATs struct {
	Driver Driver
}

// PATPut implements auth.PATStore. A duplicate id (per tenant) or hash is an
// error.
func (s PATs) PATPut(ctx context.Context, rec auth.PATRecord) error {
	if rec.Tenant == "" || rec.ID == "" {
		return errors.New("store: a token needs a tenant and an id")
	}
	return inTx(ctx, s.Driver, rec.Tenant, func(tx ExecutorTx) error { return tx.PATInsert(ctx, &rec) })
}

// PATGetByHash implements auth.PATStore: the driver names the hash's tenant
// and id, and the record is then read acting for that tenant like any other.
func (s PATs) PATGetByHash(ctx context.Context, hash [32]byte) (auth.PATRecord, error) {
	tenant, id, err := s.Driver.PATLookup(ctx, hash)
	if err != nil {
		return auth.PATRecord{}, patErr(err)
	}
	var out auth.PATRecord
	err = s.Driver.Read(ctx, tenant, func(ex Executor) (err error) {
		out, err = ex.PATGet(ctx, tenant, id, hash)
		return err
	})
	return out, patErr(err)
}

// PATList implements auth.PATStore, oldest first.
func (s PATs) PATList(ctx context.Context, tenant string) ([]auth.PATRecord, error) {
	var out []auth.PATRecord
	err := s.Driver.Read(ctx, tenant, func(ex Executor) (err error) {
		out, err = ex.PATList(ctx, tenant)
		return err
	})
	return out, err
}

// PATRevoke implements auth.PATStore.
func (s PATs) PATRevoke(ctx context.Context, tenant, id string, at time.Time) error {
	return inTx(ctx, s.Driver, tenant, func(tx ExecutorTx) error { return found(tx.PATRevoke(ctx, tenant, id, at)) })
}

// PATTouch implements auth.PATToucher.
func (s PATs) PATTouch(ctx context.Context, tenant, id string, at time.Time) error {
	return inTx(ctx, s.Driver, tenant, func(tx ExecutorTx) error { return found(tx.PATTouch(ctx, tenant, id, at)) })
}

// found is auth's answer to an update that matched ok rows.
func found(ok bool, err error) error {
	if err == nil && !ok {
		return auth.ErrNotFound
	}
	return err
}

// patErr is auth's error for a missing token.
func patErr(err error) error {
	if errors.Is(err, ErrNotFound) {
		return auth.ErrNotFound
	}
	return err
}
