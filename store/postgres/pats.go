package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/store"
)

var _ store.PATStore = (*DB)(nil)

const patColumns = `tenant_id, pat_id, name, scopes, hash, created_at, expires_at, revoked_at, last_used_at`

// PATPut implements auth.PATStore: the record and its hash → (tenant, id)
// entry commit together. A duplicate id (per tenant) or hash is an error.
func (db *DB) PATPut(ctx context.Context, rec auth.PATRecord) error {
	if rec.Tenant == "" || rec.ID == "" {
		return errors.New("store/postgres: a token needs a tenant and an id")
	}
	scopes := make([]string, len(rec.Scopes))
	for i, s := range rec.Scopes {
		scopes[i] = string(s)
	}
	return db.inTenant(ctx, rec.Tenant, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO pats (`+patColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			rec.Tenant, rec.ID, rec.Name, scopes, rec.Hash[:], rec.CreatedAt.UTC(), ts(rec.ExpiresAt), ts(rec.RevokedAt), ts(rec.LastUsedAt)); err != nil {
			return fmt.Errorf("store/postgres: put token %s: %w", rec.ID, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO pat_hashes (hash, tenant_id, pat_id) VALUES ($1, $2, $3)`,
			rec.Hash[:], rec.Tenant, rec.ID); err != nil {
			return fmt.Errorf("store/postgres: put token %s: %w", rec.ID, err)
		}
		return nil
	})
}

// PATGetByHash implements auth.PATStore. The serving role cannot read
// pat_hashes; bastion_pat_lookup (SECURITY DEFINER) answers for this one
// hash with its (tenant, id), and the record is then read with that tenant
// bound like any other.
func (db *DB) PATGetByHash(ctx context.Context, hash [32]byte) (auth.PATRecord, error) {
	var tenant, id string
	err := db.pool.QueryRow(ctx, `SELECT tenant_id, pat_id FROM bastion_pat_lookup($1)`, hash[:]).Scan(&tenant, &id)
	if errors.Is(err, pgx.ErrNoRows) {
		return auth.PATRecord{}, auth.ErrNotFound
	}
	if err != nil {
		return auth.PATRecord{}, fmt.Errorf("store/postgres: token lookup: %w", err)
	}
	var out auth.PATRecord
	err = db.inTenant(ctx, tenant, func(tx pgx.Tx) (err error) {
		out, err = scanPAT(tx.QueryRow(ctx, `SELECT `+patColumns+` FROM pats WHERE tenant_id = $1 AND pat_id = $2 AND hash = $3`,
			tenant, id, hash[:]))
		return err
	})
	return out, err
}

// PATList implements auth.PATStore, oldest first.
func (db *DB) PATList(ctx context.Context, tenant string) ([]auth.PATRecord, error) {
	var out []auth.PATRecord
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+patColumns+` FROM pats WHERE tenant_id = $1 ORDER BY created_at, pat_id`, tenant)
		if err != nil {
			return fmt.Errorf("store/postgres: list tokens: %w", err)
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (auth.PATRecord, error) { return scanPAT(r) })
		return err
	})
	return out, err
}

// PATRevoke implements auth.PATStore.
func (db *DB) PATRevoke(ctx context.Context, tenant, id string, at time.Time) error {
	return db.patSet(ctx, `revoked_at`, tenant, id, at)
}

// PATTouch implements auth.PATToucher.
func (db *DB) PATTouch(ctx context.Context, tenant, id string, at time.Time) error {
	return db.patSet(ctx, `last_used_at`, tenant, id, at)
}

// patSet sets one time column; col is a constant chosen by the caller.
func (db *DB) patSet(ctx context.Context, col, tenant, id string, at time.Time) error {
	return db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE pats SET `+col+` = $1 WHERE tenant_id = $2 AND pat_id = $3`, ts(at), tenant, id)
		if err != nil {
			return fmt.Errorf("store/postgres: update token %s: %w", id, err)
		}
		if tag.RowsAffected() == 0 {
			return auth.ErrNotFound
		}
		return nil
	})
}

func scanPAT(row pgx.Row) (auth.PATRecord, error) {
	var (
		rec                       auth.PATRecord
		scopes                    []string
		hash                      []byte
		created                   time.Time
		expires, revoked, touched *time.Time
	)
	err := row.Scan(&rec.Tenant, &rec.ID, &rec.Name, &scopes, &hash, &created, &expires, &revoked, &touched)
	if errors.Is(err, pgx.ErrNoRows) {
		return auth.PATRecord{}, auth.ErrNotFound
	}
	if err != nil {
		return auth.PATRecord{}, fmt.Errorf("store/postgres: scan token: %w", err)
	}
	if len(hash) != len(rec.Hash) {
		return auth.PATRecord{}, fmt.Errorf("store/postgres: token %s has a %d-byte hash", rec.ID, len(hash))
	}
	copy(rec.Hash[:], hash)
	for _, s := range scopes {
		rec.Scopes = append(rec.Scopes, principal.Scope(s))
	}
	rec.CreatedAt = created.UTC()
	rec.ExpiresAt, rec.RevokedAt, rec.LastUsedAt = fromTS(expires), fromTS(revoked), fromTS(touched)
	return rec, nil
}
