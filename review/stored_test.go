package review_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/review/reviewtest"
)

// TestStoredResultFormat checks the stored review row's format version: a
// completed review is written with it, a row from before the field existed
// reads as format 1, and a row in a format this binary does not know is
// refused rather than read as if it were the current shape.
func TestStoredResultFormat(t *testing.T) {
	t.Parallel()
	b := setup(t, reviewtest.Options{Start: true})
	ctx := context.Background()
	j := completedReview(t, b, "key-format-001", nil)
	row, err := b.Store.JobGet(ctx, "acme", j.JobID)
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string]any
	if err := json.Unmarshal(row.Result, &stored); err != nil {
		t.Fatal(err)
	}
	if stored["format"] != 1.0 {
		t.Fatalf("stored row's format = %v, want 1", stored["format"])
	}
	rewrite := func(format any) {
		t.Helper()
		if format == nil {
			delete(stored, "format")
		} else {
			stored["format"] = format
		}
		b2, _ := json.Marshal(stored)
		if _, err := b.Store.SQL().ExecContext(ctx, `UPDATE jobs SET result = ? WHERE tenant_id = ? AND job_id = ?`, b2, "acme", j.JobID); err != nil {
			t.Fatal(err)
		}
	}
	get := func() (*review.GetResult, error) {
		return b.Service.Get(ctx, b.Principal, &review.GetParams{JobID: j.JobID})
	}
	rewrite(nil)
	if g, err := get(); err != nil || g.Review == nil || len(g.Review.Findings) != 4 {
		t.Fatalf("row without format: %+v, %v", g, err)
	}
	rewrite(2)
	_, err = get()
	wantCode(t, err, fault.InternalError)
	_, err = b.Service.PanelAction(ctx, b.Principal, &review.PanelActionParams{JobID: j.JobID, Action: review.ActionRecheck})
	wantCode(t, err, fault.InternalError)
}
