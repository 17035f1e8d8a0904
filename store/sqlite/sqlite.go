// Package sqlite is the embedded store.Store: one SQLite file (pure-Go
// modernc.org/sqlite) in bastion's data directory that holds bastion's tables
// and River's, so a review row and its River job commit in one transaction.
//
// Invariants: the schema is migrated at Open from embedded, SHA-256-pinned
// files, each applied once in order; a file changed after it was applied makes
// Open fail, and a newer migration id already in the database (written by a
// newer binary) is tolerated. Every write transaction begins IMMEDIATE and the
// writer pool holds one connection, so writers in one process queue in Go and
// writers in several processes queue on SQLite's busy timeout instead of
// failing with SQLITE_BUSY. Reads outside a transaction use a separate
// query-only pool (WAL readers see the last commit and never wait for the
// writer), with each statement prepared once.
//
// Limits: SQLite allows one writer at a time; this adapter is for one machine.
// Beyond that, use the Postgres adapter.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/bastion-mcp/bastion/store"
	"github.com/bastion-mcp/bastion/store/migration"

	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver
)

//go:embed migrations/*.sql
var embedded embed.FS

// FileName is the database file's name inside a data directory.
const FileName = "bastion.db"

// Options tunes Open. The zero value is the production default.
type Options struct {
	// BusyTimeout is how long a statement waits for another process's write
	// lock before failing. Zero means 10s.
	BusyTimeout time.Duration
	// Migrations replaces the embedded migrations (files named NNNN_name.sql
	// at the root of the FS). Nil means the embedded set; tests use it.
	Migrations fs.FS
	// Logger receives River migration logs. Nil discards them.
	Logger *slog.Logger
}

// DB is a store.Store on one SQLite file. It is safe for concurrent use.
// Its methods are store.Jobs, store.Targets, store.PATs and store.Feedback over this file's
// driver.
type DB struct {
	store.Jobs
	store.Targets
	store.PATs
	store.Feedback
	db   *sql.DB    // the writer: one connection, shared with River
	rd   *stmtCache // the query-only readers
	migs fs.FS      // the migrations this binary carries
}

// DefaultDataDir returns bastion's data directory: $XDG_DATA_HOME/bastion, or
// ~/.local/share/bastion when XDG_DATA_HOME is unset or not absolute.
func DefaultDataDir() (string, error) {
	if x := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "bastion"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("store/sqlite: no data directory: %w", err)
	}
	return filepath.Join(home, ".local", "share", "bastion"), nil
}

// PathIn returns the database path inside dataDir.
func PathIn(dataDir string) string { return filepath.Join(dataDir, FileName) }

// Errors Open's error matches (errors.Is), besides the OS error it wraps,
// so a caller can name the fix.
var (
	// ErrNotWritable: the data directory or the database file cannot be
	// written (a read-only file system, or permissions).
	ErrNotWritable = errors.New("store/sqlite: the data directory is not writable")
	// ErrFull: the file system holding the data directory is full (or the
	// user's quota is spent).
	ErrFull = errors.New("store/sqlite: no space left for the database")
)

// probeBytes is what Open writes and syncs in the data directory before
// SQLite runs: room for the WAL's first frames and a migration's pages.
const probeBytes = 64 << 10

// Open opens (creating if needed) the database at path, migrates bastion's and
// River's schemas, and returns the store. The parent directory is created
// with mode 0700. Before SQLite runs, Open writes and syncs a small file in
// that directory, so a read-only or full file system is reported with the
// OS's own error (ErrNotWritable, ErrFull) rather than SQLite's codes.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("store/sqlite: invalid database path %q", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, classify(fmt.Errorf("store/sqlite: create data directory: %w", err))
	}
	if err := probeWritable(filepath.Dir(path)); err != nil {
		return nil, classify(err)
	}
	db, err := open(ctx, path, opts)
	return db, classify(err)
}

// probeWritable writes and syncs probeBytes in dir, then removes the file.
func probeWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".bastion-write-check-*")
	if err != nil {
		return fmt.Errorf("store/sqlite: write in the data directory: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.Write(make([]byte, probeBytes))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("store/sqlite: write in the data directory: %w", err)
	}
	return nil
}

// SQLite's primary result codes that mean the database cannot be written.
const (
	sqlitePerm     = 3
	sqliteReadOnly = 8
	sqliteFull     = 13
	sqliteCantOpen = 14
)

