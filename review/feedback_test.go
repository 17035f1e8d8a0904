package review_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/review/reviewtest"
	"github.com/bastion-mcp/bastion/store"
)

func TestRecordFeedback(t *testing.T) {
	t.Parallel()
	b := setup(t, reviewtest.Options{Start: true, Engine: &reviewtest.Engine{Result: reviewtest.SampleResult()}})
	ctx := context.Background()
	j := completedReview(t, b, "key-feedback-01", nil)
	r, err := b.Service.RecordFeedback(ctx, b.Principal, &review.FeedbackParams{ReviewID: j.ReviewID, FindingID: "f_002", Verdict: store.Dismissed, Reason: "brand heading"})
	if err != nil || r.Kind != "hierarchy" || r.Verdict != store.Dismissed || !strings.HasPrefix(r.EventID, "fb_") {
		t.Fatalf("record = %+v, %v", r, err)
	}
	// apply_fix is an acceptance; recheck records nothing.
	if _, err := b.Service.PanelAction(ctx, b.Principal, &review.PanelActionParams{JobID: j.JobID, Action: review.ActionApplyFix, FindingID: "f_001"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Service.PanelAction(ctx, b.Principal, &review.PanelActionParams{JobID: j.JobID, Action: review.ActionRecheck, FindingID: "f_003"}); err != nil {
		t.Fatal(err)
	}
	evs, err := b.Store.FeedbackList(ctx, b.Principal.Tenant())
	if err != nil || len(evs) != 2 {
		t.Fatalf("events = %+v, %v; want 2", evs, err)
	}
	byFinding := map[string]store.FeedbackEvent{evs[0].FindingID: evs[0], evs[1].FindingID: evs[1]}
	if e := byFinding["f_002"]; e.Verdict != store.Dismissed || e.Reason != "brand heading" || e.PrincipalID != b.Principal.ID() || e.ReviewID != j.ReviewID {
		t.Fatalf("dismissal = %+v", e)
	}
	if e := byFinding["f_001"]; e.Verdict != store.Accepted || e.Kind != "contrast" {
		t.Fatalf("apply_fix event = %+v", e)
	}
	// The summary view counts the tenant's dismissals of this review's kinds;
	// other views carry none.
	g, err := b.Service.Get(ctx, b.Principal, &review.GetParams{JobID: j.JobID, View: review.ViewSummary})
	if err != nil || len(g.DismissedBefore) != 1 || g.DismissedBefore["hierarchy"] != 1 {
		t.Fatalf("summary DismissedBefore = %v, %v; want hierarchy 1", g.DismissedBefore, err)
	}
	if g, err := b.Service.Get(ctx, b.Principal, &review.GetParams{JobID: j.JobID, View: review.ViewFindings}); err != nil || g.DismissedBefore != nil {
		t.Fatalf("findings view DismissedBefore = %v, %v", g.DismissedBefore, err)
	}

	bad := []struct {
		name string
		in   review.FeedbackParams
		code fault.Code
	}{
		{"UnknownVerdict", review.FeedbackParams{ReviewID: j.ReviewID, FindingID: "f_001", Verdict: "liked"}, fault.InvalidArgument},
		{"ControlInReason", review.FeedbackParams{ReviewID: j.ReviewID, FindingID: "f_001", Verdict: store.Disputed, Reason: "a\x00b"}, fault.InvalidArgument},
		{"LongReason", review.FeedbackParams{ReviewID: j.ReviewID, FindingID: "f_001", Verdict: store.Disputed, Reason: strings.Repeat("é", 501)}, fault.InvalidArgument},
		{"NoFinding", review.FeedbackParams{ReviewID: j.ReviewID, Verdict: store.Disputed}, fault.InvalidArgument},
		{"UnknownReview", review.FeedbackParams{ReviewID: "rev_nope", FindingID: "f_001", Verdict: store.Disputed}, fault.JobNotFound},
		{"UnknownFinding", review.FeedbackParams{ReviewID: j.ReviewID, FindingID: "f_999", Verdict: store.Disputed}, fault.FindingNotFound},
	}
	for _, tc := range bad {
		_, err := b.Service.RecordFeedback(ctx, b.Principal, &tc.in)
		e := wantCode(t, err, tc.code)
		if e.Retriable {
			t.Fatalf("%s: %+v is retriable", tc.name, e)
		}
	}
	if _, err := b.Service.RecordFeedback(ctx, b.Principal, &review.FeedbackParams{ReviewID: j.ReviewID, FindingID: "f_001", Verdict: store.Disputed, Reason: strings.Repeat("é", 500)}); err != nil {
		t.Fatalf("a 500-character reason: %v", err)
	}
	// Another principal of the tenant cannot see alice's review; a reader cannot write.
	bob := reviewtest.NewPrincipal(t, b.Principal.Tenant(), "bob", principal.ReviewsWrite)
	if _, err := b.Service.RecordFeedback(ctx, bob, &review.FeedbackParams{ReviewID: j.ReviewID, FindingID: "f_001", Verdict: store.Dismissed}); err == nil {
		t.Fatal("bob recorded feedback on alice's review")
	}
	reader := reviewtest.NewPrincipal(t, b.Principal.Tenant(), b.Principal.ID(), principal.ReviewsRead)
	wantCode(t, func() error {
		_, err := b.Service.RecordFeedback(ctx, reader, &review.FeedbackParams{ReviewID: j.ReviewID, FindingID: "f_001", Verdict: store.Dismissed})
		return err
	}(), fault.InsufficientScope)
}
