package postgres_test

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/auth/authtest"
	"github.com/bastion-mcp/bastion/internal/testenv"
	"github.com/bastion-mcp/bastion/store"
	"github.com/bastion-mcp/bastion/store/postgres"
	"github.com/bastion-mcp/bastion/store/storetest"
)

// Roles shared by every test database of the cluster (roles are
// cluster-wide). The owner migrates; the app role serves.
const (
	ownerRole  = "bastion_test_owner"
	appRole    = "bastion_test_app"
	bypassRole = "bastion_test_bypass"
	memberRole = "bastion_test_member" // may SET ROLE to the owner
	rolePass   = "bastion-test-password"
)

// cluster is one throwaway PostgreSQL server for the whole test binary.
type cluster struct {
	pg *testenv.Postgres
}

// database is a fresh database owned by ownerRole, with a URL per role.
type database struct {
	super, owner, app, bypass, member string
}

// TestPostgres runs every Postgres test on one cluster (started once: the
// subtests run in parallel and the cluster stops when the last ends).
func TestPostgres(t *testing.T) {
	pg := testenv.StartPostgres(t)
	c := &cluster{pg: pg}
	c.createRoles(t)
	t.Run("Conformance", func(t *testing.T) { t.Parallel(); testConformance(t, c) })
	t.Run("PATStore", func(t *testing.T) { t.Parallel(); testPATStore(t, c) })
	t.Run("Migrations", func(t *testing.T) { t.Parallel(); testMigrations(t, c) })
	t.Run("RoleRefusal", func(t *testing.T) { t.Parallel(); testRoleRefusal(t, c) })
	t.Run("ServingRoleWithoutDDL", func(t *testing.T) { t.Parallel(); testServingRoleWithoutDDL(t, c) })
	t.Run("TenantIsolation", func(t *testing.T) { t.Parallel(); testTenantIsolation(t, c) })
	t.Run("Review", func(t *testing.T) { t.Parallel(); testReview(t, c) })
}

