package review_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/review/reviewtest"
)

// waited runs a Get with wait_ms on h in the background: seen receives each
// job OnProgress reports, and the returned channel the answer.
func waited(t *testing.T, h *reviewtest.Harness, b *reviewtest.Harness, id string, seen chan<- review.Job) <-chan review.Job {
	t.Helper()
	out := make(chan review.Job, 1)
	go func() {
		g, err := b.Service.Get(context.Background(), h.Principal, &review.GetParams{
			JobID: id, View: review.ViewStatus, WaitMS: review.MaxWait.Milliseconds(),
			OnProgress: func(j review.Job) { seen <- j },
		})
		if err != nil {
			t.Error(err)
			close(out)
			return
		}
		out <- g.Job
	}()
	return out
}

// TestWaitAnswersWhenTheStateChanges holds a Get with the longest wait on a
// running review, in the process that runs it and in another replica that
// only reads the database: each is told the stage at once and answers with
// the completed job as soon as the run ends, not when the wait does (the
// wait is 25 s; a Get that ignored it would answer "running").
func TestWaitAnswersWhenTheStateChanges(t *testing.T) {
	t.Parallel()
	gate, started := make(chan struct{}), make(chan string, 1)
	eng := &reviewtest.Engine{Result: reviewtest.SampleResult(), Gate: gate, Started: started, Steps: []engine.Progress{
		{Stage: engine.StageCapturing, Total: 3},
		{Stage: engine.StageCapturing, Done: 1, Total: 3},
	}}
	a := setup(t, reviewtest.Options{Start: true, Engine: eng})
	b := setup(t, reviewtest.Options{Path: a.Path})
	sub, err := a.Service.Submit(context.Background(), a.Principal, submitParams("wait-key-0001"))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	// Both waiters start once the stored stage shows the reported progress.
	pollUntil(t, a, a.Principal, sub.Job.JobID, func(j review.Job) bool { return j.Progress != nil && j.Progress.Done == 1 })
	seenA, seenB := make(chan review.Job, 8), make(chan review.Job, 8)
	local, remote := waited(t, a, a, sub.Job.JobID, seenA), waited(t, a, b, sub.Job.JobID, seenB)
	for _, w := range []struct {
		seen   chan review.Job
		answer <-chan review.Job
	}{{seenA, local}, {seenB, remote}} {
		select {
		case j := <-w.seen:
			if j.Status != "running" || j.Progress == nil || j.Progress.Done != 1 || j.Progress.Total != 3 {
				t.Errorf("first progress = %+v (%+v), want running, capturing 1 of 3", j, j.Progress)
			}
		case j := <-w.answer:
			t.Fatalf("answered %+v before any progress and before the run ended", j)
		}
	}
	close(gate)
	for name, ch := range map[string]<-chan review.Job{"this process": local, "another replica": remote} {
		if j := <-ch; j.Status != "completed" {
			t.Errorf("waiting in %s answered %+v, want the completed job", name, j)
		}
	}
}

// TestWaitOnAQueuedJob waits on a job no worker has taken: the wait ends
// with the job still queued, and a finished job answers at once whatever
// the wait.
func TestWaitOnAQueuedJob(t *testing.T) {
	t.Parallel()
	h := setup(t, reviewtest.Options{})
	sub, err := h.Service.Submit(context.Background(), h.Principal, submitParams("wait-key-0002"))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0 // OnProgress runs on the Get's goroutine
	g, err := h.Service.Get(context.Background(), h.Principal, &review.GetParams{JobID: sub.Job.JobID, WaitMS: 50,
		OnProgress: func(review.Job) { calls++ }})
	if err != nil || g.Job.Status != "queued" {
		t.Fatalf("Get = %+v, %v", g, err)
	}
	if calls != 1 {
		t.Errorf("OnProgress called %d times, want once, as the wait began", calls)
	}
}

// TestWaitBounds: wait_ms outside 0..25000 is INVALID_ARGUMENT naming it.
func TestWaitBounds(t *testing.T) {
	t.Parallel()
	h := setup(t, reviewtest.Options{})
	sub, err := h.Service.Submit(context.Background(), h.Principal, submitParams("wait-key-0003"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ms := range []int64{-1, review.MaxWait.Milliseconds() + 1} {
		_, err := h.Service.Get(context.Background(), h.Principal, &review.GetParams{JobID: sub.Job.JobID, WaitMS: ms})
		if e := wantCode(t, err, fault.InvalidArgument); !strings.HasPrefix(e.Message, "wait_ms:") {
			t.Errorf("wait_ms %d: %v", ms, e)
		}
	}
}

// TestPollAfterFollowsTheQueue: before any review has run here the interval
// is Options.PollAfter; once this process knows a review takes 2 s (four
// captures of 500 ms), a queued job is asked about when the jobs ahead of
// it should have been taken by the two workers, and never sooner than
// 250 ms.
func TestPollAfterFollowsTheQueue(t *testing.T) {
	t.Parallel()
	clock := reviewtest.NewClock(time.Now())
	h := setup(t, reviewtest.Options{Clock: clock, Review: review.Options{Workers: 2, PollAfter: 1500 * time.Millisecond}})
	first, err := h.Service.Submit(context.Background(), h.Principal, submitParams("pace-key-0000"))
	if err != nil || first.Job.PollAfterMS != 1500 {
		t.Fatalf("before any review ran: %+v, %v", first, err)
	}
	h.Service.ObservePace(2*time.Second, 4)
	fetch := int64(20) // the harness's FetchPollInterval, in ms
	want := []int64{250, 2000 + fetch, 2000 + fetch, 4000 + fetch}
	for i, w := range want {
		clock.Advance(time.Millisecond) // created after the one before
		sub, err := h.Service.Submit(context.Background(), h.Principal, submitParams(fmt.Sprintf("pace-key-%04d", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		if sub.Job.PollAfterMS != w {
			t.Errorf("job %d with %d queued ahead: poll_after_ms %d, want %d", i+1, i+1, sub.Job.PollAfterMS, w)
		}
	}
}

// TestGetNamesTheTarget: a completed review's Get says what was reviewed
// (the canonical URL and the revision the client expected), for the panel.
func TestGetNamesTheTarget(t *testing.T) {
	t.Parallel()
	h := setup(t, reviewtest.Options{Start: true})
	in := submitParams("target-key-1")
	in.ExpectedRevision = "rev-42"
	j := completedReview(t, h, "", in)
	g, err := h.Service.Get(context.Background(), h.Principal, &review.GetParams{JobID: j.JobID, View: review.ViewEvidence})
	if err != nil || g.Target == nil || g.Target.URL != "https://preview.example.com/pricing" || g.Target.ExpectedRevision != "rev-42" {
		t.Fatalf("Get = %+v, %v", g.Target, err)
	}
}
