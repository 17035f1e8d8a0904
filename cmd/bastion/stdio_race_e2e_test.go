package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioIdempotencyRace fires many design_review calls with one
// client_request_id at once over a real stdio connection: exactly one job is
// created, every caller gets its id, and only the first is not a replay.
func TestStdioIdempotencyRace(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	site := demoSite(t)
	s := startStdio(t, t.TempDir(), site)

	const n = 64
	var wg sync.WaitGroup
	results := make([]toolResult, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.call(t, "design_review", submitArgs("e2e-race-key-0001"))
		}()
	}
	wg.Wait()
	ids := map[string]int{}
	fresh := 0
	for _, r := range results {
		ids[r.Job.JobID]++
		if !r.Job.Reused {
			fresh++
		}
	}
	if len(ids) != 1 || fresh != 1 {
		t.Fatalf("%d concurrent submits with one key gave job ids %v and %d non-replays; want one job, one non-replay", n, ids, fresh)
	}
	// Every view of the one job answers, including findings.
	for id := range ids {
		s.wait(t, id, 90*time.Second)
		for _, view := range []string{"status", "summary", "findings", "focus", "evidence"} {
			s.call(t, "design_review_get", map[string]any{"job_id": id, "view": view})
		}
	}
}

// TestStdioCancelRace cancels reviews at different moments of their life over
// a real stdio connection and checks that the cancel answer and the job's
// final state agree: a late result never overwrites a cancel, and a job that
// finished first stays finished.
func TestStdioCancelRace(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	site := demoSite(t)
	s := startStdio(t, t.TempDir(), site)

	delays := []time.Duration{0, 300 * time.Millisecond, 900 * time.Millisecond, 6 * time.Second}
	for i, d := range delays {
		sub := s.call(t, "design_review", submitArgs(fmt.Sprintf("e2e-cancel-race-%04d", i)))
		time.Sleep(d)
		res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{
			Name: "design_review_cancel", Arguments: map[string]any{"job_id": sub.Job.JobID, "reason": "e2e race"},
		})
		if err != nil || res.IsError {
			t.Fatalf("cancel %d: %v %+v", i, err, res)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		var c struct {
			Status   string `json:"status"`
			Upstream string `json:"upstream_cancellation"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		t.Logf("delay %v: cancel answered status=%s upstream=%s", d, c.Status, c.Upstream)
		final := s.wait(t, sub.Job.JobID, 90*time.Second)
		switch c.Upstream {
		case "not_needed":
			if c.Status != "cancelled" || final.Job.Status != "cancelled" {
				t.Errorf("delay %v: cancel before start answered %s, job ended %s; want cancelled both", d, c.Status, final.Job.Status)
			}
		case "requested":
			if final.Job.Status != "cancelled" && final.Job.Status != "completed" {
				t.Errorf("delay %v: running job cancel requested, job ended %s", d, final.Job.Status)
			}
		case "already_terminal":
			if c.Status != final.Job.Status || c.Status == "cancelled" && final.Review != nil {
				t.Errorf("delay %v: terminal job answered %s but is %s", d, c.Status, final.Job.Status)
			}
		default:
			t.Errorf("delay %v: upstream_cancellation %q", d, c.Upstream)
		}
		if final.Job.Status == "cancelled" && final.Review != nil {
			t.Errorf("delay %v: a cancelled job carries a review: a late result overwrote the cancel", d)
		}
		// A second cancel never changes a terminal job.
		again := s.call(t, "design_review_cancel", map[string]any{"job_id": sub.Job.JobID})
		after := s.call(t, "design_review_get", map[string]any{"job_id": sub.Job.JobID, "view": "status"})
		if after.Job.Status != final.Job.Status {
			t.Errorf("delay %v: second cancel moved the job from %s to %s", d, final.Job.Status, after.Job.Status)
		}
		_ = again
	}
}
