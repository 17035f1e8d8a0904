package review

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/store"
	"slices"
)

// lookup returns p's job id, or JOB_NOT_FOUND (unknown, another tenant's or
// another principal's: indistinguishable on purpose) or JOB_EXPIRED.
func (s *Service) lookup(ctx context.Context, p principal.Principal, id, notFoundMsg, internalMsg string) (*store.Job, error) {
	if err := checkKey("job_id", id, 8); err != nil {
		return nil, err
	}
	j, err := s.store.JobGet(ctx, p.Tenant(), id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && j.PrincipalID != p.ID()) {
		return nil, fault.New(fault.JobNotFound, "%s", notFoundMsg)
	}
	if err != nil {
		return nil, fault.From(err, internalMsg)
	}
	if !s.now().Before(j.ExpiresAt) {
		return nil, fault.New(fault.JobExpired, "job %s has expired", id)
	}
	return j, nil
}

// Get returns a job and, for a completed one, the data its view asks for.
// Reads cost no units. Requires reviews:read.
func (s *Service) Get(ctx context.Context, p principal.Principal, in *GetParams) (*GetResult, error) {
	if err := authorize(p, principal.ReviewsRead, "reading a review"); err != nil {
		return nil, err
	}
	if in == nil {
		return nil, invalid("arguments", "are required")
	}
	view := in.View
	switch view {
	case "":
		view = ViewSummary
	case ViewStatus, ViewSummary, ViewFindings, ViewFocus, ViewEvidence:
	default:
		return nil, invalid("view", "must be status, summary, findings, focus or evidence")
	}
	if err := checkKey("job_id", in.JobID, 8); err != nil {
		return nil, err
	}
	if in.WaitMS < 0 || in.WaitMS > MaxWait.Milliseconds() {
		return nil, invalid("wait_ms", "must be between 0 and %d", MaxWait.Milliseconds())
	}
	j, err := s.lookup(ctx, p, in.JobID, "no job with id "+in.JobID, msgGetFailed)
	if err != nil {
		return nil, err
	}
	if in.WaitMS > 0 && !j.State.Terminal() {
		if j, err = s.await(ctx, p, j, in); err != nil {
			return nil, err
		}
	}
	out := &GetResult{SchemaVersion: SchemaVersion, Job: s.jobView(ctx, j, false)}
	if view == ViewStatus || j.State != store.Completed {
		return out, nil
	}
	switch j.Kind {
	case store.KindRecheck:
		var rep RecheckReport
		if err := json.Unmarshal(j.Result, &rep); err != nil {
			return nil, fault.Wrap(err, fault.InternalError, msgGetFailed)
		}
		out.Recheck = &rep
		if view == ViewEvidence {
			if out.Evidence, err = s.recheckEvidence(ctx, p, j, &rep); err != nil {
				return nil, fault.From(err, msgGetFailed)
			}
		}
	case store.KindReview:
		res, err := decodeResult(j)
		if err != nil {
			return nil, fault.Wrap(err, fault.InternalError, msgGetFailed)
		}
		if view == ViewFocus {
			res.Findings = slices.DeleteFunc(res.Findings, func(f design.Finding) bool { return !grounded(&f) })
		}
		out.Review = res
		if view == ViewSummary {
			if out.DismissedBefore, err = s.dismissedBefore(ctx, p, res); err != nil {
				return nil, fault.From(err, msgGetFailed)
			}
		}
		if view == ViewEvidence {
			var req reviewRequest
			if json.Unmarshal(j.Request, &req) == nil {
				out.Target = &Target{URL: req.URL, ExpectedRevision: req.ExpectedRevision}
			}
			ev, err := s.store.EvidenceList(ctx, p.Tenant(), j.ID)
			if err != nil {
				return nil, fault.From(err, msgGetFailed)
			}
			for _, e := range ev {
				out.Evidence = append(out.Evidence, design.Evidence{ID: e.ID, MIMEType: e.MIMEType, Data: e.Data})
			}
		}
	}
	return out, nil
}

// recheckEvidence is the before and after of a recheck: the crops it cut
// of each element now and the review's crops of the same findings.
func (s *Service) recheckEvidence(ctx context.Context, p principal.Principal, j *store.Job, rep *RecheckReport) ([]design.Evidence, error) {
	var out []design.Evidence
	add := func(jobID string, want func(id string) bool) error {
		ev, err := s.store.EvidenceList(ctx, p.Tenant(), jobID)
		if err != nil {
			return err
		}
		for _, e := range ev {
			if want(e.ID) {
				out = append(out, design.Evidence{ID: e.ID, MIMEType: e.MIMEType, Data: e.Data})
			}
		}
		return nil
	}
	before := func(id string) bool {
		return slices.ContainsFunc(rep.Outcomes, func(o design.RecheckOutcome) bool { return o.BeforeEvidenceID == id })
	}
	if err := add(j.ID, func(string) bool { return true }); err != nil {
		return nil, err
	}
	rev, err := s.store.JobGetReview(ctx, p.Tenant(), j.ReviewID)
	if errors.Is(err, store.ErrNotFound) {
		return out, nil // the review expired: the crops now are all there is
	}
	if err != nil {
		return nil, err
	}
	if err := add(rev.ID, before); err != nil {
		return nil, err
	}
	return out, nil
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v) // cannot fail: plain structs of strings
	return b
}
