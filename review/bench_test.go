package review_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/review/reviewtest"
)

// BenchmarkSubmit measures a new review's submit: normalize, authorize, and
// one SQLite transaction writing the job row, the ledger and the River job.
func BenchmarkSubmit(b *testing.B) {
	bb := setup(b, reviewtest.Options{Review: review.Options{DefaultBalance: 1 << 40}})
	ctx := context.Background()
	i := 0
	for b.Loop() {
		if _, err := bb.Service.Submit(ctx, bb.Principal, submitParams(fmt.Sprintf("key-bench-%08d", i))); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkSubmitReplay measures an idempotent replay (indexed reads only).
func BenchmarkSubmitReplay(b *testing.B) {
	bb := setup(b, reviewtest.Options{})
	ctx := context.Background()
	if _, err := bb.Service.Submit(ctx, bb.Principal, submitParams("key-bench-replay")); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := bb.Service.Submit(ctx, bb.Principal, submitParams("key-bench-replay")); err != nil {
			b.Fatal(err)
		}
	}
}
