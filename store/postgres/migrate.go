package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"

	"github.com/bastion-mcp/bastion/store/migration"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// Advisory lock keys: bastion's migrations (transaction-level) and River's
// (session-level). Arbitrary constants, fixed forever.
const (
	migrateLockKey      int64 = 0x62617374696f6e01 // "bastion" + 1
	riverMigrateLockKey int64 = 0x62617374696f6e02
)

// ErrMigrationChanged is matched (errors.Is) when an applied migration's
// file differs from the one this binary carries.
var ErrMigrationChanged = migration.ErrChanged

// ErrMigrationsPending is matched (errors.Is) by *MigrationsPendingError.
var ErrMigrationsPending = errors.New("store/postgres: migrations are pending")

// MigrationsPendingError reports a database whose schema is behind this
// binary while no migrating role was given (Options.MigrateURL).
type MigrationsPendingError struct {
	Pending []string // bastion's migration ids, then "river: …" for River's
}

func (e *MigrationsPendingError) Error() string {
	return "store/postgres: migrations are pending (" + strings.Join(e.Pending, ", ") +
		"); the serving role does not migrate: connect once with the owner role (Options.MigrateURL)"
}

// Is reports whether target is ErrMigrationsPending.
func (e *MigrationsPendingError) Is(target error) bool { return target == ErrMigrationsPending }

// migrateOrCheck migrates through opts.MigrateURL when there is one.
// Without it, it reads the migration state as the serving role (no DDL:
// CREATE TABLE IF NOT EXISTS needs CREATE on the schema even when the table
// exists) and refuses pending migrations, unless UnsafeAllowOwnerRole lets
// the serving role, then presumably the owner, apply them.
func (db *DB) migrateOrCheck(ctx context.Context, opts Options, role string, migs fs.FS) error {
	if opts.MigrateURL != "" {
		return migrate(ctx, opts.MigrateURL, role, migs, db.log)
	}
	pending, err := db.pendingMigrations(ctx, migs)
	if err != nil {
		return err
	}
	if len(pending) == 0 {
		return nil
	}
	if !opts.UnsafeAllowOwnerRole {
		return &MigrationsPendingError{Pending: pending}
	}
	return migrate(ctx, db.pool.Config().ConnString(), role, migs, db.log)
}

