package sqlite_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/store"
	"github.com/bastion-mcp/bastion/store/sqlite"
)

func putPAT(t testing.TB, db *sqlite.DB, id string) [32]byte {
	t.Helper()
	hash := sha256.Sum256([]byte("secret-" + id))
	rec := auth.PATRecord{Tenant: "t1", ID: id, Name: id, Scopes: []principal.Scope{"review:read"}, Hash: hash,
		CreatedAt: time.Now().UTC()}
	if err := db.PATPut(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return hash
}

// A token check or a job poll must not wait for a write transaction (a
// review being enqueued, River fetching work) to end: with one pooled
// connection it did, and every authenticated request queued behind it.
func TestReadsDoNotQueueBehindAWrite(t *testing.T) {
	t.Parallel()
	db := openDB(t, sqlite.PathIn(t.TempDir()), sqlite.Options{})
	hash := putPAT(t, db, "pat_a")

	tx, err := db.Jobs.Driver.Begin(context.Background(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if err := tx.BalanceSet(context.Background(), "t1", 5); err != nil {
		t.Fatal(err)
	}

	// The write transaction is open and holds the writer's only
	// connection. The deadline only bounds a failure; success does not
	// wait for it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec, err := db.PATGetByHash(ctx, hash)
	if err != nil {
		t.Fatalf("read while a write transaction is open: %v", err)
	}
	if rec.ID != "pat_a" {
		t.Fatalf("read %q, want pat_a", rec.ID)
	}
	// The read sees the last commit, not the open transaction.
	err = db.Jobs.Driver.Read(ctx, "t1", func(e store.Executor) error {
		_, err := e.BalanceGet(ctx, &store.BalanceGetParams{Tenant: "t1"})
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("uncommitted balance visible to a reader: err = %v", err)
	}
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	var bal int64
	err = db.Jobs.Driver.Read(ctx, "t1", func(e store.Executor) error {
		var err error
		bal, err = e.BalanceGet(ctx, &store.BalanceGetParams{Tenant: "t1"})
		return err
	})
	if err != nil || bal != 5 {
		t.Fatalf("after commit: balance %d, %v; want 5", bal, err)
	}
}

// The readers' pool is query-only: a write that reaches it by mistake fails
// instead of becoming a second writer that could meet SQLITE_BUSY.
func TestReadersAreQueryOnly(t *testing.T) {
	t.Parallel()
	db := openDB(t, sqlite.PathIn(t.TempDir()), sqlite.Options{})
	ctx := context.Background()
	err := db.Jobs.Driver.Read(ctx, "t1", func(e store.Executor) error {
		return e.BalanceSet(ctx, "t1", 1)
	})
	if err == nil {
		t.Fatal("a write through the readers' pool succeeded")
	}
}

// BenchmarkPATGetByHash is the store's half of every authenticated request.
func BenchmarkPATGetByHash(b *testing.B) {
	db, err := sqlite.Open(context.Background(), sqlite.PathIn(b.TempDir()), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	hash := putPAT(b, db, "pat_a")
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := db.PATGetByHash(ctx, hash); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
