package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bastion-mcp/bastion/targets"
)

var _ targets.Store = (*DB)(nil)

const targetColumns = `tenant_id, host, token, method, created_at, verified_at, expires_at`

// TargetPut implements targets.Store: an upsert by (tenant, host).
func (db *DB) TargetPut(ctx context.Context, t targets.Target) error {
	if t.Tenant == "" || t.Host == "" {
		return errors.New("store/postgres: target needs a tenant and a host")
	}
	return db.inTenant(ctx, t.Tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO targets (`+targetColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (tenant_id, host) DO UPDATE SET token = excluded.token, method = excluded.method,
				created_at = excluded.created_at, verified_at = excluded.verified_at, expires_at = excluded.expires_at`,
			t.Tenant, t.Host, t.Token, t.Method, ts(t.CreatedAt), ts(t.VerifiedAt), ts(t.ExpiresAt))
		if err != nil {
			return fmt.Errorf("store/postgres: put target: %w", err)
		}
		return nil
	})
}

func scanTarget(row pgx.Row) (targets.Target, error) {
	var (
		t                         targets.Target
		created, verified, expire *time.Time
	)
	err := row.Scan(&t.Tenant, &t.Host, &t.Token, &t.Method, &created, &verified, &expire)
	if errors.Is(err, pgx.ErrNoRows) {
		return targets.Target{}, targets.ErrNotFound
	}
	if err != nil {
		return targets.Target{}, fmt.Errorf("store/postgres: scan target: %w", err)
	}
	t.CreatedAt, t.VerifiedAt, t.ExpiresAt = fromTS(created), fromTS(verified), fromTS(expire)
	return t, nil
}

// TargetGet implements targets.Store; a missing target is targets.ErrNotFound.
func (db *DB) TargetGet(ctx context.Context, tenant, host string) (targets.Target, error) {
	var out targets.Target
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) (err error) {
		out, err = scanTarget(tx.QueryRow(ctx, `SELECT `+targetColumns+` FROM targets WHERE tenant_id = $1 AND host = $2`, tenant, host))
		return err
	})
	return out, err
}

// TargetList implements targets.Store, ordered by host.
func (db *DB) TargetList(ctx context.Context, tenant string) ([]targets.Target, error) {
	var out []targets.Target
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+targetColumns+` FROM targets WHERE tenant_id = $1 ORDER BY host`, tenant)
		if err != nil {
			return fmt.Errorf("store/postgres: list targets: %w", err)
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (targets.Target, error) { return scanTarget(r) })
		return err
	})
	return out, err
}

// TargetDelete implements targets.Store; a missing target is targets.ErrNotFound.
func (db *DB) TargetDelete(ctx context.Context, tenant, host string) error {
	return db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM targets WHERE tenant_id = $1 AND host = $2`, tenant, host)
		if err != nil {
			return fmt.Errorf("store/postgres: delete target: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return targets.ErrNotFound
		}
		return nil
	})
}
