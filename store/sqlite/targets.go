package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bastion-mcp/bastion/store"
	"github.com/bastion-mcp/bastion/targets"
)

var _ targets.Store = (*DB)(nil)

const targetColumns = `tenant_id, host, token, method, created_at, verified_at, expires_at`

func (e executor) TargetUpsert(ctx context.Context, t *targets.Target) error {
	_, err := e.exec(ctx, "put target", `INSERT INTO targets (`+targetColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, host) DO UPDATE SET token = excluded.token, method = excluded.method,
			created_at = excluded.created_at, verified_at = excluded.verified_at, expires_at = excluded.expires_at`,
		t.Tenant, t.Host, t.Token, t.Method, ms(t.CreatedAt), ms(t.VerifiedAt), ms(t.ExpiresAt))
	return err
}

func scanTarget(row interface{ Scan(...any) error }) (targets.Target, error) {
	var (
		t                         targets.Target
		created, verified, expire int64
	)
	err := row.Scan(&t.Tenant, &t.Host, &t.Token, &t.Method, &created, &verified, &expire)
	if errors.Is(err, sql.ErrNoRows) {
		return targets.Target{}, store.ErrNotFound
	}
	if err != nil {
		return targets.Target{}, fmt.Errorf("store/sqlite: scan target: %w", err)
	}
	t.CreatedAt, t.VerifiedAt, t.ExpiresAt = fromMS(created), fromMS(verified), fromMS(expire)
	return t, nil
}

func (e executor) TargetGet(ctx context.Context, tenant, host string) (targets.Target, error) {
	return scanTarget(e.q.QueryRowContext(ctx, `SELECT `+targetColumns+` FROM targets WHERE tenant_id = ? AND host = ?`, tenant, host))
}

func (e executor) TargetList(ctx context.Context, tenant string) ([]targets.Target, error) {
	rows, err := e.q.QueryContext(ctx, `SELECT `+targetColumns+` FROM targets WHERE tenant_id = ? ORDER BY host`, tenant)
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

func (e executor) TargetDelete(ctx context.Context, tenant, host string) (bool, error) {
	n, err := e.exec(ctx, "delete target", `DELETE FROM targets WHERE tenant_id = ? AND host = ?`, tenant, host)
	return n > 0, err
}
