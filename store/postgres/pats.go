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

// PATLookup asks bastion_pat_lookup (SECURITY DEFINER): the serving role
// cannot read pat_hashes, and the function answers for this one hash with
// its (tenant, id), so tokens cannot be enumerated.
func (d driver) PATLookup(ctx context.Context, hash [32]byte) (string, string, error) {
	var tenant, id string
	err := d.db.pool.QueryRow(ctx, `SELECT tenant_id, pat_id FROM bastion_pat_lookup($1)`, hash[:]).Scan(&tenant, &id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", store.ErrNotFound
	}
	if err != nil {
		return "", "", fmt.Errorf("store/postgres: token lookup: %w", err)
	}
	return tenant, id, nil
}

// PATInsert writes the record and its hash → (tenant, id) entry, which
// commit together.
func (e executor) PATInsert(ctx context.Context, rec *auth.PATRecord) error {
	scopes := make([]string, len(rec.Scopes))
	for i, s := range rec.Scopes {
		scopes[i] = string(s)
	}
	if _, err := e.exec(ctx, "put token "+rec.ID, `INSERT INTO pats (`+patColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		rec.Tenant, rec.ID, rec.Name, scopes, rec.Hash[:], rec.CreatedAt.UTC(), ts(rec.ExpiresAt), ts(rec.RevokedAt), ts(rec.LastUsedAt)); err != nil {
		return err
	}
	_, err := e.exec(ctx, "put token "+rec.ID, `INSERT INTO pat_hashes (hash, tenant_id, pat_id) VALUES ($1, $2, $3)`,
		rec.Hash[:], rec.Tenant, rec.ID)
	return err
}

func (e executor) PATGet(ctx context.Context, tenant, id string, hash [32]byte) (auth.PATRecord, error) {
	return scanPAT(e.tx.QueryRow(ctx, `SELECT `+patColumns+` FROM pats WHERE tenant_id = $1 AND pat_id = $2 AND hash = $3`,
		tenant, id, hash[:]))
}

func (e executor) PATList(ctx context.Context, tenant string) ([]auth.PATRecord, error) {
	rows, err := e.tx.Query(ctx, `SELECT `+patColumns+` FROM pats WHERE tenant_id = $1 ORDER BY created_at, pat_id`, tenant)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: list tokens: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (auth.PATRecord, error) { return scanPAT(r) })
}

func (e executor) PATRevoke(ctx context.Context, tenant, id string, at time.Time) (bool, error) {
	n, err := e.exec(ctx, "revoke token "+id, `UPDATE pats SET revoked_at = $1 WHERE tenant_id = $2 AND pat_id = $3`, ts(at), tenant, id)
	return n > 0, err
}

func (e executor) PATTouch(ctx context.Context, tenant, id string, at time.Time) (bool, error) {
	n, err := e.exec(ctx, "touch token "+id, `UPDATE pats SET last_used_at = $1 WHERE tenant_id = $2 AND pat_id = $3`, ts(at), tenant, id)
	return n > 0, err
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
		return auth.PATRecord{}, store.ErrNotFound
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
