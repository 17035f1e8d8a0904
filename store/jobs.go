package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

var errNilParams = errors.New("store: nil params")

// Jobs is the job state machine, the unit ledger and cancel arbitration,
// written once over a Driver: it implements Store's job, evidence and
// balance methods, and an adapter embeds it (with Targets and PATs) over its driver.
type Jobs struct {
	Driver Driver
}

// inTx runs fn in one transaction of d acting for tenant and commits when
// fn returns nil.
func inTx(ctx context.Context, d Driver, tenant string, fn func(ExecutorTx) error) error {
	tx, err := d.Begin(ctx, tenant)
	if err != nil {
		return err
	}
	// A cancelled ctx must not keep the rollback from reaching the database.
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// JobGet implements Store.
func (s Jobs) JobGet(ctx context.Context, tenant, id string) (*Job, error) {
	var out *Job
	err := s.Driver.Read(ctx, tenant, func(ex Executor) (err error) {
		out, err = ex.JobGet(ctx, &JobGetParams{Tenant: tenant, ID: id})
		return err
	})
	return out, err
}

// JobsAhead implements Store.
func (s Jobs) JobsAhead(ctx context.Context, j *Job) (int, error) {
	if j == nil {
		return 0, errNilParams
	}
	var n int
	err := s.Driver.Read(ctx, j.Tenant, func(ex Executor) (err error) {
		n, err = ex.JobCountQueued(ctx, j.Tenant, j.CreatedAt)
		return err
	})
	return n, err
}

// JobGetByKey implements Store.
func (s Jobs) JobGetByKey(ctx context.Context, tenant, principalID, key string) (*Job, error) {
	var out *Job
	err := s.Driver.Read(ctx, tenant, func(ex Executor) (err error) {
		out, err = ex.JobGetByKey(ctx, tenant, principalID, key)
		return err
	})
	return out, err
}

// JobGetReview implements Store.
func (s Jobs) JobGetReview(ctx context.Context, tenant, reviewID string) (*Job, error) {
	var out *Job
	err := s.Driver.Read(ctx, tenant, func(ex Executor) (err error) {
		out, err = ex.JobGetReview(ctx, tenant, reviewID)
		return err
	})
	return out, err
}

// JobCreate implements Store. The tenant's ledger row is locked first, so
// idempotency checks, limiter admissions and reservations of one tenant
// are serialized across writers, whatever else the database serializes.
func (s Jobs) JobCreate(ctx context.Context, p *JobCreateParams) (*JobCreateResult, error) {
	if p == nil {
		return nil, errNilParams
	}
	j := p.Job
	var res *JobCreateResult
	err := inTx(ctx, s.Driver, j.Tenant, func(tx ExecutorTx) error {
		if err := tx.BalanceInit(ctx, j.Tenant, max(p.DefaultBalance, 0), j.CreatedAt); err != nil {
			return err
		}
		bal, err := tx.BalanceGet(ctx, &BalanceGetParams{Tenant: j.Tenant, ForUpdate: true})
		if err != nil {
			return err
		}
		// Read under the tenant's lock: a concurrent creator of the same key
		// has committed (and is seen) or has not started.
		existing, err := tx.JobGetByKey(ctx, j.Tenant, j.PrincipalID, j.ClientRequestID)
		switch {
		case err == nil:
			if existing.Kind != j.Kind || existing.Fingerprint != j.Fingerprint {
				return ErrIdempotencyConflict
			}
			res = &JobCreateResult{Job: existing, Reused: true, Balance: bal}
			return nil
		case !errors.Is(err, ErrNotFound):
			return err
		}
		created, err := createJob(ctx, tx, p, &j, bal)
		if err != nil {
			return err
		}
		res = &JobCreateResult{Job: created, Balance: bal - j.UnitsReserved}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// createJob reserves the units, admits a recheck, writes the row and runs
// the enqueue hook for a new key whose tenant has balance bal.
func createJob(ctx context.Context, tx ExecutorTx, p *JobCreateParams, j *Job, bal int64) (*Job, error) {
	if bal < j.UnitsReserved {
		return nil, &BalanceError{Balance: bal, Needed: j.UnitsReserved}
	}
	if p.Recheck != nil {
		if err := admitRecheck(ctx, tx, j, p.Recheck); err != nil {
			return nil, err
		}
	}
	now := j.CreatedAt
	if j.UnitsReserved > 0 {
		if err := tx.BalanceAdd(ctx, j.Tenant, -j.UnitsReserved, now); err != nil {
			return nil, err
		}
	}
	j.State, j.UpdatedAt, j.UnitsConsumed, j.Attempt = Queued, now, 0, 0
	if j.Stage == "" {
		j.Stage = StageWaitingCapacity
	}
	if j.Request == nil {
		j.Request = []byte("{}")
	}
	if err := tx.JobInsert(ctx, j); err != nil {
		return nil, err
	}
	if p.Enqueue != nil {
		if err := p.Enqueue(ctx, tx.Tx(), j); err != nil {
			return nil, err
		}
	}
	return tx.JobGet(ctx, &JobGetParams{Tenant: j.Tenant, ID: j.ID})
}

// admitRecheck loads the limiter usage, asks the admission, and records the
// event, all inside the creating transaction (which holds the tenant's
// ledger lock, so two writers cannot both admit past a limit).
func admitRecheck(ctx context.Context, ex Executor, j *Job, a *RecheckAdmission) error {
	u := &RecheckUsage{Since: a.Since}
	var err error
	if u.ByPrincipal, err = ex.RecheckEventListByPrincipal(ctx, j.Tenant, j.PrincipalID, a.Since); err != nil {
		return err
	}
	if u.ByReview, err = ex.RecheckEventListByReview(ctx, j.Tenant, j.ReviewID, a.Since); err != nil {
		return err
	}
	if u.ReviewTotal, u.ReviewLast, err = ex.RecheckEventSummary(ctx, j.Tenant, j.ReviewID); err != nil {
		return err
	}
	if a.Admit != nil {
		if err := a.Admit(u); err != nil {
			return err
		}
	}
	return ex.RecheckEventInsert(ctx, j.Tenant, &RecheckEvent{
		JobID: j.ID, ReviewID: j.ReviewID, PrincipalID: j.PrincipalID, FindingIDs: a.FindingIDs, Units: j.UnitsReserved, At: j.CreatedAt,
	})
}

// JobStart implements Store.
func (s Jobs) JobStart(ctx context.Context, p *JobStartParams) (*Job, error) {
	if p == nil {
		return nil, errNilParams
	}
	var out *Job
	err := inTx(ctx, s.Driver, p.Tenant, func(tx ExecutorTx) error {
		j, err := tx.JobGet(ctx, &JobGetParams{Tenant: p.Tenant, ID: p.ID, ForUpdate: true})
		if err != nil {
			return err
		}
		if j.State.Terminal() {
			out = j
			return nil
		}
		stage := p.Stage
		if stage == "" {
			stage = StageJudging
		}
		if !j.CancelRequestedAt.IsZero() {
			stage = StageCancelling
		}
		if err := tx.JobSetRunning(ctx, &JobSetRunningParams{Tenant: p.Tenant, ID: p.ID, Stage: stage, Attempt: p.Attempt, At: p.At}); err != nil {
			return err
		}
		out, err = tx.JobGet(ctx, &JobGetParams{Tenant: p.Tenant, ID: p.ID})
		return err
	})
	return out, err
}

// JobSetStage implements Store. The row is read ForUpdate, so a stage
// written as a cancel or a completion lands takes its turn and sees it.
func (s Jobs) JobSetStage(ctx context.Context, p *JobSetStageParams) (bool, error) {
	if p == nil {
		return false, errNilParams
	}
	set := false
	err := inTx(ctx, s.Driver, p.Tenant, func(tx ExecutorTx) error {
		j, err := tx.JobGet(ctx, &JobGetParams{Tenant: p.Tenant, ID: p.ID, ForUpdate: true})
		if err != nil {
			return err
		}
		if j.State != Running || !j.CancelRequestedAt.IsZero() || j.Stage == p.Stage {
			return nil
		}
		set = true
		return tx.JobSetRunning(ctx, &JobSetRunningParams{Tenant: p.Tenant, ID: p.ID, Stage: p.Stage, Attempt: j.Attempt, At: p.At})
	})
	return set && err == nil, err
}

// settlement is what makes a job terminal; settle applies it.
type settlement struct {
	state     JobState
	code, msg string
	decision  CancelDecision // empty keeps the job's own
	result    []byte
}

// settle makes a non-terminal job terminal, consuming or refunding its
// units in the same transaction. The caller read j ForUpdate in ex's
// transaction and saw it was not terminal; j.CancelReason is stored as is.
func settle(ctx context.Context, ex Executor, j *Job, st settlement, at time.Time) error {
	consumed := int64(0)
	stage := StageFailed
	switch st.state {
	case Completed:
		consumed, stage = j.UnitsReserved, StageFinalizing
	case Cancelled:
		stage = StageCancelled
	}
	if st.state != Completed && j.UnitsReserved > 0 {
		if err := ex.BalanceAdd(ctx, j.Tenant, j.UnitsReserved, at); err != nil {
			return err
		}
	}
	decision := st.decision
	if decision == "" {
		decision = j.CancelDecision
	}
	cancelAt := j.CancelRequestedAt
	if cancelAt.IsZero() && decision == CancelledBeforeStart {
		cancelAt = at
	}
	ok, err := ex.JobSetTerminal(ctx, &JobSetTerminalParams{
		Tenant: j.Tenant, ID: j.ID, State: st.state, Stage: stage, Result: st.result,
		ErrorCode: st.code, ErrorMessage: st.msg, UnitsConsumed: consumed, At: at,
		CancelDecision: decision, CancelRequestedAt: cancelAt, CancelReason: j.CancelReason,
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("store: finish job %s: not in a running state", j.ID)
	}
	return nil
}

// JobFinish implements Store.
func (s Jobs) JobFinish(ctx context.Context, p *JobFinishParams) (*JobFinishResult, error) {
	if p == nil {
		return nil, errNilParams
	}
	if !p.State.Terminal() {
		return nil, fmt.Errorf("store: finish job with non-terminal state %q", p.State)
	}
	var out *JobFinishResult
	err := inTx(ctx, s.Driver, p.Tenant, func(tx ExecutorTx) error {
		j, err := tx.JobGet(ctx, &JobGetParams{Tenant: p.Tenant, ID: p.ID, ForUpdate: true})
		if err != nil {
			return err
		}
		if j.State.Terminal() {
			out = &JobFinishResult{Job: j}
			return nil
		}
		var decision CancelDecision
		if !j.CancelRequestedAt.IsZero() {
			decision = CancelWon
			if p.State == Completed {
				decision = CompletionWon
			}
		}
		st := settlement{state: p.State, code: p.ErrorCode, msg: p.ErrorMessage, decision: decision, result: p.Result}
		if err := settle(ctx, tx, j, st, p.At); err != nil {
			return err
		}
		if p.State == Completed && len(p.Evidence) > 0 {
			if err := tx.EvidenceInsertMany(ctx, p.Tenant, p.ID, p.Evidence); err != nil {
				return err
			}
		}
		j, err = tx.JobGet(ctx, &JobGetParams{Tenant: p.Tenant, ID: p.ID})
		out = &JobFinishResult{Job: j, Applied: true}
		return err
	})
	return out, err
}

// JobCancel implements Store. The job is read ForUpdate, so a cancel and a
// completion of one job, from any two writers, take turns on the row and
// the second sees the first's state.
func (s Jobs) JobCancel(ctx context.Context, p *JobCancelParams) (*JobCancelResult, error) {
	if p == nil {
		return nil, errNilParams
	}
	var out *JobCancelResult
	err := inTx(ctx, s.Driver, p.Tenant, func(tx ExecutorTx) error {
		j, err := tx.JobGet(ctx, &JobGetParams{Tenant: p.Tenant, ID: p.ID, ForUpdate: true})
		if err != nil {
			return err
		}
		var decision CancelDecision
		switch j.State {
		case Queued:
			decision = CancelledBeforeStart
			j.CancelReason = p.Reason
			err = settle(ctx, tx, j, settlement{state: Cancelled, decision: decision}, p.At)
		case Running:
			// The first request's time and reason are kept; later ones only
			// re-signal the worker.
			decision = CancelRequested
			err = tx.JobSetCancelRequested(ctx, &JobSetCancelRequestedParams{
				Tenant: p.Tenant, ID: p.ID, Stage: StageCancelling, Decision: decision, Reason: p.Reason, At: p.At,
			})
		default:
			out = &JobCancelResult{Job: j, Decision: AlreadyTerminal}
			return nil
		}
		if err != nil {
			return err
		}
		j, err = tx.JobGet(ctx, &JobGetParams{Tenant: p.Tenant, ID: p.ID})
		out = &JobCancelResult{Job: j, Decision: decision}
		return err
	})
	return out, err
}

// JobSweep implements Store. Each tenant is swept in its own transaction
// acting for that tenant, so the sweep needs no access across tenants, and
// rows are taken ForUpdate in job id order, so writers sweeping at once take
// turns and the second finds nothing left to fail.
func (s Jobs) JobSweep(ctx context.Context, p *JobSweepParams) (*JobSweepResult, error) {
	if p == nil {
		return nil, errNilParams
	}
	tenants, err := s.Driver.TenantList(ctx)
	if err != nil {
		return nil, err
	}
	res := &JobSweepResult{}
	for _, tenant := range tenants {
		if err := inTx(ctx, s.Driver, tenant, func(tx ExecutorTx) error { return sweepTenant(ctx, tx, tenant, p, res) }); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// sweepTenant fails the tenant's expired and stale jobs and purges its
// long-expired rows, adding what it did to res.
func sweepTenant(ctx context.Context, ex Executor, tenant string, p *JobSweepParams, res *JobSweepResult) error {
	failAll := func(list func(context.Context, string, time.Time) ([]*Job, error), at time.Time, code, msg string) (int, error) {
		jobs, err := list(ctx, tenant, at)
		if err != nil {
			return 0, err
		}
		for _, j := range jobs {
			if err := settle(ctx, ex, j, settlement{state: Failed, code: code, msg: msg}, p.Now); err != nil {
				return 0, err
			}
		}
		return len(jobs), nil
	}
	n, err := failAll(ex.JobListExpired, p.Now, SweepExpiredCode, SweepExpiredMessage)
	if err != nil {
		return err
	}
	res.Expired += n
	if !p.StaleBefore.IsZero() {
		if n, err = failAll(ex.JobListStale, p.StaleBefore, SweepStaleCode, SweepStaleMessage); err != nil {
			return err
		}
		res.Stale += n
	}
	if p.PurgeBefore.IsZero() {
		return nil
	}
	if err := ex.EvidenceDeleteExpired(ctx, tenant, p.PurgeBefore); err != nil {
		return err
	}
	n, err = ex.JobDeleteExpired(ctx, tenant, p.PurgeBefore)
	if err != nil {
		return err
	}
	res.Purged += n
	return ex.RecheckEventDeleteBefore(ctx, tenant, p.PurgeBefore)
}

// EvidenceList implements Store.
func (s Jobs) EvidenceList(ctx context.Context, tenant, jobID string) ([]Evidence, error) {
	var out []Evidence
	err := s.Driver.Read(ctx, tenant, func(ex Executor) (err error) {
		out, err = ex.EvidenceList(ctx, tenant, jobID)
		return err
	})
	return out, err
}

// BalanceGet implements Store.
func (s Jobs) BalanceGet(ctx context.Context, tenant string, def int64) (int64, error) {
	var bal int64
	err := s.Driver.Read(ctx, tenant, func(ex Executor) (err error) {
		bal, err = ex.BalanceGet(ctx, &BalanceGetParams{Tenant: tenant})
		if errors.Is(err, ErrNotFound) {
			bal, err = max(def, 0), nil
		}
		return err
	})
	return bal, err
}

// BalanceSet implements Store.
func (s Jobs) BalanceSet(ctx context.Context, tenant string, units int64) error {
	if units < 0 {
		return fmt.Errorf("store: negative balance %d", units)
	}
	return inTx(ctx, s.Driver, tenant, func(tx ExecutorTx) error { return tx.BalanceSet(ctx, tenant, units) })
}