// classify marks err with ErrFull or ErrNotWritable when the OS or SQLite
// says the file system is full or not writable; other errors are returned
// as they are.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	code := -1
	if errors.As(err, &se) {
		code = se.Code() & 0xff
	}
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT), code == sqliteFull:
		return fmt.Errorf("%w: %w", ErrFull, err)
	case errors.Is(err, syscall.EROFS), errors.Is(err, fs.ErrPermission),
		code == sqliteReadOnly, code == sqliteCantOpen, code == sqlitePerm:
		return fmt.Errorf("%w: %w", ErrNotWritable, err)
	}
	return err
}

func open(ctx context.Context, path string, opts Options) (*DB, error) {
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = 10 * time.Second
	}
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate",
		path, busy.Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: open: %w", err)
	}
	// One connection: River and bastion share it, so in-process writers queue
	// in database/sql rather than colliding on SQLite's single write lock.
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(0)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store/sqlite: open: %w", err)
	}
	migs := opts.Migrations
	if migs == nil {
		sub, err := fs.Sub(embedded, "migrations")
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("store/sqlite: %w", err)
		}
		migs = sub
	}
	if err := migrate(ctx, db, migs); err != nil {
		db.Close()
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	rm, err := rivermigrate.New(riversqlite.New(db), &rivermigrate.Config{Logger: logger})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store/sqlite: river migrator: %w", err)
	}
	if _, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		db.Close()
		return nil, fmt.Errorf("store/sqlite: river migrations: %w", err)
	}
	rdb, err := openReaders(ctx, path, busy)
	if err != nil {
		db.Close()
		return nil, err
	}
	d := driver{db: db, rd: &stmtCache{db: rdb}}
	return &DB{Jobs: store.Jobs{Driver: d}, Targets: store.Targets{Driver: d}, PATs: store.PATs{Driver: d}, Feedback: store.Feedback{Driver: d}, db: db, rd: d.rd, migs: migs}, nil
}

// Migrated reports whether every migration this binary carries is applied
// unchanged, for readiness: a database restored from an older backup, or
// changed under a running server, is not ready.
func (s *DB) Migrated(ctx context.Context) error {
	files, err := migration.Load(s.migs)
	if err != nil {
		return fmt.Errorf("store/sqlite: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, sha256 FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("store/sqlite: %w", err)
	}
	defer rows.Close()
	applied := map[string]string{}
	for rows.Next() {
		var id, sum string
		if err := rows.Scan(&id, &sum); err != nil {
			return fmt.Errorf("store/sqlite: %w", err)
		}
		applied[id] = sum
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store/sqlite: %w", err)
	}
	return migration.Current(files, applied)
}

// SQL returns the underlying pool, for River's riversqlite driver. Its one
// connection is shared: never hold a transaction on it while calling the store.
func (s *DB) SQL() *sql.DB { return s.db }

// Close closes the readers and the writer.
func (s *DB) Close() error { return errors.Join(s.rd.Close(), s.db.Close()) }

// migrate applies pending migrations in one transaction (IMMEDIATE, so two
// processes opening at once apply them once).
func migrate(ctx context.Context, db *sql.DB, fsys fs.FS) (err error) {
	migs, err := migration.Load(fsys)
	if err != nil {
		return fmt.Errorf("store/sqlite: %w", err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store/sqlite: migrate: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	if _, err = tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		id TEXT PRIMARY KEY, sha256 TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("store/sqlite: migrate: %w", err)
	}
	applied := map[string]string{}
	rows, err := tx.QueryContext(ctx, `SELECT id, sha256 FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("store/sqlite: migrate: %w", err)
	}
	for rows.Next() {
		var id, sum string
		if err = rows.Scan(&id, &sum); err != nil {
			rows.Close()
			return fmt.Errorf("store/sqlite: migrate: %w", err)
		}
		applied[id] = sum
	}
	if err = rows.Close(); err != nil {
		return fmt.Errorf("store/sqlite: migrate: %w", err)
	}
	pending, err := migration.Pending(migs, applied)
	if err != nil {
		return fmt.Errorf("store/sqlite: %w", err)
	}
	now := time.Now().UnixMilli()
	for _, m := range pending {
		if _, err = tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("store/sqlite: apply migration %s: %w", m.ID, err)
		}
		if _, err = tx.ExecContext(ctx, `INSERT INTO schema_migrations (id, sha256, applied_at) VALUES (?, ?, ?)`, m.ID, m.Sum, now); err != nil {
			return fmt.Errorf("store/sqlite: record migration %s: %w", m.ID, err)
		}
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("store/sqlite: migrate: %w", err)
	}
	return nil
}

// ms stores a time as unix milliseconds; the zero time is 0.
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromMS is the inverse of ms, in UTC.
func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}
