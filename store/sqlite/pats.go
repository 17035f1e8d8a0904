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

// PATPut implements auth.PATStore. A duplicate id (per tenant) or hash is an
// error.
func (s *DB) PATPut(ctx context.Context, rec auth.PATRecord) error {
	if rec.Tenant == "" || rec.ID == "" {
		return errors.New("store/sqlite: a token needs a tenant and an id")
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO pats (`+patColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		rec.Tenant, rec.ID, rec.Name, joinScopes(rec.Scopes), rec.Hash[:], ms(rec.CreatedAt), ms(rec.ExpiresAt),
		ms(rec.RevokedAt), ms(rec.LastUsedAt))
	if err != nil {
		return fmt.Errorf("store/sqlite: put token %s: %w", rec.ID, err)
	}
	return nil
}

// PATGetByHash implements auth.PATStore: the one lookup not scoped by tenant.
func (s *DB) PATGetByHash(ctx context.Context, hash [32]byte) (auth.PATRecord, error) {
	return scanPAT(s.db.QueryRowContext(ctx, `SELECT `+patColumns+` FROM pats WHERE hash = ?`, hash[:]))
}

// PATList implements auth.PATStore, oldest first.
func (s *DB) PATList(ctx context.Context, tenant string) ([]auth.PATRecord, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+patColumns+` FROM pats WHERE tenant_id = ? ORDER BY created_at, pat_id`, tenant)
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

// PATRevoke implements auth.PATStore.
func (s *DB) PATRevoke(ctx context.Context, tenant, id string, at time.Time) error {
	return s.patSet(ctx, `revoked_at`, tenant, id, at)
}

// PATTouch implements auth.PATToucher.
func (s *DB) PATTouch(ctx context.Context, tenant, id string, at time.Time) error {
	return s.patSet(ctx, `last_used_at`, tenant, id, at)
}

// patSet sets one time column; col is a constant chosen by the caller.
func (s *DB) patSet(ctx context.Context, col, tenant, id string, at time.Time) error {
	r, err := s.db.ExecContext(ctx, `UPDATE pats SET `+col+` = ? WHERE tenant_id = ? AND pat_id = ?`, ms(at), tenant, id)
	if err != nil {
		return fmt.Errorf("store/sqlite: update token %s: %w", id, err)
	}
	if n, _ := r.RowsAffected(); n == 0 {
		return auth.ErrNotFound
	}
	return nil
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
		return auth.PATRecord{}, auth.ErrNotFound
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
