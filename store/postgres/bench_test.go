package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/internal/testenv"
	"github.com/bastion-mcp/bastion/store"
)

// BenchmarkStore measures the store's hot paths as the serving role, each a
// tenant-bound transaction (begin, set_config, statements, commit).
func BenchmarkStore(b *testing.B) {
	c := &cluster{pg: testenv.StartPostgres(b)}
	c.createRoles(b)
	db := c.newDatabase(b).open(b)
	defer db.Close()
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	job := func(id string) store.Job {
		return store.Job{Tenant: "acme", ID: id, PrincipalID: "p1", Kind: store.KindReview, ClientRequestID: "key-" + id,
			Fingerprint: "fp", Request: []byte(`{"url":"https://a.example"}`), ReviewID: "rev_" + id, Host: "a.example",
			TargetFingerprint: "tfp", UnitsReserved: 1, CreatedAt: t0, ExpiresAt: t0.Add(24 * time.Hour)}
	}
	if _, err := db.JobCreate(ctx, &store.JobCreateParams{Job: job("job_get"), DefaultBalance: 1 << 40}); err != nil {
		b.Fatal(err)
	}
	b.Run("JobGet", func(b *testing.B) {
		for b.Loop() {
			if _, err := db.JobGet(ctx, "acme", "job_get"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("JobCreate", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if _, err := db.JobCreate(ctx, &store.JobCreateParams{Job: job(fmt.Sprintf("job_%d", i)), DefaultBalance: 1 << 40}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("JobGetParallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := db.JobGet(ctx, "acme", "job_get"); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
