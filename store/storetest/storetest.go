// Package storetest is the conformance suite every store.Store adapter runs:
// call Exercise from the adapter's tests with a constructor that returns a
// fresh, empty store.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/store"
	"github.com/bastion-mcp/bastion/targets"
)

// Exercise runs the conformance suite. newStore must return an empty store;
// the suite closes it.
func Exercise(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	setup := func(t *testing.T) (context.Context, store.Store) {
		t.Helper()
		s := newStore(t)
		t.Cleanup(func() { s.Close() })
		return context.Background(), s
	}
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

	t.Run("CreateAndGet", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)
		res, err := s.JobCreate(ctx, createParams(newJob("t1", "p1", "job_a", "key-aaaaaaaa", t0), 10))
		if err != nil {
			t.Fatal(err)
		}
		if res.Reused || res.Balance != 9 || res.Job.State != store.Queued || res.Job.UnitsReserved != 1 {
			t.Fatalf("create = %+v, job %+v", res, res.Job)
		}
		got, err := s.JobGet(ctx, "t1", "job_a")
		if err != nil {
			t.Fatal(err)
		}
		if got.PrincipalID != "p1" || got.ReviewID != "rev_job_a" || !got.CreatedAt.Equal(t0) || !got.ExpiresAt.Equal(t0.Add(24*time.Hour)) ||
			string(got.Request) != `{"url":"https://a.example"}` || got.Stage == "" {
			t.Fatalf("get = %+v", got)
		}
		if _, err := s.JobGet(ctx, "t2", "job_a"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("other tenant get: err = %v, want ErrNotFound", err)
		}
		if _, err := s.JobGetByKey(ctx, "t1", "p2", "key-aaaaaaaa"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("other principal key: err = %v, want ErrNotFound", err)
		}
		if r, err := s.JobGetReview(ctx, "t1", "rev_job_a"); err != nil || r.ID != "job_a" {
			t.Fatalf("JobGetReview = %v, %v", r, err)
		}
		if _, err := s.JobGetReview(ctx, "t2", "rev_job_a"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("other tenant review: err = %v", err)
		}
		if bal, err := s.BalanceGet(ctx, "t1", 10); err != nil || bal != 9 {
			t.Fatalf("balance = %d, %v; want 9", bal, err)
		}
		if bal, err := s.BalanceGet(ctx, "t-new", 7); err != nil || bal != 7 {
			t.Fatalf("default balance = %d, %v; want 7", bal, err)
		}
	})

	t.Run("JobsAhead", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)
		// Three of t1's jobs a second apart and one of t2's in between: the
		// third of t1's has two ahead until the first starts; t2's is not
		// counted, nor is a running job.
		var jobs []*store.Job
		for i, tenant := range []string{"t1", "t2", "t1", "t1"} {
			j := newJob(tenant, "p1", fmt.Sprintf("job_%d", i), fmt.Sprintf("key-ahead-%d", i), t0.Add(time.Duration(i)*time.Second))
			res, err := s.JobCreate(ctx, createParams(j, 10))
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, res.Job)
		}
		if n, err := s.JobsAhead(ctx, jobs[3]); err != nil || n != 2 {
			t.Fatalf("JobsAhead = %d, %v; want 2", n, err)
		}
		if _, err := s.JobStart(ctx, &store.JobStartParams{Tenant: "t1", ID: "job_0", Attempt: 1, At: t0.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if n, err := s.JobsAhead(ctx, jobs[3]); err != nil || n != 1 {
			t.Fatalf("JobsAhead after a start = %d, %v; want 1", n, err)
		}
		if n, err := s.JobsAhead(ctx, jobs[0]); err != nil || n != 0 {
			t.Fatalf("JobsAhead of the first = %d, %v; want 0", n, err)
		}
	})

	t.Run("Idempotency", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)
		if _, err := s.JobCreate(ctx, createParams(newJob("t1", "p1", "job_a", "key-aaaaaaaa", t0), 10)); err != nil {
			t.Fatal(err)
		}
		// Same key and fingerprint: the original, nothing reserved.
		res, err := s.JobCreate(ctx, createParams(newJob("t1", "p1", "job_b", "key-aaaaaaaa", t0), 10))
		if err != nil {
			t.Fatal(err)
		}
		if !res.Reused || res.Job.ID != "job_a" || res.Balance != 9 {
			t.Fatalf("replay = %+v", res)
		}
		// Different fingerprint: conflict, nothing written.
		j := newJob("t1", "p1", "job_c", "key-aaaaaaaa", t0)
		j.Fingerprint = "other"
		if _, err := s.JobCreate(ctx, createParams(j, 10)); !errors.Is(err, store.ErrIdempotencyConflict) {
			t.Fatalf("conflict: err = %v", err)
		}
		// Different kind with the same fingerprint: conflict too.
		j = newJob("t1", "p1", "job_d", "key-aaaaaaaa", t0)
		j.Kind = store.KindRecheck
		if _, err := s.JobCreate(ctx, createParams(j, 10)); !errors.Is(err, store.ErrIdempotencyConflict) {
			t.Fatalf("kind conflict: err = %v", err)
		}
		// Another principal in the tenant has its own key space.
		res, err = s.JobCreate(ctx, createParams(newJob("t1", "p2", "job_e", "key-aaaaaaaa", t0), 10))
		if err != nil || res.Reused || res.Job.ID != "job_e" {
			t.Fatalf("other principal = %+v, %v", res, err)
		}
		if bal, _ := s.BalanceGet(ctx, "t1", 10); bal != 8 {
			t.Fatalf("balance = %d, want 8", bal)
		}
	})

	t.Run("ConcurrentCreateOneKey", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)
		const n = 50
		var wg sync.WaitGroup
		var created, reused atomic.Int32
		ids := make([]string, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				res, err := s.JobCreate(ctx, createParams(newJob("t1", "p1", fmt.Sprintf("job_%03d", i), "key-race-0001", t0), 1000))
				if err != nil {
					errs[i] = err
					return
				}
				ids[i] = res.Job.ID
				if res.Reused {
					reused.Add(1)
				} else {
					created.Add(1)
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if created.Load() != 1 || reused.Load() != n-1 {
			t.Fatalf("created %d reused %d, want 1 and %d", created.Load(), reused.Load(), n-1)
		}
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("ids differ: %s vs %s", id, ids[0])
			}
		}
		if bal, _ := s.BalanceGet(ctx, "t1", 1000); bal != 999 {
			t.Fatalf("balance = %d, want 999", bal)
		}
	})

	t.Run("InsufficientBalance", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)
		if err := s.BalanceSet(ctx, "t1", 1); err != nil {
			t.Fatal(err)
		}
		j := newJob("t1", "p1", "job_a", "key-aaaaaaaa", t0)
		j.UnitsReserved = 2
		_, err := s.JobCreate(ctx, createParams(j, 1000))
		var be *store.BalanceError
		if !errors.Is(err, store.ErrInsufficientBalance) || !errors.As(err, &be) || be.Balance != 1 || be.Needed != 2 {
			t.Fatalf("err = %v (%+v), want BalanceError{1 2}", err, be)
		}
		if _, err := s.JobGet(ctx, "t1", "job_a"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("refused job was written: %v", err)
		}
		if _, err := s.JobCreate(ctx, createParams(newJob("t1", "p1", "job_b", "key-bbbbbbbb", t0), 1000)); err != nil {
			t.Fatalf("1-unit job with balance 1: %v", err)
		}
		if bal, _ := s.BalanceGet(ctx, "t1", 1000); bal != 0 {
			t.Fatalf("balance = %d, want 0", bal)
		}
	})

	t.Run("EnqueueFailureRollsBack", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)
		p := createParams(newJob("t1", "p1", "job_a", "key-aaaaaaaa", t0), 10)
		boom := errors.New("boom")
		var sawTx bool
		p.Enqueue = func(ctx context.Context, tx store.Tx, j *store.Job) error {
			sawTx = tx != nil && j.ID == "job_a"
			return boom
		}
		if _, err := s.JobCreate(ctx, p); !errors.Is(err, boom) {
			t.Fatalf("err = %v, want boom", err)
		}
		if !sawTx {
			t.Fatal("Enqueue did not get the tx and job")
		}
		if _, err := s.JobGet(ctx, "t1", "job_a"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("job survived a failed enqueue: %v", err)
		}
		if bal, _ := s.BalanceGet(ctx, "t1", 10); bal != 10 {
			t.Fatalf("balance = %d after rollback, want 10", bal)
		}
	})

	t.Run("CompleteConsumes", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)
		mustCreate(t, s, newJob("t1", "p1", "job_a", "key-aaaaaaaa", t0))
		j, err := s.JobStart(ctx, &store.JobStartParams{Tenant: "t1", ID: "job_a", Attempt: 1, At: t0.Add(time.Second)})
		if err != nil || j.State != store.Running || !j.StartedAt.Equal(t0.Add(time.Second)) || j.Attempt != 1 {
			t.Fatalf("start = %+v, %v", j, err)
		}
		fin, err := s.JobFinish(ctx, &store.JobFinishParams{Tenant: "t1", ID: "job_a", State: store.Completed,
			Result: []byte(`{"grade":"ship"}`), Evidence: []store.Evidence{{ID: "ev_1", MIMEType: "image/png", Data: []byte{1, 2}}, {ID: "ev_2", MIMEType: "image/png", Data: []byte{3}}},
			At: t0.Add(2 * time.Second)})
		if err != nil || !fin.Applied || fin.Job.State != store.Completed || fin.Job.UnitsConsumed != 1 || string(fin.Job.Result) != `{"grade":"ship"}` {
			t.Fatalf("finish = %+v, %v", fin, err)
		}
		ev, err := s.EvidenceList(ctx, "t1", "job_a")
		if err != nil || len(ev) != 2 || ev[0].ID != "ev_1" || ev[1].Data[0] != 3 {
			t.Fatalf("evidence = %+v, %v", ev, err)
		}
		if ev, _ := s.EvidenceList(ctx, "t2", "job_a"); len(ev) != 0 {
			t.Fatal("evidence visible to another tenant")
		}
		// Terminal is immutable: a late failure changes nothing.
		fin, err = s.JobFinish(ctx, &store.JobFinishParams{Tenant: "t1", ID: "job_a", State: store.Failed, ErrorCode: "X", At: t0.Add(3 * time.Second)})
		if err != nil || fin.Applied || fin.Job.State != store.Completed {
			t.Fatalf("late finish = %+v, %v", fin, err)
		}
		c, err := s.JobCancel(ctx, &store.JobCancelParams{Tenant: "t1", ID: "job_a", At: t0.Add(4 * time.Second)})
		if err != nil || c.Decision != store.AlreadyTerminal || c.Job.State != store.Completed {
			t.Fatalf("cancel after complete = %+v, %v", c, err)
		}
		if bal, _ := s.BalanceGet(ctx, "t1", 10); bal != 9 {
			t.Fatalf("balance = %d, want 9", bal)
		}
	})

	t.Run("SetStage", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)
		mustCreate(t, s, newJob("t1", "p1", "job_a", "key-aaaaaaaa", t0))
		set := func(stage string) bool {
			t.Helper()
			ok, err := s.JobSetStage(ctx, &store.JobSetStageParams{Tenant: "t1", ID: "job_a", Stage: stage, At: t0.Add(time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if set("capturing 0/2") {
			t.Fatal("a queued job took a stage")
		}
		if _, err := s.JobStart(ctx, &store.JobStartParams{Tenant: "t1", ID: "job_a", Attempt: 2, At: t0}); err != nil {
			t.Fatal(err)
		}
		if !set("capturing 1/2") || set("capturing 1/2") {
			t.Fatal("a running job's stage: first set not applied, or a repeat reported as a change")
		}
		j, err := s.JobGet(ctx, "t1", "job_a")
		if err != nil || j.Stage != "capturing 1/2" || j.State != store.Running || j.Attempt != 2 || !j.StartedAt.Equal(t0) {
			t.Fatalf("after set: %+v, %v", j, err)
		}
		if _, err := s.JobSetStage(ctx, &store.JobSetStageParams{Tenant: "t2", ID: "job_a", Stage: "x", At: t0}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("other tenant set: %v, want ErrNotFound", err)
		}
		if _, err := s.JobCancel(ctx, &store.JobCancelParams{Tenant: "t1", ID: "job_a", At: t0}); err != nil {
			t.Fatal(err)
		}
		if set("judging") {
			t.Fatal("a stage overwrote cancelling")
		}
		if _, err := s.JobFinish(ctx, &store.JobFinishParams{Tenant: "t1", ID: "job_a", State: store.Cancelled, At: t0}); err != nil {
			t.Fatal(err)
		}
		if set("judging") {
			t.Fatal("a terminal job took a stage")
		}
		if j, _ := s.JobGet(ctx, "t1", "job_a"); j.Stage != store.StageCancelled {
			t.Fatalf("terminal stage %q", j.Stage)
		}
	})

	t.Run("FailRefundsAndKeepsReason", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)
		mustCreate(t, s, newJob("t1", "p1", "job_a", "key-aaaaaaaa", t0))
		if _, err := s.JobStart(ctx, &store.JobStartParams{Tenant: "t1", ID: "job_a", Attempt: 1, At: t0}); err != nil {
			t.Fatal(err)
		}
		fin, err := s.JobFinish(ctx, &store.JobFinishParams{Tenant: "t1", ID: "job_a", State: store.Failed,
			ErrorCode: "CAPTURE_FAILED", ErrorMessage: "the page did not load", At: t0})
		if err != nil || fin.Job.State != store.Failed || fin.Job.ErrorCode != "CAPTURE_FAILED" ||
			fin.Job.ErrorMessage != "the page did not load" || fin.Job.UnitsConsumed != 0 {
			t.Fatalf("finish = %+v, %v", fin.Job, err)
		}
		if bal, _ := s.BalanceGet(ctx, "t1", 10); bal != 10 {
			t.Fatalf("balance = %d, want 10 (refunded)", bal)
		}
	})

	t.Run("CancelArbitration", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)
		// Queued: cancelled at once, refunded, and the worker cannot start it.
		mustCreate(t, s, newJob("t1", "p1", "job_q", "key-qqqqqqqq", t0))
		c, err := s.JobCancel(ctx, &store.JobCancelParams{Tenant: "t1", ID: "job_q", Reason: "oops", At: t0})
		if err != nil || c.Decision != store.CancelledBeforeStart || c.Job.State != store.Cancelled ||
			c.Job.CancelReason != "oops" || !c.Job.CancelRequestedAt.Equal(t0) {
			t.Fatalf("queued cancel = %+v, %v", c, err)
		}
		if j, err := s.JobStart(ctx, &store.JobStartParams{Tenant: "t1", ID: "job_q", Attempt: 1, At: t0}); err != nil || j.State != store.Cancelled {
			t.Fatalf("start after cancel = %+v, %v", j, err)
		}
		// Running, then a completion: completion_won, consumed.
		mustCreate(t, s, newJob("t1", "p1", "job_r", "key-rrrrrrrr", t0))
		s.JobStart(ctx, &store.JobStartParams{Tenant: "t1", ID: "job_r", Attempt: 1, At: t0})
		c, err = s.JobCancel(ctx, &store.JobCancelParams{Tenant: "t1", ID: "job_r", Reason: "first", At: t0.Add(time.Second)})
		if err != nil || c.Decision != store.CancelRequested || c.Job.State != store.Running || c.Job.Stage != store.StageCancelling {
			t.Fatalf("running cancel = %+v, %v", c, err)
		}
		c, _ = s.JobCancel(ctx, &store.JobCancelParams{Tenant: "t1", ID: "job_r", Reason: "second", At: t0.Add(2 * time.Second)})
		if c.Job.CancelReason != "first" || !c.Job.CancelRequestedAt.Equal(t0.Add(time.Second)) {
			t.Fatalf("second cancel rewrote the first: %+v", c.Job)
		}
		fin, _ := s.JobFinish(ctx, &store.JobFinishParams{Tenant: "t1", ID: "job_r", State: store.Completed, Result: []byte(`{}`), At: t0})
		if fin.Job.State != store.Completed || fin.Job.CancelDecision != store.CompletionWon || fin.Job.UnitsConsumed != 1 {
			t.Fatalf("completion after request = %+v", fin.Job)
		}
		// Running, then the worker stops: cancel_won, refunded.
		mustCreate(t, s, newJob("t1", "p1", "job_s", "key-ssssssss", t0))
		s.JobStart(ctx, &store.JobStartParams{Tenant: "t1", ID: "job_s", Attempt: 1, At: t0})
		s.JobCancel(ctx, &store.JobCancelParams{Tenant: "t1", ID: "job_s", At: t0})
		fin, _ = s.JobFinish(ctx, &store.JobFinishParams{Tenant: "t1", ID: "job_s", State: store.Cancelled, At: t0})
		if fin.Job.State != store.Cancelled || fin.Job.CancelDecision != store.CancelWon || fin.Job.UnitsConsumed != 0 {
			t.Fatalf("worker stop = %+v", fin.Job)
		}
		// A late result never overwrites a cancel.
		fin, _ = s.JobFinish(ctx, &store.JobFinishParams{Tenant: "t1", ID: "job_q", State: store.Completed, Result: []byte(`{}`), At: t0})
		if fin.Applied || fin.Job.State != store.Cancelled || fin.Job.Result != nil {
			t.Fatalf("late result overwrote cancel: %+v", fin)
		}
		if bal, _ := s.BalanceGet(ctx, "t1", 10); bal != 9 {
			t.Fatalf("balance = %d, want 9 (one completed)", bal)
		}
		if _, err := s.JobCancel(ctx, &store.JobCancelParams{Tenant: "t2", ID: "job_s", At: t0}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("cross-tenant cancel: %v", err)
		}
	})

	t.Run("RecheckAdmission", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)
		mustCreate(t, s, newJob("t1", "p1", "job_rev", "key-review01", t0))
		recheck := func(id, key, principal string, at time.Time, units int64, admit func(*store.RecheckUsage) error) error {
			j := newJob("t1", principal, id, key, at)
			j.Kind, j.ReviewID, j.UnitsReserved = store.KindRecheck, "rev_job_rev", units
			p := createParams(j, 10)
			p.Recheck = &store.RecheckAdmission{FindingIDs: []string{"f_1", "f_2"}, Since: at.Add(-time.Hour), Admit: admit}
			_, err := s.JobCreate(ctx, p)
			return err
		}
		if err := recheck("job_r1", "key-r1-0001", "p1", t0, 1, nil); err != nil {
			t.Fatal(err)
		}
		if err := recheck("job_r2", "key-r2-0001", "p2", t0.Add(time.Minute), 2, nil); err != nil {
			t.Fatal(err)
		}
		var seen *store.RecheckUsage
		deny := errors.New("limited")
		err := recheck("job_r3", "key-r3-0001", "p1", t0.Add(2*time.Minute), 1, func(u *store.RecheckUsage) error { seen = u; return deny })
		if !errors.Is(err, deny) {
			t.Fatalf("err = %v, want the admission's error", err)
		}
		if seen == nil || len(seen.ByPrincipal) != 1 || len(seen.ByReview) != 2 || seen.ReviewTotal != 2 ||
			!seen.ReviewLast.Equal(t0.Add(time.Minute)) || seen.ByReview[1].Units != 2 || seen.ByReview[0].FindingIDs[1] != "f_2" {
			t.Fatalf("usage = %+v", seen)
		}
		// A refused admission writes nothing: no job, no event, no units.
		if _, err := s.JobGet(ctx, "t1", "job_r3"); !errors.Is(err, store.ErrNotFound) {
			t.Fatal("refused recheck was written")
		}
		seen = nil
		recheck("job_r4", "key-r4-0001", "p1", t0.Add(3*time.Minute), 1, func(u *store.RecheckUsage) error { seen = u; return nil })
		if seen.ReviewTotal != 2 {
			t.Fatalf("refused admission left an event: total %d", seen.ReviewTotal)
		}
		if bal, _ := s.BalanceGet(ctx, "t1", 10); bal != 10-1-1-2-1 {
			t.Fatalf("balance = %d", bal)
		}
	})

	exerciseTargets(t, setup, t0)
	exerciseFeedback(t, setup, t0)
	exerciseConcurrency(t, setup, t0)

	t.Run("Sweep", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)
		mustCreate(t, s, newJob("t1", "p1", "job_old", "key-old00001", t0))                     // queued, expires t0+24h
		mustCreate(t, s, newJob("t2", "p1", "job_run", "key-run00001", t0.Add(20*time.Hour)))   // running, stale
		mustCreate(t, s, newJob("t1", "p1", "job_new", "key-new00001", t0.Add(23*time.Hour)))   // fresh
		mustCreate(t, s, newJob("t1", "p1", "job_done", "key-done0001", t0.Add(-48*time.Hour))) // long expired
		s.JobStart(ctx, &store.JobStartParams{Tenant: "t2", ID: "job_run", Attempt: 1, At: t0.Add(20 * time.Hour)})
		now := t0.Add(25 * time.Hour)
		res, err := s.JobSweep(ctx, &store.JobSweepParams{Now: now, StaleBefore: now.Add(-time.Hour), PurgeBefore: now.Add(-12 * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		// job_done expired at t0-24h (before the purge cut) → deleted after
		// being failed as expired; job_old expired → failed; job_run stale.
		if res.Expired != 2 || res.Stale != 1 || res.Purged != 1 {
			t.Fatalf("sweep = %+v", res)
		}
		if j, _ := s.JobGet(ctx, "t1", "job_old"); j.State != store.Failed || j.ErrorCode != store.SweepExpiredCode {
			t.Fatalf("expired job = %+v", j)
		}
		if j, _ := s.JobGet(ctx, "t2", "job_run"); j.State != store.Failed || j.ErrorCode != store.SweepStaleCode {
			t.Fatalf("stale job = %+v", j)
		}
		if j, _ := s.JobGet(ctx, "t1", "job_new"); j.State != store.Queued {
			t.Fatalf("fresh job = %+v", j)
		}
		if _, err := s.JobGet(ctx, "t1", "job_done"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("purged job still there: %v", err)
		}
		if bal, _ := s.BalanceGet(ctx, "t1", 10); bal != 9 {
			t.Fatalf("t1 balance = %d, want 9 (two refunds, job_new reserved)", bal)
		}
		if bal, _ := s.BalanceGet(ctx, "t2", 10); bal != 10 {
			t.Fatalf("t2 balance = %d, want 10", bal)
		}
	})
}

