package review_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/review/reviewtest"
)

// setup is reviewtest.New on a clock frozen at the present unless the test
// brings its own: no outcome here may depend on how long a test takes.
func setup(t testing.TB, o reviewtest.Options) *reviewtest.Harness {
	t.Helper()
	if o.Clock == nil {
		o.Clock = reviewtest.NewClock(time.Now())
	}
	return reviewtest.New(t, o)
}

func submitParams(key string) *review.SubmitParams {
	return &review.SubmitParams{URL: "https://preview.example.com/pricing", ClientRequestID: key}
}

// wantCode fails unless err is a *fault.Error with code.
func wantCode(t *testing.T, err error, code fault.Code) *fault.Error {
	t.Helper()
	e, ok := fault.As(err)
	if !ok || e.Code != code {
		t.Fatalf("err = %v, want code %s", err, code)
	}
	return e
}

// completedReview submits and completes a review, returning its job.
func completedReview(t *testing.T, b *reviewtest.Harness, key string, in *review.SubmitParams) review.Job {
	t.Helper()
	if in == nil {
		in = submitParams(key)
	}
	res, err := b.Service.Submit(context.Background(), b.Principal, in)
	if err != nil {
		t.Fatal(err)
	}
	j := b.WaitTerminal(t, b.Principal, res.Job.JobID)
	if j.Status != "completed" {
		t.Fatalf("review ended %s (%+v)", j.Status, j.Error)
	}
	return j
}

func balance(t *testing.T, b *reviewtest.Harness) int64 {
	t.Helper()
	bal, err := b.Store.BalanceGet(context.Background(), b.Principal.Tenant(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	return bal
}

var errBoom = errors.New("boom: dial 10.0.0.7:443 refused")
