package sqlite_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/bastion-mcp/bastion/internal/testenv"
	"github.com/bastion-mcp/bastion/store/migration"

	"github.com/bastion-mcp/bastion/store"
	"github.com/bastion-mcp/bastion/store/sqlite"
	"github.com/bastion-mcp/bastion/store/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, func(t *testing.T) store.Store {
		// A directory that does not exist yet: Open makes it.
		return openDB(t, filepath.Join(t.TempDir(), "db", sqlite.FileName), sqlite.Options{})
	})
}

// openDB opens the database at path, failing t when it cannot, and closes
// it when t ends (a test may close it sooner).
func openDB(t *testing.T, path string, opts sqlite.Options) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// migrationsFS returns the shipped migrations as a mutable map.
func migrationsFS(t *testing.T) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(osDirFS("migrations"), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(osDirFS("migrations"), p)
		m[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil || len(m) == 0 {
		t.Fatalf("read migrations: %v (%d files)", err, len(m))
	}
	return m
}

func TestMigrationsPinned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	openDB(t, path, sqlite.Options{}).Close()

	t.Run("ReopenIsNoop", func(t *testing.T) {
		db := openDB(t, path, sqlite.Options{})
		var n int
		db.SQL().QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n)
		db.Close()
		if want := len(migrationsFS(t)); n != want {
			t.Fatalf("schema_migrations has %d rows, want %d", n, want)
		}
	})
	t.Run("ChangedHistoryFails", func(t *testing.T) {
		m := migrationsFS(t)
		first := m["0001_jobs.sql"]
		m["0001_jobs.sql"] = &fstest.MapFile{Data: append(append([]byte{}, first.Data...), []byte("\n-- edited\n")...)}
		_, err := sqlite.Open(ctx, path, sqlite.Options{Migrations: m})
		if !errors.Is(err, migration.ErrChanged) || !strings.Contains(err.Error(), "0001_jobs") {
			t.Fatalf("err = %v, want a changed-migration error", err)
		}
	})
	t.Run("NewerIDTolerated", func(t *testing.T) {
		db := openDB(t, path, sqlite.Options{})
		if _, err := db.SQL().Exec(`INSERT INTO schema_migrations (id, sha256, applied_at) VALUES ('9999_from_the_future', 'sha256:00', 0)`); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if db, err := sqlite.Open(ctx, path, sqlite.Options{}); err != nil {
			t.Fatalf("newer migration id not tolerated: %v", err)
		} else {
			db.Close()
		}
	})
	t.Run("NewFileApplied", func(t *testing.T) {
		m := migrationsFS(t)
		m["0500_extra.sql"] = &fstest.MapFile{Data: []byte(`CREATE TABLE extra (tenant_id TEXT NOT NULL PRIMARY KEY);`)}
		db := openDB(t, path, sqlite.Options{Migrations: m})
		if _, err := db.SQL().Exec(`INSERT INTO extra (tenant_id) VALUES ('t')`); err != nil {
			t.Fatalf("new migration not applied: %v", err)
		}
	})
}

func TestDefaultDataDir(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/xdg")
	if d, err := sqlite.DefaultDataDir(); err != nil || d != "/xdg/bastion" {
		t.Fatalf("DefaultDataDir = %q, %v", d, err)
	}
	t.Setenv("XDG_DATA_HOME", "relative")
	t.Setenv("HOME", "/home/u")
	if d, err := sqlite.DefaultDataDir(); err != nil || d != "/home/u/.local/share/bastion" {
		t.Fatalf("DefaultDataDir = %q, %v", d, err)
	}
	if p := sqlite.PathIn("/d"); p != "/d/bastion.db" {
		t.Fatalf("PathIn = %q", p)
	}
}

func TestOpenRejectsBadPath(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", "/tmp/a?mode=memory", "/tmp/a#b"} {
		if _, err := sqlite.Open(context.Background(), p, sqlite.Options{}); err == nil {
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}

func osDirFS(dir string) fs.FS { return os.DirFS(dir) }

// TestMigrated is the readiness check: a schema missing a migration this
// binary carries is not ready.
func TestMigrated(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, sqlite.PathIn(t.TempDir()), sqlite.Options{})
	if err := db.Migrated(ctx); err != nil {
		t.Fatalf("fresh database: %v", err)
	}
	if _, err := db.SQL().ExecContext(ctx, `DELETE FROM schema_migrations WHERE id = '0003_pats'`); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrated(ctx); err == nil || !strings.Contains(err.Error(), "0003_pats") {
		t.Fatalf("a missing migration: %v, want an error naming 0003_pats", err)
	}
}

// TestOpenUnwritable: a read-only or full data directory is reported with
// the OS's own error and the sentinel that names the fix, not SQLite's
// "unable to open database file".
func TestOpenUnwritable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		dir   func(testing.TB) string
		want  error
		cause string
	}{
		{"ReadOnly", testenv.ReadOnlyDir, sqlite.ErrNotWritable, ""},
		{"Full", testenv.FullDir, sqlite.ErrFull, "no space left on device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := tc.dir(t)
			for _, path := range []string{filepath.Join(dir, sqlite.FileName), filepath.Join(dir, "sub", sqlite.FileName)} {
				db, err := sqlite.Open(context.Background(), path, sqlite.Options{})
				if err == nil {
					db.Close()
					t.Fatalf("Open(%s) succeeded", path)
				}
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.cause) {
					t.Errorf("Open(%s) = %v, want %v with %q", path, err, tc.want, tc.cause)
				}
			}
		})
	}
}
