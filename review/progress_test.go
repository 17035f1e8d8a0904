package review_test

import (
	"context"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/review/reviewtest"
)

// pollUntil reads the job's status through h as p until ok holds, and
// returns it. It fails t after 20 seconds.
func pollUntil(t *testing.T, h *reviewtest.Harness, p principal.Principal, id string, ok func(review.Job) bool) review.Job {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last review.Job
	for time.Now().Before(deadline) {
		g, err := h.Service.Get(context.Background(), p, &review.GetParams{JobID: id, View: review.ViewStatus})
		if err != nil {
			t.Fatal(err)
		}
		if last = g.Job; ok(last) {
			return last
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("job %s never reached the state asked for; last %+v", id, last)
	return review.Job{}
}

// TestStageIsStoredForEveryReplica runs a review whose engine reports
// capturing progress, out of order as concurrent captures may, and holds
// the run at its gate: a second Service on the same database (another
// replica, running no jobs) sees the furthest stage with its counts, and
// the completed job is finalizing with no counts.
func TestStageIsStoredForEveryReplica(t *testing.T) {
	t.Parallel()
	gate, started := make(chan struct{}), make(chan string, 1)
	eng := &reviewtest.Engine{Result: reviewtest.SampleResult(), Gate: gate, Started: started, Steps: []engine.Progress{
		{Stage: engine.StageCapturing, Total: 4},
		{Stage: engine.StageCapturing, Done: 2, Total: 4},
		{Stage: engine.StageCapturing, Done: 1, Total: 4}, // a capture that ended earlier, reported later
	}}
	a := setup(t, reviewtest.Options{Start: true, Engine: eng})
	b := setup(t, reviewtest.Options{Path: a.Path})
	sub, err := a.Service.Submit(context.Background(), a.Principal, submitParams("stage-key-1"))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	j := pollUntil(t, b, a.Principal, sub.Job.JobID, func(j review.Job) bool {
		return j.Stage == engine.StageCapturing && j.Progress != nil && j.Progress.Done == 2
	})
	if j.Status != "running" || j.Progress.Total != 4 {
		t.Errorf("replica sees %+v (progress %+v), want running, capturing 2 of 4", j, j.Progress)
	}
	close(gate)
	done := a.WaitTerminal(t, a.Principal, sub.Job.JobID)
	if done.Status != "completed" || done.Stage != "finalizing" || done.Progress != nil {
		t.Errorf("completed job %+v, progress %+v", done, done.Progress)
	}
}

// TestStageStartsAtCapturing: a job the engine has not yet reported on is
// capturing, not judging, from the moment it starts.
func TestStageStartsAtCapturing(t *testing.T) {
	t.Parallel()
	gate, started := make(chan struct{}), make(chan string, 1)
	h := setup(t, reviewtest.Options{Start: true, Engine: &reviewtest.Engine{Result: reviewtest.SampleResult(), Gate: gate, Started: started}})
	sub, err := h.Service.Submit(context.Background(), h.Principal, submitParams("stage-start-1"))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	g, err := h.Service.Get(context.Background(), h.Principal, &review.GetParams{JobID: sub.Job.JobID, View: review.ViewStatus})
	if err != nil || g.Job.Status != "running" || g.Job.Stage != engine.StageCapturing || g.Job.Progress != nil {
		t.Errorf("started job = %+v, %v; want running, capturing, no counts yet", g.Job, err)
	}
	close(gate)
	h.WaitTerminal(t, h.Principal, sub.Job.JobID)
}
