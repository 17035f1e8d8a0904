package reviewmcp_test

import (
	"context"
	"testing"

	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/review/reviewtest"
	"github.com/bastion-mcp/bastion/reviewmcp"
	"github.com/bastion-mcp/bastion/store"
)

// TestPanelActionRecordsFeedback: apply_fix over MCP records an accepted
// feedback event, and the summary view (checked against the tool's output
// schema) counts the tenant's dismissals of this review's kinds.
func TestPanelActionRecordsFeedback(t *testing.T) {
	t.Parallel()
	h := newHarness(t, &reviewtest.Engine{Result: reviewtest.SampleResult()}, "", true)
	ctx := context.Background()
	sub, err := h.Service.Submit(ctx, h.Principal, &review.SubmitParams{URL: "https://" + reviewtest.PreviewHost + "/", ClientRequestID: "key-feedback-mcp"})
	if err != nil {
		t.Fatal(err)
	}
	j := h.WaitTerminal(t, h.Principal, sub.Job.JobID)
	c := h.connect(t, h.Principal, clientOpts{})
	if res := c.call(reviewmcp.ToolPanelAction, map[string]any{"job_id": j.JobID, "action": "apply_fix", "finding_id": "f_001"}); res.IsError {
		t.Fatalf("apply_fix: %+v", res)
	}
	evs, err := h.Store.FeedbackList(ctx, h.Principal.Tenant())
	if err != nil || len(evs) != 1 || evs[0].Verdict != store.Accepted || evs[0].FindingID != "f_001" || evs[0].Kind != "contrast" {
		t.Fatalf("events after apply_fix = %+v, %v", evs, err)
	}
	sum := structured(t, c.call(reviewmcp.ToolGet, map[string]any{"job_id": j.JobID, "view": "summary"}))
	if _, ok := sum["summary"].(map[string]any)["dismissed_before"]; ok {
		t.Fatalf("dismissed_before with no dismissal: %v", sum["summary"])
	}
	if _, err := h.Service.RecordFeedback(ctx, h.Principal, &review.FeedbackParams{ReviewID: j.ReviewID, FindingID: "f_003", Verdict: store.Dismissed}); err != nil {
		t.Fatal(err)
	}
	sum = structured(t, c.call(reviewmcp.ToolGet, map[string]any{"job_id": j.JobID, "view": "summary"}))
	db, _ := sum["summary"].(map[string]any)["dismissed_before"].(map[string]any)
	if len(db) != 1 || db["spacing"] != 1.0 {
		t.Fatalf("dismissed_before = %v, want spacing 1", sum["summary"])
	}
}
