// Package postgres is the store.Store for many replicas: bastion's tables and
// River's on one PostgreSQL database through pgx, so a review row and its
// River job commit in one transaction and any replica can serve any job.
//
// Invariants:
//
//   - Tenant isolation is enforced by the database, not only by the queries.
//     Every bastion table is tenant-keyed with row-level security ENABLED and
//     FORCED (so even the table owner is bound) under a policy that admits a
//     row only while the transaction's app.tenant_id names its tenant. Every
//     store operation runs in a transaction that first binds app.tenant_id
//     with set_config(…, true), so the binding ends with the transaction and
//     never leaks to the next user of a pooled connection. Queries also say
//     tenant_id = $n: the policy is the second lock, not the only one.
//   - The serving role cannot step around the policies. Open refuses (with an
//     *UnsafeRoleError) a serving role that is a superuser, has BYPASSRLS, or
//     owns (or may become the owner of) a bastion table, unless
//     Options.UnsafeAllowOwnerRole says otherwise for development. The
//     intended split: an owner role (Options.MigrateURL) creates the schema
//     and grants the serving role DML only; CreateAppRole makes such a role.
//   - Migrations are embedded, checksum-pinned ("sha256:" + hex of the file)
//     and applied in one transaction under pg_advisory_xact_lock, so replicas
//     starting together apply each once. A file changed after it was applied
//     fails Open (ErrMigrationChanged); an applied id this binary does not
//     know (a newer binary's) is tolerated so a rollback keeps working.
//     River's own migrations run first, serialized between replicas by a
//     session-level advisory lock (some of them cannot share a transaction).
//     Only the owner (Options.MigrateURL) migrates: without it the serving
//     role, which needs no DDL right, reads the migration state and Open
//     refuses pending migrations (*MigrationsPendingError).
//
// Two operations cross tenants, each through a narrow door:
//
//   - JobSweep (run by every replica's sweeper) lists the tenants directory,
//     which holds tenant ids and nothing else and is the one table the
//     serving role may read unbound, then sweeps each tenant in its own
//     transaction bound to that tenant. So the sweeper needs no BYPASSRLS
//     and every row it touches passes the same policy as a request's. (A
//     SECURITY DEFINER sweep was rejected: FORCE binds the owner too, so the
//     function would see nothing unless the owner were exempted by a policy,
//     which would make FORCE decorative for the owner role.) The cost is a
//     transaction per known tenant per sweep.
//   - PATGetByHash runs before any tenant is known. The serving role may
//     insert into pat_hashes (hash → tenant, id) but not read it; it calls
//     bastion_pat_lookup(hash), a SECURITY DEFINER function owned by the
//     table owner that answers for one exact hash, then reads the record
//     from pats with that tenant bound. It cannot enumerate tokens.
//
// Limits: River's tables (river_*) are not tenant-keyed; they hold only
// (tenant, job id) job arguments and River's bookkeeping, never page or user
// data. River's periodic reindexer needs table ownership and fails (logged by
// River, harmless) under the serving role.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"strings"

	"github.com/bastion-mcp/bastion/store"
	"github.com/bastion-mcp/bastion/store/migration"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var embedded embed.FS

// Options tunes Open. The zero value needs a serving URL that is also
// allowed to migrate, which Open refuses: production sets MigrateURL.
type Options struct {
	// MigrateURL connects as the role that owns bastion's tables: Open runs
	// the migrations and the serving role's grants through it. Empty means
	// the serving URL, whose role then owns the tables and is refused unless
	// UnsafeAllowOwnerRole is set.
	MigrateURL string
	// UnsafeAllowOwnerRole lets the serving role own the tables, be a
	// superuser or have BYPASSRLS, any of which makes row-level security
	// protect nothing. For development on a single-user database only; Open
	// logs a warning when it matters.
	UnsafeAllowOwnerRole bool
	// MaxConns bounds the serving pool. Zero means 10.
	MaxConns int32
	// Migrations replaces the embedded migrations (files named
	// NNNN_name.sql at the root of the FS). Nil means the embedded set;
	// tests use it.
	Migrations fs.FS
	// Logger receives start-up warnings and River migration logs. Nil
	// discards them.
	Logger *slog.Logger
}

// DB is a store.Store and store.PATStore on PostgreSQL. It is safe for
// concurrent use by many goroutines and many processes. Its methods are
// store.Jobs, store.Targets, store.PATs and store.Feedback over this database's driver.
type DB struct {
	store.Jobs
	store.Targets
	store.PATs
	store.Feedback
	pool *pgxpool.Pool
	log  *slog.Logger
	migs fs.FS // the migrations this binary carries
}

// ErrUnsafeRole is matched (errors.Is) by *UnsafeRoleError.
var ErrUnsafeRole = errors.New("store/postgres: the serving role bypasses row-level security")

// UnsafeRoleError reports a serving role under which row-level security
// would protect nothing.
type UnsafeRoleError struct {
	Role    string
	Reasons []string // e.g. "is a superuser", "has BYPASSRLS", "owns (…) tables jobs, …"
}

