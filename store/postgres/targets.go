package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bastion-mcp/bastion/store"
	"github.com/bastion-mcp/bastion/targets"
)

var _ targets.Store = (*DB)(nil)

const targetColumns = `tenant_id, host, token, method, created_at, verified_at, expires_at`

func (e executor) TargetUpsert(ctx context.Context, t *targets.Target) error {
	_, err := e.exec(ctx, "put target", `INSERT INTO targets (`+targetColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (tenant_id, host) DO UPDATE SET token = excluded.token, method = excluded.method,
			created_at = excluded.created_at, verified_at = excluded.verified_at, expires_at = excluded.expires_at`,
		t.Tenant, t.Host, t.Token, t.Method, ts(t.CreatedAt), ts(t.VerifiedAt), ts(t.ExpiresAt))
	return err
}

func scanTarget(row pgx.Row) (targets.Target, error) {
	var (
		t                         targets.Target
		created, verified, expire *time.Time
	)
	err := row.Scan(&t.Tenant, &t.Host, &t.Token, &t.Method, &created, &verified, &expire)
	if errors.Is(err, pgx.ErrNoRows) {
		return targets.Target{}, store.ErrNotFound
	}
	if err != nil {
		return targets.Target{}, fmt.Errorf("store/postgres: scan target: %w", err)
	}
	t.CreatedAt, t.VerifiedAt, t.ExpiresAt = fromTS(created), fromTS(verified), fromTS(expire)
	return t, nil
}

func (e executor) TargetGet(ctx context.Context, tenant, host string) (targets.Target, error) {
	return scanTarget(e.tx.QueryRow(ctx, `SELECT `+targetColumns+` FROM targets WHERE tenant_id = $1 AND host = $2`, tenant, host))
}

func (e executor) TargetList(ctx context.Context, tenant string) ([]targets.Target, error) {
	rows, err := e.tx.Query(ctx, `SELECT `+targetColumns+` FROM targets WHERE tenant_id = $1 ORDER BY host`, tenant)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: list targets: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (targets.Target, error) { return scanTarget(r) })
	if err != nil {
		return nil, fmt.Errorf("store/postgres: list targets: %w", err)
	}
	return out, nil
}

func (e executor) TargetDelete(ctx context.Context, tenant, host string) (bool, error) {
	n, err := e.exec(ctx, "delete target", `DELETE FROM targets WHERE tenant_id = $1 AND host = $2`, tenant, host)
	return n > 0, err
}
