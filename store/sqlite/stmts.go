package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// readers is the query-only pool that serves driver.Read, PATLookup and
// TenantList. The writer pool holds one connection that River shares, so a
// read queued there waits behind every write transaction and every River
// fetch; in WAL mode a second connection reads the last committed snapshot
// without taking the write lock, and query_only makes any write through it
// an error rather than a second writer.
func openReaders(ctx context.Context, path string, busy time.Duration) (*sql.DB, error) {
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=query_only(1)", path, busy.Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: open readers: %w", err)
	}
	n := max(2, runtime.GOMAXPROCS(0))
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxIdleTime(0)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store/sqlite: open readers: %w", err)
	}
	return db, nil
}

// stmtCache is a querier on the readers pool that prepares each query text
// once: a token check or a job poll is a handful of fixed statements, and
// parsing and planning them again on every call was most of a read's cost.
// A query that fails to prepare runs unprepared, so the error it reports is
// the statement's own.
type stmtCache struct {
	db    *sql.DB
	stmts sync.Map // query text → *sql.Stmt
}

func (c *stmtCache) stmt(ctx context.Context, query string) *sql.Stmt {
	if s, ok := c.stmts.Load(query); ok {
		return s.(*sql.Stmt)
	}
	s, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	if prev, loaded := c.stmts.LoadOrStore(query, s); loaded {
		s.Close()
		return prev.(*sql.Stmt)
	}
	return s
}

func (c *stmtCache) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := c.stmt(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return c.db.QueryRowContext(ctx, query, args...)
}

func (c *stmtCache) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := c.stmt(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return c.db.QueryContext(ctx, query, args...)
}

// ExecContext is here so the cache is a querier; on this pool every write
// fails (query_only), which is the point.
func (c *stmtCache) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return c.db.ExecContext(ctx, query, args...)
}

// Close closes every prepared statement and the pool.
func (c *stmtCache) Close() error {
	c.stmts.Range(func(k, v any) bool {
		v.(*sql.Stmt).Close()
		c.stmts.Delete(k)
		return true
	})
	return c.db.Close()
}