func (e *UnsafeRoleError) Error() string {
	return fmt.Sprintf("store/postgres: refusing to serve as role %q: it %s, so row-level security would not isolate tenants; "+
		"serve as a role granted DML only (see postgres.CreateAppRole) and migrate with the owner role (Options.MigrateURL)",
		e.Role, strings.Join(e.Reasons, " and "))
}

// Is reports whether target is ErrUnsafeRole.
func (e *UnsafeRoleError) Is(target error) bool { return target == ErrUnsafeRole }

// Open connects to the database at url as the serving role, migrates
// bastion's and River's schemas through Options.MigrateURL, grants the
// serving role what it needs, and checks that the role cannot bypass
// row-level security. Without a MigrateURL the serving role needs no DDL
// right: Open only reads the migration state and refuses, with a
// *MigrationsPendingError, a database with migrations still to apply
// (unless UnsafeAllowOwnerRole lets the serving role apply them itself).
func Open(ctx context.Context, url string, opts Options) (*DB, error) {
	if url == "" {
		return nil, errors.New("store/postgres: empty database URL")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors can quote the URL, password included.
		return nil, errors.New("store/postgres: malformed database URL")
	}
	cfg.MaxConns = opts.MaxConns
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 10
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: connect: %w", err)
	}
	db := &DB{pool: pool, log: logger}
	d := driver{db: db}
	db.Jobs, db.Targets, db.PATs = store.Jobs{Driver: d}, store.Targets{Driver: d}, store.PATs{Driver: d}
	db.Feedback = store.Feedback{Driver: d}
	if err := db.open(ctx, opts); err != nil {
		pool.Close()
		return nil, err
	}
	return db, nil
}

func (db *DB) open(ctx context.Context, opts Options) error {
	var (
		role          string
		super, bypass bool
	)
	if err := db.pool.QueryRow(ctx, `SELECT current_user, r.rolsuper, r.rolbypassrls FROM pg_roles r WHERE r.rolname = current_user`).
		Scan(&role, &super, &bypass); err != nil {
		return fmt.Errorf("store/postgres: connect: %w", err)
	}
	var reasons []string
	if super {
		reasons = append(reasons, "is a superuser")
	}
	if bypass {
		reasons = append(reasons, "has BYPASSRLS")
	}
	// Neither attribute is inherited, but a member may SET ROLE to a role
	// that has one.
	var escalates bool
	if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles r
		WHERE (r.rolsuper OR r.rolbypassrls) AND r.rolname <> current_user AND pg_has_role(current_user, r.oid, 'MEMBER'))`).
		Scan(&escalates); err != nil {
		return fmt.Errorf("store/postgres: connect: %w", err)
	}
	if escalates {
		reasons = append(reasons, "can SET ROLE to a superuser or BYPASSRLS role")
	}
	// Refuse before touching the schema when the role alone disqualifies it.
	if len(reasons) > 0 && !opts.UnsafeAllowOwnerRole {
		return &UnsafeRoleError{Role: role, Reasons: reasons}
	}
	migs := opts.Migrations
	if migs == nil {
		sub, err := fs.Sub(embedded, "migrations")
		if err != nil {
			return fmt.Errorf("store/postgres: %w", err)
		}
		migs = sub
	}
	db.migs = migs
	if err := db.migrateOrCheck(ctx, opts, role, migs); err != nil {
		return err
	}
	owned, err := db.checkTables(ctx)
	if err != nil {
		return err
	}
	if len(owned) > 0 {
		reasons = append(reasons, "owns (or may act as the owner of) tables "+strings.Join(owned, ", "))
	}
	if len(reasons) == 0 {
		return nil
	}
	if !opts.UnsafeAllowOwnerRole {
		return &UnsafeRoleError{Role: role, Reasons: reasons}
	}
	db.log.Warn("store/postgres: UNSAFE: serving role bypasses row-level security; tenant isolation rests on the queries alone",
		"role", role, "reasons", strings.Join(reasons, ", "))
	return nil
}

// appTables are bastion's tables: each must have row-level security enabled
// and forced. TestEveryTableIsForced keeps the list complete.
var appTables = []string{"tenants", "jobs", "tenant_balances", "recheck_events", "evidence", "targets", "pats", "pat_hashes", "feedback_events"}

// checkTables verifies every bastion table is under forced row-level
// security and returns those the serving role owns or may act as owner of.
func (db *DB) checkTables(ctx context.Context) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT t.name, c.oid IS NOT NULL,
			coalesce(c.relrowsecurity AND c.relforcerowsecurity, false),
			coalesce(pg_has_role(current_user, c.relowner, 'MEMBER'), false)
		FROM unnest($1::text[]) WITH ORDINALITY AS t(name, n) LEFT JOIN pg_class c ON c.oid = to_regclass(t.name)
		ORDER BY t.n`, appTables)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: check tables: %w", err)
	}
	defer rows.Close()
	var owned []string
	for rows.Next() {
		var (
			name                 string
			exists, forced, owns bool
		)
		if err := rows.Scan(&name, &exists, &forced, &owns); err != nil {
			return nil, fmt.Errorf("store/postgres: check tables: %w", err)
		}
		switch {
		case !exists:
			return nil, fmt.Errorf("store/postgres: table %s is missing or not visible to the serving role", name)
		case !forced:
			return nil, fmt.Errorf("store/postgres: table %s does not have row-level security enabled and forced", name)
		case owns:
			owned = append(owned, name)
		}
	}
	return owned, rows.Err()
}