// pendingMigrations lists the migrations, bastion's and River's, that the
// database lacks, reading only. A changed applied migration is
// ErrMigrationChanged.
func (db *DB) pendingMigrations(ctx context.Context, fsys fs.FS) ([]string, error) {
	migs, err := migration.Load(fsys)
	if err != nil {
		return nil, err
	}
	applied := map[string]string{}
	var exists bool
	if err := db.pool.QueryRow(ctx, `SELECT to_regclass('bastion_schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return nil, fmt.Errorf("store/postgres: read the migration state: %w", err)
	}
	if exists {
		rows, err := db.pool.Query(ctx, `SELECT id, checksum FROM bastion_schema_migrations`)
		if err != nil {
			return nil, fmt.Errorf("store/postgres: read the migration state: %w", err)
		}
		var id, sum string
		if _, err := pgx.ForEachRow(rows, []any{&id, &sum}, func() error { applied[id] = sum; return nil }); err != nil {
			return nil, fmt.Errorf("store/postgres: read the migration state: %w", err)
		}
	}
	todo, err := migration.Pending(migs, applied)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: %w", err)
	}
	var pending []string
	for _, m := range todo {
		pending = append(pending, m.ID)
	}
	rm, err := rivermigrate.New(riverpgxv5.New(db.pool), &rivermigrate.Config{Logger: db.log})
	if err != nil {
		return nil, fmt.Errorf("store/postgres: river migrator: %w", err)
	}
	res, err := rm.Validate(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: read River's migration state: %w", err)
	}
	if !res.OK {
		pending = append(pending, "river: "+strings.Join(res.Messages, "; "))
	}
	return pending, nil
}

// migrate brings River's and bastion's schemas up to date as the owner role
// and grants appRole what serving needs.
func migrate(ctx context.Context, ownerURL, appRole string, fsys fs.FS, logger *slog.Logger) error {
	migs, err := migration.Load(fsys)
	if err != nil {
		return err
	}
	cfg, err := pgxpool.ParseConfig(ownerURL)
	if err != nil {
		return errors.New("store/postgres: malformed migration URL")
	}
	cfg.MaxConns = 3 // the lock holder plus River's migrator
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("store/postgres: connect to migrate: %w", err)
	}
	defer pool.Close()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("store/postgres: connect to migrate: %w", err)
	}
	defer conn.Release()
	if err := migrateRiver(ctx, pool, conn, logger); err != nil {
		return err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("store/postgres: migrate: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := migrateTx(ctx, tx, migs); err != nil {
		return err
	}
	if err := grant(ctx, tx, appRole); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("store/postgres: migrate: %w", err)
	}
	return nil
}

// migrateRiver runs River's migrations. Some of them cannot share one
// transaction, so they run in River's own, serialized between replicas by a
// session-level advisory lock held on conn.
func migrateRiver(ctx context.Context, pool *pgxpool.Pool, conn *pgxpool.Conn, logger *slog.Logger) error {
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, riverMigrateLockKey); err != nil {
		return fmt.Errorf("store/postgres: river migrations: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, riverMigrateLockKey)
	rm, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: logger})
	if err != nil {
		return fmt.Errorf("store/postgres: river migrator: %w", err)
	}
	if _, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("store/postgres: river migrations: %w", err)
	}
	return nil
}

// migrateTx applies bastion's pending migrations inside tx under a
// transaction-level advisory lock: a second replica waits for the first to
// commit, then finds nothing to do.
func migrateTx(ctx context.Context, tx pgx.Tx, migs []migration.File) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLockKey); err != nil {
		return fmt.Errorf("store/postgres: migrate: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS bastion_schema_migrations (
		id         text        PRIMARY KEY,
		checksum   text        NOT NULL CHECK (checksum ~ '^sha256:[0-9a-f]{64}$'),
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("store/postgres: migrate: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT id, checksum FROM bastion_schema_migrations`)
	if err != nil {
		return fmt.Errorf("store/postgres: migrate: %w", err)
	}
	applied := map[string]string{}
	var id, sum string
	if _, err := pgx.ForEachRow(rows, []any{&id, &sum}, func() error { applied[id] = sum; return nil }); err != nil {
		return fmt.Errorf("store/postgres: migrate: %w", err)
	}
	pending, err := migration.Pending(migs, applied)
	if err != nil {
		return fmt.Errorf("store/postgres: %w", err)
	}
	for _, m := range pending {
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("store/postgres: apply migration %s: %w", m.ID, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO bastion_schema_migrations (id, checksum) VALUES ($1, $2)`, m.ID, m.Sum); err != nil {
			return fmt.Errorf("store/postgres: record migration %s: %w", m.ID, err)
		}
	}
	return nil
}

// appGrants are the serving role's privileges on bastion's tables: DML on
// tenant data, registration (not deletion) in the tenants directory, and
// insertion (not reading) of token hashes, which it reads only through
// bastion_pat_lookup.
var appGrants = []struct{ privileges, table string }{
	{"SELECT, INSERT, UPDATE, DELETE", "jobs"},
	{"SELECT, INSERT, UPDATE, DELETE", "tenant_balances"},
	{"SELECT, INSERT, UPDATE, DELETE", "recheck_events"},
	{"SELECT, INSERT, UPDATE, DELETE", "evidence"},
	{"SELECT, INSERT, UPDATE, DELETE", "targets"},
	{"SELECT, INSERT, UPDATE, DELETE", "pats"},
	{"SELECT, INSERT, UPDATE, DELETE", "feedback_events"},
	{"SELECT, INSERT", "tenants"},
	{"INSERT", "pat_hashes"},
	{"SELECT", "bastion_schema_migrations"}, // readiness: DB.Migrated
}

// grant gives role what serving needs, idempotently: usage of the schema,
// appGrants, the token lookup function, and DML on River's tables and
// sequences. Nothing when role is the migrating role itself.
func grant(ctx context.Context, tx pgx.Tx, role string) error {
	var (
		self   bool
		schema string
	)
	if err := tx.QueryRow(ctx, `SELECT current_user = $1, current_schema()`, role).Scan(&self, &schema); err != nil {
		return fmt.Errorf("store/postgres: grant: %w", err)
	}
	if self {
		return nil
	}
	r := pgx.Identifier{role}.Sanitize()
	stmts := []string{
		`GRANT USAGE ON SCHEMA ` + pgx.Identifier{schema}.Sanitize() + ` TO ` + r,
		`GRANT EXECUTE ON FUNCTION bastion_pat_lookup(bytea) TO ` + r,
	}
	for _, g := range appGrants {
		stmts = append(stmts, `GRANT `+g.privileges+` ON TABLE `+pgx.Identifier{g.table}.Sanitize()+` TO `+r)
	}
	rows, err := tx.Query(ctx, `SELECT c.relname, c.relkind = 'S' FROM pg_class c
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p', 'S') AND c.relname LIKE 'river\_%'
		ORDER BY c.relname`)
	if err != nil {
		return fmt.Errorf("store/postgres: grant: %w", err)
	}
	var (
		name string
		seq  bool
	)
	if _, err := pgx.ForEachRow(rows, []any{&name, &seq}, func() error {
		if seq {
			stmts = append(stmts, `GRANT USAGE, SELECT, UPDATE ON SEQUENCE `+pgx.Identifier{name}.Sanitize()+` TO `+r)
		} else {
			stmts = append(stmts, `GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE `+pgx.Identifier{name}.Sanitize()+` TO `+r)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("store/postgres: grant: %w", err)
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("store/postgres: grant to %s: %w", r, err)
		}
	}
	return nil
}
