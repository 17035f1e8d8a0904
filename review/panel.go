package review

import (
	"context"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/store"
)

// PanelAction routes a review-panel interaction: apply_fix returns a grounded
// finding's fix (one with a selector and a concrete fix that is not advisory)
// for the agent's own hands, or human_only; recheck returns the finding ids to
// recheck. It costs nothing and never sets a status; apply_fix records the
// finding as accepted (a feedback event), recheck records nothing, since a
// recheck is not a verdict. Requires reviews:read.
func (s *Service) PanelAction(ctx context.Context, p principal.Principal, in *PanelActionParams) (*PanelActionResult, error) {
	if err := authorize(p, principal.ReviewsRead, "acting on a review panel"); err != nil {
		return nil, err
	}
	if in == nil {
		return nil, invalid("arguments", "are required")
	}
	switch in.Action {
	case ActionApplyFix:
		if in.FindingID == "" {
			return nil, invalid("finding_id", "apply_fix requires a finding_id")
		}
	case ActionRecheck:
	default:
		return nil, invalid("action", "must be apply_fix or recheck")
	}
	if in.FindingID != "" {
		if err := checkKey("finding_id", in.FindingID, 3); err != nil {
			return nil, err
		}
	}
	j, err := s.lookup(ctx, p, in.JobID, "no job with id "+in.JobID, msgPanelFailed)
	if err != nil {
		return nil, err
	}
	if j.Kind != store.KindReview || j.State != store.Completed {
		return nil, fault.New(fault.ReviewNotReady, "job %s has no completed review yet", j.ID)
	}
	res, err := decodeResult(j)
	if err != nil {
		return nil, fault.Wrap(err, fault.InternalError, msgPanelFailed)
	}
	out := &PanelActionResult{SchemaVersion: SchemaVersion, JobID: j.ID, ReviewID: j.ReviewID}
	var f *design.Finding
	if in.FindingID != "" {
		if f = findingOf(res, in.FindingID); f == nil {
			return nil, fault.New(fault.FindingNotFound, "finding %s does not belong to review %s", in.FindingID, j.ReviewID).WithNext(fault.None)
		}
	}
	if in.Action == ActionRecheck {
		out.Response = PanelResponse{Type: ResponseRecheck}
		if f != nil {
			out.Response.Refs = []string{f.ID}
		} else {
			for _, g := range res.Findings {
				if grounded(&g) {
					out.Response.Refs = append(out.Response.Refs, g.ID)
				}
			}
		}
		return out, nil
	}
	// Asking for a finding's fix is the team accepting it.
	if s.fb != nil {
		if _, err := s.recordVerdict(ctx, p, j, f, store.Accepted, ""); err != nil {
			return nil, fault.Wrap(err, fault.InternalError, msgPanelFailed)
		}
	}
	switch {
	case res.Grade == design.NothingReviewed:
		out.Response = PanelResponse{Type: ResponseUnjudged, FindingID: f.ID}
	case grounded(f):
		out.Response = PanelResponse{Type: ResponseFix, FindingID: f.ID, Fix: f.Fix}
	default:
		out.Response = PanelResponse{Type: ResponseHumanOnly, FindingID: f.ID}
	}
	return out, nil
}

// grounded reports whether an agent can apply f's fix on its own: it names
// an element, says concretely what to change, and is not a human judgment.
func grounded(f *design.Finding) bool {
	return f.Selector != "" && f.Fix != "" && !f.Advisory
}
