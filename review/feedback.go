package review

import (
	"context"
	"errors"
	"unicode/utf8"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/store"
)

const (
	msgFeedbackFailed = "the feedback could not be recorded"
	// maxReasonLen bounds a feedback reason, in characters.
	maxReasonLen = 500
)

// FeedbackParams is one verdict on one finding of a completed review.
type FeedbackParams struct {
	ReviewID  string        `json:"review_id"`
	FindingID string        `json:"finding_id"`
	Verdict   store.Verdict `json:"verdict"`
	Reason    string        `json:"reason,omitempty"`
}

// FeedbackResult names the recorded event.
type FeedbackResult struct {
	SchemaVersion string        `json:"schema_version"`
	EventID       string        `json:"event_id"`
	ReviewID      string        `json:"review_id"`
	FindingID     string        `json:"finding_id"`
	Kind          string        `json:"kind"`
	Verdict       store.Verdict `json:"verdict"`
}

// RecordFeedback appends the caller's verdict (accepted, dismissed or
// disputed) on a finding of one of their completed reviews. Events are
// append-only; a later verdict on the same finding is another event.
// Requires reviews:write.
func (s *Service) RecordFeedback(ctx context.Context, p principal.Principal, in *FeedbackParams) (*FeedbackResult, error) {
	if err := authorize(p, principal.ReviewsWrite, "recording feedback"); err != nil {
		return nil, err
	}
	if in == nil {
		return nil, invalid("arguments", "are required")
	}
	if err := checkKey("review_id", in.ReviewID, 3); err != nil {
		return nil, err
	}
	if err := checkKey("finding_id", in.FindingID, 3); err != nil {
		return nil, err
	}
	if !in.Verdict.Valid() {
		return nil, invalid("verdict", "must be accepted, dismissed or disputed")
	}
	if hasControl(in.Reason) || utf8.RuneCountInString(in.Reason) > maxReasonLen {
		return nil, invalid("reason", "must be at most %d characters with no control characters", maxReasonLen)
	}
	if s.fb == nil {
		return nil, fault.New(fault.Unavailable, "feedback is not recorded by this server")
	}
	rev, err := s.store.JobGetReview(ctx, p.Tenant(), in.ReviewID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (rev.PrincipalID != p.ID() || rev.State != store.Completed)) {
		return nil, fault.New(fault.JobNotFound, "no completed review %s", in.ReviewID)
	}
	if err != nil {
		return nil, fault.From(err, msgFeedbackFailed)
	}
	if !s.now().Before(rev.ExpiresAt) {
		return nil, fault.New(fault.JobExpired, "review %s has expired", in.ReviewID)
	}
	res, err := decodeResult(rev)
	if err != nil {
		return nil, fault.Wrap(err, fault.InternalError, msgFeedbackFailed)
	}
	f := findingOf(res, in.FindingID)
	if f == nil {
		return nil, fault.New(fault.FindingNotFound, "finding %s does not belong to review %s", in.FindingID, in.ReviewID).WithNext(fault.None)
	}
	e, err := s.recordVerdict(ctx, p, rev, f, in.Verdict, in.Reason)
	if err != nil {
		return nil, fault.Wrap(err, fault.InternalError, msgFeedbackFailed)
	}
	return &FeedbackResult{SchemaVersion: SchemaVersion, EventID: e.ID, ReviewID: e.ReviewID, FindingID: e.FindingID, Kind: e.Kind, Verdict: e.Verdict}, nil
}

// recordVerdict appends p's verdict on finding f of review job rev.
func (s *Service) recordVerdict(ctx context.Context, p principal.Principal, rev *store.Job, f *design.Finding, v store.Verdict, reason string) (*store.FeedbackEvent, error) {
	e := &store.FeedbackEvent{Tenant: p.Tenant(), ID: newID("fb_"), ReviewID: rev.ReviewID, FindingID: f.ID, Kind: f.Kind,
		Verdict: v, Reason: reason, PrincipalID: p.ID(), At: s.now()}
	// Under WithoutCancel, like audit: a client that hangs up after the
	// answer was decided cannot drop its record.
	return e, s.fb.FeedbackRecord(context.WithoutCancel(ctx), e)
}

// findingOf returns the finding of res with this id, or nil.
func findingOf(res *design.Result, id string) *design.Finding {
	for i := range res.Findings {
		if res.Findings[i].ID == id {
			return &res.Findings[i]
		}
	}
	return nil
}

// dismissedBefore counts the tenant's dismissals of the kinds res has, or
// nil when there are none.
func (s *Service) dismissedBefore(ctx context.Context, p principal.Principal, res *design.Result) (map[string]int, error) {
	if s.fb == nil || len(res.Findings) == 0 {
		return nil, nil
	}
	all, err := s.fb.FeedbackCountByKind(ctx, p.Tenant(), store.Dismissed)
	if err != nil {
		return nil, err
	}
	var out map[string]int
	for _, f := range res.Findings {
		if n := all[f.Kind]; n > 0 {
			if out == nil {
				out = map[string]int{}
			}
			out[f.Kind] = n
		}
	}
	return out, nil
}