func (c *cluster) createRoles(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	admin := c.pg.AdminURL()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Idempotent, for a long-lived BASTION_TEST_DATABASE_URL server.
	for _, s := range []string{
		`DO $$ BEGIN CREATE ROLE ` + ownerRole + ` LOGIN NOSUPERUSER NOBYPASSRLS; EXCEPTION WHEN duplicate_object THEN NULL; END $$`,
		`DO $$ BEGIN CREATE ROLE ` + bypassRole + ` LOGIN NOSUPERUSER BYPASSRLS; EXCEPTION WHEN duplicate_object THEN NULL; END $$`,
		`DO $$ BEGIN CREATE ROLE ` + memberRole + ` LOGIN NOSUPERUSER NOBYPASSRLS IN ROLE ` + ownerRole + `; EXCEPTION WHEN duplicate_object THEN NULL; END $$`,
		`ALTER ROLE ` + ownerRole + ` PASSWORD '` + rolePass + `'`,
		`ALTER ROLE ` + bypassRole + ` PASSWORD '` + rolePass + `'`,
		`ALTER ROLE ` + memberRole + ` PASSWORD '` + rolePass + `'`,
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if err := postgres.CreateAppRole(ctx, admin, appRole, rolePass); err != nil {
		t.Fatal(err)
	}
	// A second call updates the existing role.
	if err := postgres.CreateAppRole(ctx, admin, appRole, rolePass); err != nil {
		t.Fatalf("CreateAppRole on an existing role: %v", err)
	}
}

// newDatabase creates a database owned by ownerRole. Its bypass role is
// granted the same DML as the app role, so only BYPASSRLS sets it apart.
func (c *cluster) newDatabase(t testing.TB) database {
	t.Helper()
	super := c.pg.NewDatabase(t)
	u, err := url.Parse(super)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, super)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{name}.Sanitize()+` OWNER TO `+ownerRole); err != nil {
		t.Fatal(err)
	}
	// PostgreSQL < 15 lets everyone create in public; bastion's tables must
	// belong to the owner only, so close that door as an operator would.
	if _, err := conn.Exec(ctx, `REVOKE CREATE ON SCHEMA public FROM PUBLIC`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ALTER SCHEMA public OWNER TO `+ownerRole); err != nil {
		t.Fatal(err)
	}
	as := func(role string) string {
		v := *u
		v.User = url.UserPassword(role, rolePass)
		return v.String()
	}
	return database{super: super, owner: as(ownerRole), app: as(appRole), bypass: as(bypassRole), member: as(memberRole)}
}

// open opens the store as the app role, migrating as the owner.
func (d database) open(t testing.TB) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), d.app, postgres.Options{MigrateURL: d.owner})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func testConformance(t *testing.T, c *cluster) {
	storetest.Exercise(t, func(t *testing.T) store.Store {
		return c.newDatabase(t).open(t)
	})
}

func testPATStore(t *testing.T, c *cluster) {
	authtest.ExercisePATStore(context.Background(), t, func(t *testing.T) auth.PATStore {
		db := c.newDatabase(t).open(t)
		t.Cleanup(func() { db.Close() })
		return db
	})
}

// migrationsFS returns the shipped migrations as a mutable map.
func migrationsFS(t *testing.T) fstest.MapFS {
	t.Helper()
	dir := os.DirFS("migrations")
	names, err := fs.Glob(dir, "*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("read migrations: %v (%d files)", err, len(names))
	}
	m := fstest.MapFS{}
	for _, n := range names {
		b, err := fs.ReadFile(dir, n)
		if err != nil {
			t.Fatal(err)
		}
		m[n] = &fstest.MapFile{Data: b}
	}
	return m
}

func count(t *testing.T, dsn, query string, args ...any) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func testMigrations(t *testing.T, c *cluster) {
	ctx := context.Background()
	shipped := len(migrationsFS(t))

	t.Run("ConcurrentMigrators", func(t *testing.T) {
		t.Parallel()
		d := c.newDatabase(t)
		const n = 4
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				db, err := postgres.Open(ctx, d.app, postgres.Options{MigrateURL: d.owner})
				if err == nil {
					db.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("replica %d: %v", i, err)
			}
		}
		if got := count(t, d.owner, `SELECT count(*) FROM bastion_schema_migrations`); got != shipped {
			t.Fatalf("bastion_schema_migrations has %d rows, want %d", got, shipped)
		}
		rivers := count(t, d.owner, `SELECT count(*) FROM river_migration`)
		if rivers == 0 || count(t, d.owner, `SELECT count(DISTINCT version) FROM river_migration`) != rivers {
			t.Fatalf("river_migration has %d rows with duplicates or none", rivers)
		}
		// Reopening applies nothing new.
		d.open(t).Close()
		if got := count(t, d.owner, `SELECT count(*) FROM bastion_schema_migrations`); got != shipped {
			t.Fatalf("after reopen: %d rows, want %d", got, shipped)
		}
	})

	t.Run("ChangedHistoryFails", func(t *testing.T) {
		t.Parallel()
		d := c.newDatabase(t)
		d.open(t).Close()
		m := migrationsFS(t)
		first := m["0001_jobs.sql"]
		m["0001_jobs.sql"] = &fstest.MapFile{Data: append(append([]byte{}, first.Data...), []byte("\n-- edited\n")...)}
		_, err := postgres.Open(ctx, d.app, postgres.Options{MigrateURL: d.owner, Migrations: m})
		if !errors.Is(err, postgres.ErrMigrationChanged) || !strings.Contains(err.Error(), "0001_jobs") || !strings.Contains(err.Error(), "sha256:") {
			t.Fatalf("err = %v, want ErrMigrationChanged naming 0001_jobs and both checksums", err)
		}
		// Nothing half-applied: the unchanged set still opens.
		d.open(t).Close()
	})

	t.Run("NewerIDTolerated", func(t *testing.T) {
		t.Parallel()
		d := c.newDatabase(t)
		d.open(t).Close()
		conn, err := pgx.Connect(ctx, d.owner)
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.Exec(ctx, `INSERT INTO bastion_schema_migrations (id, checksum) VALUES ('9999_from_a_newer_binary', $1)`,
			"sha256:"+strings.Repeat("0", 64))
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		db, err := postgres.Open(ctx, d.app, postgres.Options{MigrateURL: d.owner})
		if err != nil {
			t.Fatalf("open with a newer applied id: %v", err)
		}
		defer db.Close()
		// Readiness, as the serving role: current despite the newer id,
		// not current once a migration this binary carries is gone.
		if err := db.Migrated(ctx); err != nil {
			t.Fatalf("Migrated as the serving role: %v", err)
		}
		conn, err = pgx.Connect(ctx, d.owner)
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.Exec(ctx, `DELETE FROM bastion_schema_migrations WHERE id = '0003_pats'`)
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Migrated(ctx); err == nil || !strings.Contains(err.Error(), "0003_pats") {
			t.Fatalf("Migrated with 0003_pats missing: %v, want an error naming it", err)
		}
	})

	t.Run("NewMigrationAppliedOnce", func(t *testing.T) {
		t.Parallel()
		d := c.newDatabase(t)
		d.open(t).Close()
		m := migrationsFS(t)
		m["9000_extra.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE extra_marker (id int);\n")}
		for range 2 {
			db, err := postgres.Open(ctx, d.app, postgres.Options{MigrateURL: d.owner, Migrations: m})
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
		}
		if got := count(t, d.owner, `SELECT count(*) FROM bastion_schema_migrations WHERE id = '9000_extra'`); got != 1 {
			t.Fatalf("9000_extra recorded %d times", got)
		}
	})
}

func testRoleRefusal(t *testing.T, c *cluster) {
	ctx := context.Background()
	d := c.newDatabase(t)
	d.open(t).Close()
	for _, tc := range []struct {
		name, url, migrate string
		reason             string
	}{
		{"Superuser", d.super, d.owner, "is a superuser"},
		{"Owner", d.owner, "", "tables tenants, jobs"},
		{"MemberOfOwner", d.member, d.owner, "tables tenants, jobs"},
		{"BypassRLS", d.bypass, d.owner, "has BYPASSRLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := postgres.Open(ctx, tc.url, postgres.Options{MigrateURL: tc.migrate})
			var re *postgres.UnsafeRoleError
			if err == nil {
				db.Close()
			}
			if !errors.Is(err, postgres.ErrUnsafeRole) || !errors.As(err, &re) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("err = %v, want an UnsafeRoleError saying %q", err, tc.reason)
			}
			if strings.Contains(err.Error(), rolePass) {
				t.Fatal("the error leaks the password")
			}
			db, err = postgres.Open(ctx, tc.url, postgres.Options{MigrateURL: tc.migrate, UnsafeAllowOwnerRole: true})
			if err != nil {
				t.Fatalf("with UnsafeAllowOwnerRole: %v", err)
			}
			db.Close()
		})
	}
	t.Run("AppRoleAccepted", func(t *testing.T) {
		db := d.open(t)
		defer db.Close()
		if err := db.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// pgCode returns err's SQLSTATE, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// testServingRoleWithoutDDL: without a migrating role, the serving role
// (no CREATE on the schema) starts on a migrated database by reading the
// migration state, and is refused, naming what is pending, on a database
// that is behind; it never needs a DDL right.
func testServingRoleWithoutDDL(t *testing.T, c *cluster) {
	ctx := context.Background()
	d := c.newDatabase(t)
	if n := count(t, d.owner, `SELECT count(*) FROM (SELECT 1 WHERE has_schema_privilege($1, 'public', 'CREATE')) x`, appRole); n != 0 {
		t.Fatal("the serving role may CREATE in the schema; the test proves nothing")
	}
	_, err := postgres.Open(ctx, d.app, postgres.Options{})
	var pe *postgres.MigrationsPendingError
	if !errors.Is(err, postgres.ErrMigrationsPending) || !errors.As(err, &pe) || !strings.Contains(err.Error(), "0001_jobs") || !strings.Contains(err.Error(), "river: ") {
		t.Fatalf("fresh database, no MigrateURL: %v; want a MigrationsPendingError naming 0001_jobs and River's", err)
	}
	if strings.Contains(err.Error(), rolePass) {
		t.Fatal("the error leaks the password")
	}
	d.open(t).Close() // the owner migrates and grants
	db, err := postgres.Open(ctx, d.app, postgres.Options{})
	if err != nil {
		t.Fatalf("migrated database, serving role without DDL rights: %v", err)
	}
	if err := db.Ping(ctx); err != nil {
		t.Error(err)
	}
	db.Close()
	m := migrationsFS(t)
	m["9000_extra.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE extra_marker (id int);\n")}
	if _, err := postgres.Open(ctx, d.app, postgres.Options{Migrations: m}); !errors.As(err, &pe) || len(pe.Pending) != 1 || pe.Pending[0] != "9000_extra" {
		t.Errorf("a newer binary's migration pending: %v, want exactly 9000_extra pending", err)
	}
	if got := count(t, d.owner, `SELECT count(*) FROM bastion_schema_migrations WHERE id = '9000_extra'`); got != 0 {
		t.Error("the serving role applied a migration")
	}
}