func exerciseTargets(t *testing.T, setup func(t *testing.T) (context.Context, store.Store), t0 time.Time) {
	t.Run("Targets", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)
		if _, err := s.TargetGet(ctx, "t1", "a.example"); !errors.Is(err, targets.ErrNotFound) {
			t.Fatalf("get missing: %v", err)
		}
		if err := s.TargetDelete(ctx, "t1", "a.example"); !errors.Is(err, targets.ErrNotFound) {
			t.Fatalf("delete missing: %v", err)
		}
		pending := targets.Target{Tenant: "t1", Host: "b.example", Token: "tok1", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		if err := s.TargetPut(ctx, pending); err != nil {
			t.Fatal(err)
		}
		if err := s.TargetPut(ctx, targets.Target{Tenant: "t1", Host: "a.example", Token: "tok0", CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if err := s.TargetPut(ctx, targets.Target{Tenant: "t2", Host: "b.example", Token: "other", CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		got, err := s.TargetGet(ctx, "t1", "b.example")
		if err != nil || got != pending {
			t.Fatalf("get = %+v, %v; want %+v", got, err, pending)
		}
		// Upsert: the proof replaces the challenge.
		verified := pending
		verified.Method, verified.VerifiedAt, verified.ExpiresAt = "dns_txt", t0.Add(time.Minute), t0.Add(90*24*time.Hour)
		if err := s.TargetPut(ctx, verified); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.TargetGet(ctx, "t1", "b.example"); got != verified {
			t.Fatalf("after upsert = %+v", got)
		}
		list, err := s.TargetList(ctx, "t1")
		if err != nil || len(list) != 2 || list[0].Host != "a.example" || list[1] != verified {
			t.Fatalf("list = %+v, %v", list, err)
		}
		if err := s.TargetDelete(ctx, "t1", "b.example"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TargetGet(ctx, "t1", "b.example"); !errors.Is(err, targets.ErrNotFound) {
			t.Fatal("deleted target still there")
		}
		if got, err := s.TargetGet(ctx, "t2", "b.example"); err != nil || got.Token != "other" {
			t.Fatalf("other tenant's target = %+v, %v", got, err)
		}
		if list, _ := s.TargetList(ctx, "t3"); len(list) != 0 {
			t.Fatalf("empty tenant lists %+v", list)
		}
	})
}

// exerciseConcurrency races the store's arbitration from many goroutines
// (many connections, for a server database): reservations against a balance,
// a cancel against a completion, and sweeps against each other.
func exerciseConcurrency(t *testing.T, setup func(t *testing.T) (context.Context, store.Store), t0 time.Time) {
	t.Run("ConcurrentReservationsRespectBalance", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)
		if err := s.BalanceSet(ctx, "t1", 5); err != nil {
			t.Fatal(err)
		}
		const n = 20
		var wg sync.WaitGroup
		var ok, short atomic.Int32
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, err := s.JobCreate(ctx, createParams(newJob("t1", "p1", fmt.Sprintf("job_%03d", i), fmt.Sprintf("key-bal-%04d", i), t0), 1000))
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, store.ErrInsufficientBalance):
					short.Add(1)
				default:
					errs[i] = err
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if ok.Load() != 5 || short.Load() != n-5 {
			t.Fatalf("%d reserved, %d refused; want 5 and %d", ok.Load(), short.Load(), n-5)
		}
		if bal, _ := s.BalanceGet(ctx, "t1", 1000); bal != 0 {
			t.Fatalf("balance = %d, want 0", bal)
		}
	})

	t.Run("ConcurrentCancelAndFinish", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)
		const n = 10
		for i := range n {
			id := fmt.Sprintf("job_%03d", i)
			mustCreate(t, s, newJob("t1", "p1", id, fmt.Sprintf("key-race-%04d", i), t0))
			if _, err := s.JobStart(ctx, &store.JobStartParams{Tenant: "t1", ID: id, Attempt: 1, At: t0}); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, 3*n)
		for i := range n {
			id := fmt.Sprintf("job_%03d", i)
			wg.Go(func() {
				_, err := s.JobFinish(ctx, &store.JobFinishParams{Tenant: "t1", ID: id, State: store.Completed, Result: []byte(`{}`), At: t0.Add(time.Second)})
				errs <- err
			})
			wg.Go(func() {
				_, err := s.JobCancel(ctx, &store.JobCancelParams{Tenant: "t1", ID: id, Reason: "race", At: t0.Add(time.Second)})
				errs <- err
			})
			wg.Go(func() {
				_, err := s.JobFinish(ctx, &store.JobFinishParams{Tenant: "t1", ID: id, State: store.Failed, ErrorCode: "X", At: t0.Add(time.Second)})
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		// Each job ends exactly once: completed (consumed) or failed
		// (refunded); the cancel either lost or was recorded as a request
		// that the other outcome then arbitrated.
		var completed int64
		for i := range n {
			j, err := s.JobGet(ctx, "t1", fmt.Sprintf("job_%03d", i))
			if err != nil {
				t.Fatal(err)
			}
			switch j.State {
			case store.Completed:
				completed++
				if j.UnitsConsumed != 1 {
					t.Fatalf("completed job consumed %d", j.UnitsConsumed)
				}
			case store.Failed:
				if j.UnitsConsumed != 0 {
					t.Fatalf("failed job consumed %d", j.UnitsConsumed)
				}
			default:
				t.Fatalf("job %s ended %s", j.ID, j.State)
			}
		}
		if bal, _ := s.BalanceGet(ctx, "t1", 10); bal != 10-completed {
			t.Fatalf("balance = %d, want %d (%d completed)", bal, 10-completed, completed)
		}
	})

	t.Run("ConcurrentSweeps", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)
		const n = 6
		for i := range n {
			mustCreate(t, s, newJob(fmt.Sprintf("t%d", i%3), "p1", fmt.Sprintf("job_%03d", i), fmt.Sprintf("key-swp-%04d", i), t0))
		}
		now := t0.Add(25 * time.Hour)
		var wg sync.WaitGroup
		var expired atomic.Int32
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() {
				res, err := s.JobSweep(ctx, &store.JobSweepParams{Now: now})
				if err == nil {
					expired.Add(int32(res.Expired))
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if expired.Load() != n {
			t.Fatalf("sweeps failed %d jobs in total, want each of %d once", expired.Load(), n)
		}
		for i := range 3 {
			if bal, _ := s.BalanceGet(ctx, fmt.Sprintf("t%d", i), 10); bal != 10 {
				t.Fatalf("t%d balance = %d, want 10 (refunded once)", i, bal)
			}
		}
	})
}

func newJob(tenant, principal, id, key string, at time.Time) store.Job {
	return store.Job{
		Tenant: tenant, ID: id, PrincipalID: principal, Kind: store.KindReview, ClientRequestID: key,
		Fingerprint: "fp-1", Request: []byte(`{"url":"https://a.example"}`), ReviewID: "rev_" + id,
		Host: "a.example", TargetFingerprint: "tfp", UnitsReserved: 1, CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour),
	}
}

func createParams(j store.Job, def int64) *store.JobCreateParams {
	return &store.JobCreateParams{Job: j, DefaultBalance: def}
}

func mustCreate(t *testing.T, s store.Store, j store.Job) {
	t.Helper()
	if _, err := s.JobCreate(context.Background(), createParams(j, 10)); err != nil {
		t.Fatal(err)
	}
}

func exerciseFeedback(t *testing.T, setup func(t *testing.T) (context.Context, store.Store), t0 time.Time) {
	t.Run("Feedback", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)
		fs, ok := s.(store.FeedbackStore)
		if !ok {
			t.Fatalf("%T does not implement store.FeedbackStore", s)
		}
		event := func(tenant, id, kind string, v store.Verdict, at time.Time) *store.FeedbackEvent {
			return &store.FeedbackEvent{Tenant: tenant, ID: id, ReviewID: "rev_a", FindingID: "f_" + id, Kind: kind,
				Verdict: v, Reason: "why " + id, PrincipalID: "p1", At: at}
		}
		// Recorded out of time order: the list is by time, then id.
		for _, e := range []*store.FeedbackEvent{
			event("t1", "fb_2", "contrast", store.Dismissed, t0.Add(time.Second)),
			event("t1", "fb_1", "contrast", store.Dismissed, t0),
			event("t1", "fb_3", "overflow", store.Accepted, t0.Add(time.Second)),
			event("t1", "fb_4", "overflow", store.Dismissed, t0.Add(2*time.Second)),
			event("t2", "fb_1", "contrast", store.Disputed, t0),
		} {
			if err := fs.FeedbackRecord(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		if err := fs.FeedbackRecord(ctx, event("t1", "fb_1", "contrast", store.Accepted, t0)); err == nil {
			t.Fatal("a duplicate event id was recorded")
		}
		if err := fs.FeedbackRecord(ctx, event("t1", "fb_9", "contrast", "liked", t0)); err == nil {
			t.Fatal("an unknown verdict was recorded")
		}
		got, err := fs.FeedbackList(ctx, "t1")
		if err != nil || len(got) != 4 {
			t.Fatalf("list = %+v, %v; want 4 events", got, err)
		}
		for i, id := range []string{"fb_1", "fb_2", "fb_3", "fb_4"} {
			if got[i].ID != id {
				t.Fatalf("list[%d] = %s, want %s (by time, then id)", i, got[i].ID, id)
			}
		}
		if e := got[0]; e.Tenant != "t1" || e.ReviewID != "rev_a" || e.FindingID != "f_fb_1" || e.Kind != "contrast" ||
			e.Verdict != store.Dismissed || e.Reason != "why fb_1" || e.PrincipalID != "p1" || !e.At.Equal(t0) {
			t.Fatalf("event = %+v", e)
		}
		n, err := fs.FeedbackCountByKind(ctx, "t1", store.Dismissed)
		if err != nil || len(n) != 2 || n["contrast"] != 2 || n["overflow"] != 1 {
			t.Fatalf("dismissed by kind = %v, %v; want contrast 2, overflow 1", n, err)
		}
		if n, err := fs.FeedbackCountByKind(ctx, "t2", store.Dismissed); err != nil || len(n) != 0 {
			t.Fatalf("t2 dismissed = %v, %v; want none (its one event is disputed)", n, err)
		}
		if other, err := fs.FeedbackList(ctx, "t2"); err != nil || len(other) != 1 || other[0].Verdict != store.Disputed {
			t.Fatalf("t2 list = %+v, %v", other, err)
		}
		if none, err := fs.FeedbackList(ctx, "t3"); err != nil || len(none) != 0 {
			t.Fatalf("t3 list = %+v, %v", none, err)
		}
	})
}
