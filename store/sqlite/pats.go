package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/store"
)

var _ store.PATStore = (*DB)(nil)

const patColumns = `tenant_id, pat_id, name, scopes, hash, created_at, expires_at, revoked_at, last_used_at`

// PATLookup reads the pats table itself: one file has no tenant binding to
// step around, and hash is unique across tenants.
func (d driver) PATLookup(ctx context.Context, hash [32]byte) (string, string, error) {
	var tenant, id string
	err := d.rd.QueryRowContext(ctx, `SELECT tenant_id, pat_id FROM pats WHERE hash = ?`, hash[:]).Scan(&tenant, &id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", store.ErrNotFound
	}
	if err != nil {
		return "", "", fmt.Errorf("store/sqlite: token lookup: %w", err)
	}
	return tenant, id, nil
}

func (e executor) PATInsert(ctx context.Context, rec *auth.PATRecord) error {
	_, err := e.exec(ctx, "put token "+rec.ID, `INSERT INTO pats (`+patColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		rec.Tenant, rec.ID, rec.Name, joinScopes(rec.Scopes), rec.Hash[:], ms(rec.CreatedAt), ms(rec.ExpiresAt),
		ms(rec.RevokedAt), ms(rec.LastUsedAt))
	return err
}

func (e executor) PATGet(ctx context.Context, tenant, id string, hash [32]byte) (auth.PATRecord, error) {
	return scanPAT(e.q.QueryRowContext(ctx, `SELECT `+patColumns+` FROM pats WHERE tenant_id = ? AND pat_id = ? AND hash = ?`,
		tenant, id, hash[:]))
}

func (e executor) PATList(ctx context.Context, tenant string) ([]auth.PATRecord, error) {
	rows, err := e.q.QueryContext(ctx, `SELECT `+patColumns+` FROM pats WHERE tenant_id = ? ORDER BY created_at, pat_id`, tenant)
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: list tokens: %w", err)
	}
	defer rows.Close()
	var out []auth.PATRecord
	for rows.Next() {
		rec, err := scanPAT(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, rows.Err()
}

func (e executor) PATRevoke(ctx context.Context, tenant, id string, at time.Time) (bool, error) {
	n, err := e.exec(ctx, "revoke token "+id, `UPDATE pats SET revoked_at = ? WHERE tenant_id = ? AND pat_id = ?`, ms(at), tenant, id)
	return n > 0, err
}

func (e executor) PATTouch(ctx context.Context, tenant, id string, at time.Time) (bool, error) {
	n, err := e.exec(ctx, "touch token "+id, `UPDATE pats SET last_used_at = ? WHERE tenant_id = ? AND pat_id = ?`, ms(at), tenant, id)
	return n > 0, err
}

func scanPAT(row interface{ Scan(...any) error }) (auth.PATRecord, error) {
	var (
		rec                                auth.PATRecord
		scopes                             string
		hash                               []byte
		created, expires, revoked, touched int64
	)
	err := row.Scan(&rec.Tenant, &rec.ID, &rec.Name, &scopes, &hash, &created, &expires, &revoked, &touched)
	if errors.Is(err, sql.ErrNoRows) {
		return auth.PATRecord{}, store.ErrNotFound
	}
	if err != nil {
		return auth.PATRecord{}, fmt.Errorf("store/sqlite: scan token: %w", err)
	}
	if len(hash) != len(rec.Hash) {
		return auth.PATRecord{}, fmt.Errorf("store/sqlite: token %s has a %d-byte hash", rec.ID, len(hash))
	}
	copy(rec.Hash[:], hash)
	rec.Scopes = splitScopes(scopes)
	rec.CreatedAt, rec.ExpiresAt, rec.RevokedAt, rec.LastUsedAt = fromMS(created), fromMS(expires), fromMS(revoked), fromMS(touched)
	return rec, nil
}

func joinScopes(scopes []principal.Scope) string {
	ss := make([]string, len(scopes))
	for i, s := range scopes {
		ss[i] = string(s)
	}
	return strings.Join(ss, " ")
}

func splitScopes(s string) []principal.Scope {
	var out []principal.Scope
	for f := range strings.FieldsSeq(s) {
		out = append(out, principal.Scope(f))
	}
	return out
}
