package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bastion-mcp/bastion/targets"
)

var _ targets.Store = (*DB)(nil)

// TargetPut implements targets.Store: an upsert by (tenant, host).
func (s *DB) TargetPut(ctx context.Context, t targets.Target) error {
	if t.Tenant == "" || t.Host == "" {
		return errors.New("store/sqlite: target needs a tenant and a host")
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO targets (tenant_id, host, token, method, created_at, verified_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, host) DO UPDATE SET token = excluded.token, method = excluded.method,
			created_at = excluded.created_at, verified_at = excluded.verified_at, expires_at = excluded.expires_at`,
		t.Tenant, t.Host, t.Token, t.Method, ms(t.CreatedAt), ms(t.VerifiedAt), ms(t.ExpiresAt))
	if err != nil {
		return fmt.Errorf("store/sqlite: put target: %w", err)
	}
	return nil
}

func scanTarget(row interface{ Scan(...any) error }) (targets.Target, error) {
	var (
		t                         targets.Target
		created, verified, expire int64
	)
	err := row.Scan(&t.Tenant, &t.Host, &t.Token, &t.Method, &created, &verified, &expire)
	if errors.Is(err, sql.ErrNoRows) {
		return targets.Target{}, targets.ErrNotFound
	}
	if err != nil {
		return targets.Target{}, fmt.Errorf("store/sqlite: scan target: %w", err)
	}
	t.CreatedAt, t.VerifiedAt, t.ExpiresAt = fromMS(created), fromMS(verified), fromMS(expire)
	return t, nil
}

const targetColumns = `tenant_id, host, token, method, created_at, verified_at, expires_at`

// TargetGet implements targets.Store; a missing target is targets.ErrNotFound.
func (s *DB) TargetGet(ctx context.Context, tenant, host string) (targets.Target, error) {
	return scanTarget(s.db.QueryRowContext(ctx, `SELECT `+targetColumns+` FROM targets WHERE tenant_id = ? AND host = ?`, tenant, host))
}

// TargetList implements targets.Store, ordered by host.
func (s *DB) TargetList(ctx context.Context, tenant string) ([]targets.Target, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+targetColumns+` FROM targets WHERE tenant_id = ? ORDER BY host`, tenant)
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: list targets: %w", err)
	}
	defer rows.Close()
	var out []targets.Target
	for rows.Next() {
		t, err := scanTarget(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// TargetDelete implements targets.Store; a missing target is targets.ErrNotFound.
func (s *DB) TargetDelete(ctx context.Context, tenant, host string) error {
	r, err := s.db.ExecContext(ctx, `DELETE FROM targets WHERE tenant_id = ? AND host = ?`, tenant, host)
	if err != nil {
		return fmt.Errorf("store/sqlite: delete target: %w", err)
	}
	if n, _ := r.RowsAffected(); n == 0 {
		return targets.ErrNotFound
	}
	return nil
}
