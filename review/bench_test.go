package review_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/bastion-mcp/bastion/review"
)

// BenchmarkSubmit measures a new review's submit: normalize, authorize, and
// one SQLite transaction writing the job row, the ledger and the River job.
func BenchmarkSubmit(b *testing.B) {
	bb := setup(b, setupOpts{options: review.Options{DefaultBalance: 1 << 40}})
	ctx := context.Background()
	i := 0
	for b.Loop() {
		if _, err := bb.svc.Submit(ctx, bb.p, submitParams(fmt.Sprintf("key-bench-%08d", i))); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkSubmitReplay measures an idempotent replay (indexed reads only).
func BenchmarkSubmitReplay(b *testing.B) {
	bb := setup(b, setupOpts{})
	ctx := context.Background()
	if _, err := bb.svc.Submit(ctx, bb.p, submitParams("key-bench-replay")); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := bb.svc.Submit(ctx, bb.p, submitParams("key-bench-replay")); err != nil {
			b.Fatal(err)
		}
	}
}
