package review

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/store"
	"net/url"
	"slices"
	"strings"
)

// storedRecheck is a recheck job's stored request: the normalized input plus
// what the worker needs.
type storedRecheck struct {
	recheckRequest
	CanonicalURL      string `json:"canonical_url"`
	BeforeFingerprint string `json:"before_fingerprint"`
	AfterFingerprint  string `json:"after_fingerprint"`
}

// Recheck queues a re-measurement of findings of a completed review after
// the agent changed the UI, and returns at once; the report arrives through
// Get on the returned job. It costs max(1, ceil(n/3)) units. Rules, in order
// (a refusal costs nothing and uses no limiter slot): idempotency; the
// caller's own unexpired completed review; findings of that review; the same
// host; target authorization; a changed target (URL or expected_revision)
// else TARGET_UNCHANGED; then the limiter (principal burst, per-finding
// half-hour and day, the review's half-hour unit chain, backoff) whose state
// is in the store. Requires reviews:write.
func (s *Service) Recheck(ctx context.Context, p principal.Principal, in *RecheckParams) (*RecheckResult, error) {
	if err := authorize(p, principal.ReviewsWrite, "submitting a recheck"); err != nil {
		return nil, err
	}
	req, err := normalizeRecheck(in)
	if err != nil {
		return nil, err
	}
	fp := fingerprint(req)
	if j, bal, err := s.replay(ctx, p, in.ClientRequestID, store.KindRecheck, fp, msgRecheckFailed); err != nil || j != nil {
		if err != nil {
			return nil, err
		}
		out := &RecheckResult{SchemaVersion: SchemaVersion, Job: s.jobView(ctx, j, true), Budget: replayBudget(bal)}
		if j.State == store.Completed {
			var rep RecheckReport
			if json.Unmarshal(j.Result, &rep) == nil {
				out.Recheck = &rep
			}
		}
		return out, nil
	}
	rev, err := s.store.JobGetReview(ctx, p.Tenant(), req.ReviewID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && rev.PrincipalID != p.ID()) {
		return nil, fault.New(fault.JobNotFound, "no completed review %s", req.ReviewID)
	}
	if err != nil {
		return nil, fault.From(err, msgRecheckFailed)
	}
	if !s.now().Before(rev.ExpiresAt) {
		return nil, fault.New(fault.JobExpired, "review %s has expired", req.ReviewID)
	}
	if rev.State != store.Completed {
		if rev.State.Terminal() {
			return nil, fault.New(fault.JobNotFound, "no completed review %s", req.ReviewID)
		}
		return nil, fault.New(fault.ReviewNotReady, "review %s has not completed yet", req.ReviewID)
	}
	res, err := decodeResult(rev)
	if err != nil {
		return nil, fault.Wrap(err, fault.InternalError, msgRecheckFailed)
	}
	for _, id := range req.FindingIDs {
		if !slices.ContainsFunc(res.Findings, func(f design.Finding) bool { return f.ID == id }) {
			return nil, fault.New(fault.FindingNotFound, "finding %s does not belong to review %s", id, req.ReviewID)
		}
	}
	var reviewed reviewRequest
	if err := json.Unmarshal(rev.Request, &reviewed); err != nil {
		return nil, fault.Wrap(err, fault.InternalError, msgRecheckFailed)
	}
	target := reviewed.URL
	if req.URL != "" {
		target = req.URL
		// The cheap same-host check first, so a wrong host costs no DNS.
		if u, err := url.Parse(req.URL); err != nil || !strings.EqualFold(u.Hostname(), rev.Host) {
			return nil, sameHostError()
		}
	}
	canonical, host, err := s.auth.AuthorizeTarget(ctx, p.Tenant(), target)
	if err != nil {
		return nil, fault.From(err, msgRecheckFailed)
	}
	if host != rev.Host {
		return nil, sameHostError()
	}
	after := targetFingerprint(canonical, req.ExpectedRevision)
	if after == rev.TargetFingerprint {
		return nil, fault.New(fault.TargetUnchanged, "the target fingerprint is unchanged since the review; nothing to recheck")
	}
	units := recheckUnits(len(req.FindingIDs))
	now := s.now()
	stored := storedRecheck{recheckRequest: *req, CanonicalURL: canonical, BeforeFingerprint: rev.TargetFingerprint, AfterFingerprint: after}
	created, err := s.store.JobCreate(ctx, &store.JobCreateParams{
		Job: store.Job{
			Tenant: p.Tenant(), ID: newID("job_"), PrincipalID: p.ID(), Kind: store.KindRecheck,
			ClientRequestID: in.ClientRequestID, Fingerprint: fp, Request: mustJSON(&stored),
			ReviewID: rev.ReviewID, Host: host, TargetFingerprint: after,
			UnitsReserved: units, CreatedAt: now, ExpiresAt: now.Add(s.opts.JobTTL),
		},
		DefaultBalance: s.opts.DefaultBalance,
		Recheck: &store.RecheckAdmission{
			FindingIDs: req.FindingIDs,
			Since:      now.Add(-dayWindow),
			Admit: func(u *store.RecheckUsage) error {
				return s.opts.RecheckLimits.check(now, u, req.FindingIDs, units)
			},
		},
		Enqueue: s.enqueue,
	})
	if err != nil {
		return nil, s.createError(err, msgRecheckFailed, "client_request_id was reused with different recheck arguments")
	}
	return &RecheckResult{SchemaVersion: SchemaVersion, Job: s.jobView(ctx, created.Job, created.Reused), Budget: createBudget(created)}, nil
}

func sameHostError() error {
	return fault.New(fault.URLNotAllowed, "a recheck must target the same host as the original review").WithNext(fault.StartNewReview)
}