// beginTenant opens a transaction bound to tenant: app.tenant_id is set for
// this transaction only, so every row-level security policy admits the
// tenant's rows and no other, and the binding never outlives it on a pooled
// connection.
func (db *DB) beginTenant(ctx context.Context, tenant string) (pgx.Tx, error) {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: begin: %w", err)
	}
	if _, err := tx.Exec(ctx, `SELECT set_config('app.tenant_id', $1, true)`, tenant); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("store/postgres: bind tenant: %w", err)
	}
	return tx, nil
}

// inTenant runs fn in a transaction bound to tenant and commits when fn
// returns nil.
func (db *DB) inTenant(ctx context.Context, tenant string, fn func(tx pgx.Tx) error) error {
	tx, err := db.beginTenant(ctx, tenant)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) // a no-op after Commit
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("store/postgres: commit: %w", err)
	}
	return nil
}

// Pool returns the serving pool, for River (riverpgxv5.New(db.Pool())).
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Ping checks the database answers and bastion's schema is visible, for a
// readiness probe.
func (db *DB) Ping(ctx context.Context) error {
	if _, err := db.pool.Exec(ctx, `SELECT 1 FROM jobs LIMIT 0`); err != nil {
		return fmt.Errorf("store/postgres: ping: %w", err)
	}
	return nil
}

// Migrated reports whether every migration this binary carries is applied
// unchanged, for readiness: a database restored from an older backup, or
// changed under a running replica, is not ready.
func (db *DB) Migrated(ctx context.Context) error {
	files, err := migration.Load(db.migs)
	if err != nil {
		return fmt.Errorf("store/postgres: %w", err)
	}
	rows, err := db.pool.Query(ctx, `SELECT id, checksum FROM bastion_schema_migrations`)
	if err != nil {
		return fmt.Errorf("store/postgres: %w", err)
	}
	applied := map[string]string{}
	var id, sum string
	if _, err := pgx.ForEachRow(rows, []any{&id, &sum}, func() error { applied[id] = sum; return nil }); err != nil {
		return fmt.Errorf("store/postgres: %w", err)
	}
	return migration.Current(files, applied)
}

// Close closes the pool.
func (db *DB) Close() error {
	db.pool.Close()
	return nil
}

// CreateAppRole creates (or updates) role as a login role fit to serve
// bastion: no superuser, no BYPASSRLS, no CREATEDB/CREATEROLE, owning
// nothing. adminURL must be a role with CREATEROLE (or a superuser). The
// table grants are applied by Open through Options.MigrateURL, so the role
// works once any replica has started with it. Operators without Go can run
// the same statement by hand:
//
//	CREATE ROLE bastion_app LOGIN PASSWORD '…' NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
func CreateAppRole(ctx context.Context, adminURL, role, password string) error {
	if role == "" {
		return errors.New("store/postgres: empty role name")
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("store/postgres: create role: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// format() quotes the name and password server-side; the password never
	// appears in an error.
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, role).Scan(&exists); err != nil {
		return fmt.Errorf("store/postgres: create role: %w", err)
	}
	verb := "CREATE"
	if exists {
		verb = "ALTER"
	}
	var stmt string
	if err := conn.QueryRow(ctx, `SELECT format('%s ROLE %I LOGIN PASSWORD %L NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE', $1::text, $2::text, $3::text)`,
		verb, role, password).Scan(&stmt); err != nil {
		return fmt.Errorf("store/postgres: create role: %w", err)
	}
	if _, err := conn.Exec(ctx, stmt); err != nil {
		// A *pgconn.PgError carries the server's message, never the
		// statement, so the password stays out of the error.
		return fmt.Errorf("store/postgres: %s role %q: %w", strings.ToLower(verb), role, err)
	}
	return nil
}

// Passwords returns the passwords the connection strings dsns carry (in a
// URL, a keyword/value string, PGPASSWORD or a passfile, as pgx reads them)
// with their URL-escaped spellings, so a caller printing an error can blank
// them out. Empty and malformed strings give none.
func Passwords(dsns ...string) []string {
	var out []string
	for _, dsn := range dsns {
		if dsn == "" {
			continue
		}
		cfg, err := pgconn.ParseConfig(dsn)
		if err != nil || cfg.Password == "" {
			continue
		}
		out = append(out, cfg.Password, url.QueryEscape(cfg.Password), url.PathEscape(cfg.Password), strings.TrimPrefix(url.UserPassword("", cfg.Password).String(), ":"))
	}
	return out
}
