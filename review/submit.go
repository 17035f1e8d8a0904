package review

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/store"
)

// Fixed INTERNAL_ERROR messages: the cause goes to logs, never to the caller.
const (
	msgSubmitFailed  = "the review could not be submitted"
	msgGetFailed     = "the review could not be retrieved"
	msgRecheckFailed = "the recheck could not be submitted"
	msgCancelFailed  = "the review could not be cancelled"
	msgPanelFailed   = "the panel action could not be routed"
)

// Submit queues a design review of a preview and returns at once; poll Get
// with the job id. A retry with the same client_request_id and the same
// normalized request returns the original job with reused set and costs
// nothing; a different request under the same key is IDEMPOTENCY_CONFLICT.
// Requires reviews:write.
func (s *Service) Submit(ctx context.Context, p principal.Principal, in *SubmitParams) (_ *SubmitResult, err error) {
	if s.tracer != nil {
		var span trace.Span
		ctx, span = s.startSpan(ctx, "review.submit")
		defer func() { endSpan(span, err) }()
	}
	res, err := s.submit(ctx, p, in)
	if err == nil && s.tracer != nil {
		trace.SpanFromContext(ctx).SetAttributes(attribute.String(attrJobID, res.Job.JobID), attribute.Bool(attrReused, res.Job.Reused))
	}
	return res, err
}

func (s *Service) submit(ctx context.Context, p principal.Principal, in *SubmitParams) (*SubmitResult, error) {
	if err := authorize(p, principal.ReviewsWrite, "submitting a review"); err != nil {
		return nil, err
	}
	req, err := normalizeSubmit(in)
	if err != nil {
		return nil, err
	}
	fp := fingerprint(req)
	if j, bal, err := s.replay(ctx, p, in.ClientRequestID, store.KindReview, fp, msgSubmitFailed); err != nil || j != nil {
		if err != nil {
			return nil, err
		}
		return &SubmitResult{SchemaVersion: SchemaVersion, Job: s.jobView(ctx, j, true), Budget: replayBudget(bal)}, nil
	}
	canonical, host, err := s.auth.AuthorizeTarget(ctx, p.Tenant(), req.URL)
	if err != nil {
		return nil, fault.From(err, msgSubmitFailed)
	}
	stored := *req
	stored.URL = canonical
	now := s.now()
	res, err := s.store.JobCreate(ctx, &store.JobCreateParams{
		Job: store.Job{
			Tenant: p.Tenant(), ID: newID("job_"), PrincipalID: p.ID(), Kind: store.KindReview,
			ClientRequestID: in.ClientRequestID, Fingerprint: fp, Request: mustJSON(&stored),
			ReviewID: newID("rev_"), Host: host, TargetFingerprint: targetFingerprint(canonical, req.ExpectedRevision),
			UnitsReserved: 1, CreatedAt: now, ExpiresAt: now.Add(s.opts.JobTTL),
		},
		DefaultBalance: s.opts.DefaultBalance,
		Enqueue:        s.enqueue,
	})
	if err != nil {
		return nil, s.createError(err, msgSubmitFailed, "client_request_id was reused with different normalized arguments")
	}
	if !res.Reused {
		s.met.JobSubmitted(string(store.KindReview))
	}
	return &SubmitResult{SchemaVersion: SchemaVersion, Job: s.jobView(ctx, res.Job, res.Reused), Budget: createBudget(res)}, nil
}

// replay returns the job already bound to key, if any, with the tenant's
// balance; a binding to a different kind or request is IDEMPOTENCY_CONFLICT.
func (s *Service) replay(ctx context.Context, p principal.Principal, key string, kind store.JobKind, fp, internalMsg string) (*store.Job, int64, error) {
	j, err := s.store.JobGetByKey(ctx, p.Tenant(), p.ID(), key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fault.From(err, internalMsg)
	}
	if j.Kind != kind {
		return nil, 0, fault.New(fault.IdempotencyConflict, "client_request_id was already used for a different job kind")
	}
	if j.Fingerprint != fp {
		if kind == store.KindRecheck {
			return nil, 0, fault.New(fault.IdempotencyConflict, "client_request_id was reused with different recheck arguments")
		}
		return nil, 0, fault.New(fault.IdempotencyConflict, "client_request_id was reused with different normalized arguments")
	}
	bal, err := s.store.BalanceGet(ctx, p.Tenant(), s.opts.DefaultBalance)
	if err != nil {
		return nil, 0, fault.From(err, internalMsg)
	}
	return j, bal, nil
}

// createError maps a JobCreate failure to the client's error.
func (s *Service) createError(err error, internalMsg, conflictMsg string) error {
	var be *store.BalanceError
	switch {
	case errors.Is(err, store.ErrIdempotencyConflict):
		return fault.New(fault.IdempotencyConflict, "%s", conflictMsg)
	case errors.As(err, &be):
		// The ledger has no automatic refill: waiting helps only if a
		// running job fails and is refunded, so the caller is sent to
		// whoever tops the tenant up rather than told to retry.
		e := fault.New(fault.BudgetExhausted, "the tenant has %d review units left and this request needs %d", be.Balance, be.Needed)
		e.Retriable = false
		return e.WithNext(fault.ContactSupport)
	}
	if _, ok := fault.As(err); !ok {
		s.log.Error("review: create job", "err", err)
	}
	return fault.From(err, internalMsg)
}

func replayBudget(balance int64) Budget {
	return Budget{PolicyVersion: BudgetPolicy, TenantUnitsRemaining: balance}
}

func createBudget(res *store.JobCreateResult) Budget {
	if res.Reused {
		return replayBudget(res.Balance)
	}
	return Budget{PolicyVersion: BudgetPolicy, UnitsReserved: res.Job.UnitsReserved, UnitsConsumed: res.Job.UnitsConsumed, TenantUnitsRemaining: res.Balance}
}

// enqueue inserts the job's River job in the store's transaction.
func (s *Service) enqueue(ctx context.Context, tx store.Tx, j *store.Job) error {
	return s.queue.insertTx(ctx, tx, jobArgs{Tenant: j.Tenant, JobID: j.ID})
}

// jobView is the client's view of a job row.
func (s *Service) jobView(ctx context.Context, j *store.Job, reused bool) Job {
	stage, progress := decodeStage(j.Stage)
	v := Job{
		JobID: j.ID, Status: string(j.State), Kind: string(j.Kind), Stage: stage, Progress: progress, ReviewID: j.ReviewID,
		CreatedAt: j.CreatedAt, PollAfterMS: s.pollAfter(ctx, j).Milliseconds(), ExpiresAt: j.ExpiresAt, Reused: reused,
	}
	if !j.CompletedAt.IsZero() {
		t := j.CompletedAt
		v.CompletedAt = &t
	}
	if j.State == store.Failed {
		v.Error = &JobError{Code: j.ErrorCode, Message: j.ErrorMessage}
	}
	return v
}
