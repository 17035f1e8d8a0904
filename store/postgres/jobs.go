package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bastion-mcp/bastion/store"
)

var _ store.Store = (*DB)(nil)

var errNilParams = errors.New("store/postgres: nil params")

const jobColumns = `tenant_id, job_id, principal_id, kind, client_request_id, fingerprint, state, stage,
	request, review_id, host, target_fingerprint, result, error_code, error_message, units_reserved,
	units_consumed, attempt, created_at, updated_at, started_at, completed_at, expires_at,
	cancel_requested_at, cancel_reason, cancel_decision`

// inTenant runs fn in a transaction bound to tenant: app.tenant_id is set
// for this transaction only, so every row-level security policy admits the
// tenant's rows and no other. It commits when fn returns nil.
func (db *DB) inTenant(ctx context.Context, tenant string, fn func(tx pgx.Tx) error) error {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("store/postgres: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) // a no-op after Commit
	if _, err := tx.Exec(ctx, `SELECT set_config('app.tenant_id', $1, true)`, tenant); err != nil {
		return fmt.Errorf("store/postgres: bind tenant: %w", err)
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("store/postgres: commit: %w", err)
	}
	return nil
}

// ts stores a time: the zero time is NULL.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}

// fromTS is the inverse of ts, in UTC.
func fromTS(p *time.Time) time.Time {
	if p == nil {
		return time.Time{}
	}
	return p.UTC()
}

func scanJob(row pgx.Row) (*store.Job, error) {
	var (
		j                                 store.Job
		kind, state, decision             string
		created, updated, expires         time.Time
		started, completed, cancelRequest *time.Time
	)
	err := row.Scan(&j.Tenant, &j.ID, &j.PrincipalID, &kind, &j.ClientRequestID, &j.Fingerprint, &state, &j.Stage,
		&j.Request, &j.ReviewID, &j.Host, &j.TargetFingerprint, &j.Result, &j.ErrorCode, &j.ErrorMessage, &j.UnitsReserved,
		&j.UnitsConsumed, &j.Attempt, &created, &updated, &started, &completed, &expires,
		&cancelRequest, &j.CancelReason, &decision)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store/postgres: scan job: %w", err)
	}
	j.Kind, j.State, j.CancelDecision = store.JobKind(kind), store.JobState(state), store.CancelDecision(decision)
	j.CreatedAt, j.UpdatedAt, j.ExpiresAt = created.UTC(), updated.UTC(), expires.UTC()
	j.StartedAt, j.CompletedAt, j.CancelRequestedAt = fromTS(started), fromTS(completed), fromTS(cancelRequest)
	return &j, nil
}

// getJob reads a job; lock adds FOR UPDATE, so the caller's transaction owns
// the row until it ends and arbitration on it is serialized across replicas.
func getJob(ctx context.Context, tx pgx.Tx, tenant, id string, lock bool) (*store.Job, error) {
	q := `SELECT ` + jobColumns + ` FROM jobs WHERE tenant_id = $1 AND job_id = $2`
	if lock {
		q += ` FOR UPDATE`
	}
	return scanJob(tx.QueryRow(ctx, q, tenant, id))
}

// JobGet implements store.Store.
func (db *DB) JobGet(ctx context.Context, tenant, id string) (*store.Job, error) {
	var out *store.Job
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) (err error) {
		out, err = getJob(ctx, tx, tenant, id, false)
		return err
	})
	return out, err
}

// JobGetByKey implements store.Store.
func (db *DB) JobGetByKey(ctx context.Context, tenant, principalID, key string) (*store.Job, error) {
	var out *store.Job
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) (err error) {
		out, err = scanJob(tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs
			WHERE tenant_id = $1 AND principal_id = $2 AND client_request_id = $3`, tenant, principalID, key))
		return err
	})
	return out, err
}

// JobGetReview implements store.Store.
func (db *DB) JobGetReview(ctx context.Context, tenant, reviewID string) (*store.Job, error) {
	var out *store.Job
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) (err error) {
		out, err = scanJob(tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs
			WHERE tenant_id = $1 AND review_id = $2 AND kind = 'review'`, tenant, reviewID))
		return err
	})
	return out, err
}

// lockBalance registers the tenant in the directory, creates its ledger row
// at def, and locks that row for the rest of the transaction. Every job
// creation of a tenant takes this lock first, so idempotency checks, limiter
// admissions and reservations of one tenant are serialized across replicas
// (as SQLite serializes all writers).
func lockBalance(ctx context.Context, tx pgx.Tx, tenant string, def int64, now time.Time) (int64, error) {
	if _, err := tx.Exec(ctx, `INSERT INTO tenants (tenant_id) VALUES ($1) ON CONFLICT (tenant_id) DO NOTHING`, tenant); err != nil {
		return 0, fmt.Errorf("store/postgres: register tenant: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO tenant_balances (tenant_id, balance, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (tenant_id) DO NOTHING`, tenant, max(def, 0), now.UTC()); err != nil {
		return 0, fmt.Errorf("store/postgres: ledger: %w", err)
	}
	var bal int64
	if err := tx.QueryRow(ctx, `SELECT balance FROM tenant_balances WHERE tenant_id = $1 FOR UPDATE`, tenant).Scan(&bal); err != nil {
		return 0, fmt.Errorf("store/postgres: ledger: %w", err)
	}
	return bal, nil
}

// JobCreate implements store.Store.
func (db *DB) JobCreate(ctx context.Context, p *store.JobCreateParams) (*store.JobCreateResult, error) {
	if p == nil {
		return nil, errNilParams
	}
	j := p.Job
	var res *store.JobCreateResult
	err := db.inTenant(ctx, j.Tenant, func(tx pgx.Tx) error {
		now := j.CreatedAt
		bal, err := lockBalance(ctx, tx, j.Tenant, p.DefaultBalance, now)
		if err != nil {
			return err
		}
		// Read under the tenant's lock: a concurrent creator of the same key
		// has committed (and is seen) or has not started.
		existing, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs
			WHERE tenant_id = $1 AND principal_id = $2 AND client_request_id = $3`, j.Tenant, j.PrincipalID, j.ClientRequestID))
		switch {
		case err == nil:
			if existing.Kind != j.Kind || existing.Fingerprint != j.Fingerprint {
				return store.ErrIdempotencyConflict
			}
			res = &store.JobCreateResult{Job: existing, Reused: true, Balance: bal}
			return nil
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		if bal < j.UnitsReserved {
			return &store.BalanceError{Balance: bal, Needed: j.UnitsReserved}
		}
		if p.Recheck != nil {
			if err := admitRecheck(ctx, tx, &j, p.Recheck); err != nil {
				return err
			}
		}
		if j.UnitsReserved > 0 {
			if _, err := tx.Exec(ctx, `UPDATE tenant_balances SET balance = balance - $1, updated_at = $2 WHERE tenant_id = $3`,
				j.UnitsReserved, now.UTC(), j.Tenant); err != nil {
				return fmt.Errorf("store/postgres: reserve: %w", err)
			}
		}
		j.State, j.UpdatedAt, j.UnitsConsumed, j.Attempt = store.Queued, now, 0, 0
		if j.Stage == "" {
			j.Stage = store.StageWaitingCapacity
		}
		if j.Request == nil {
			j.Request = []byte("{}")
		}
		if _, err := tx.Exec(ctx, `INSERT INTO jobs (tenant_id, job_id, principal_id, kind, client_request_id,
			fingerprint, state, stage, request, review_id, host, target_fingerprint, units_reserved, created_at, updated_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
			j.Tenant, j.ID, j.PrincipalID, string(j.Kind), j.ClientRequestID, j.Fingerprint, string(j.State), j.Stage,
			j.Request, j.ReviewID, j.Host, j.TargetFingerprint, j.UnitsReserved, now.UTC(), now.UTC(), j.ExpiresAt.UTC()); err != nil {
			return fmt.Errorf("store/postgres: insert job: %w", err)
		}
		if p.Enqueue != nil {
			if err := p.Enqueue(ctx, tx, &j); err != nil {
				return err
			}
		}
		created, err := getJob(ctx, tx, j.Tenant, j.ID, false)
		if err != nil {
			return err
		}
		res = &store.JobCreateResult{Job: created, Balance: bal - j.UnitsReserved}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// admitRecheck loads the limiter usage, asks the admission, and records the
// event, all inside the creating transaction (which holds the tenant's
// ledger lock, so two replicas cannot both admit past a limit).
func admitRecheck(ctx context.Context, tx pgx.Tx, j *store.Job, a *store.RecheckAdmission) error {
	u := &store.RecheckUsage{Since: a.Since}
	var err error
	if u.ByPrincipal, err = recheckEvents(ctx, tx, `principal_id`, j.Tenant, j.PrincipalID, a.Since); err != nil {
		return err
	}
	if u.ByReview, err = recheckEvents(ctx, tx, `review_id`, j.Tenant, j.ReviewID, a.Since); err != nil {
		return err
	}
	var last *time.Time
	if err := tx.QueryRow(ctx, `SELECT count(*), max(at) FROM recheck_events
		WHERE tenant_id = $1 AND review_id = $2`, j.Tenant, j.ReviewID).Scan(&u.ReviewTotal, &last); err != nil {
		return fmt.Errorf("store/postgres: recheck usage: %w", err)
	}
	u.ReviewLast = fromTS(last)
	if a.Admit != nil {
		if err := a.Admit(u); err != nil {
			return err
		}
	}
	ids := a.FindingIDs
	if ids == nil {
		ids = []string{}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO recheck_events (tenant_id, job_id, review_id, principal_id, finding_ids, units, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, j.Tenant, j.ID, j.ReviewID, j.PrincipalID, ids, j.UnitsReserved, j.CreatedAt.UTC()); err != nil {
		return fmt.Errorf("store/postgres: recheck event: %w", err)
	}
	return nil
}

func recheckEvents(ctx context.Context, tx pgx.Tx, col, tenant, key string, since time.Time) ([]store.RecheckEvent, error) {
	// col is one of two constants chosen by the caller, never input.
	rows, err := tx.Query(ctx, `SELECT job_id, review_id, principal_id, finding_ids, units, at FROM recheck_events
		WHERE tenant_id = $1 AND `+col+` = $2 AND at >= $3 ORDER BY at, job_id`, tenant, key, since.UTC())
	if err != nil {
		return nil, fmt.Errorf("store/postgres: recheck usage: %w", err)
	}
	var (
		out []store.RecheckEvent
		e   store.RecheckEvent
	)
	_, err = pgx.ForEachRow(rows, []any{&e.JobID, &e.ReviewID, &e.PrincipalID, &e.FindingIDs, &e.Units, &e.At}, func() error {
		e.At = e.At.UTC()
		out = append(out, e)
		e = store.RecheckEvent{}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store/postgres: recheck usage: %w", err)
	}
	return out, nil
}

// JobStart implements store.Store.
func (db *DB) JobStart(ctx context.Context, p *store.JobStartParams) (*store.Job, error) {
	if p == nil {
		return nil, errNilParams
	}
	var out *store.Job
	err := db.inTenant(ctx, p.Tenant, func(tx pgx.Tx) error {
		j, err := getJob(ctx, tx, p.Tenant, p.ID, true)
		if err != nil {
			return err
		}
		if j.State.Terminal() {
			out = j
			return nil
		}
		stage := p.Stage
		if stage == "" {
			stage = store.StageJudging
		}
		if !j.CancelRequestedAt.IsZero() {
			stage = store.StageCancelling
		}
		if _, err := tx.Exec(ctx, `UPDATE jobs SET state = 'running', stage = $1, attempt = $2, updated_at = $3,
			started_at = coalesce(started_at, $3)
			WHERE tenant_id = $4 AND job_id = $5 AND state IN ('queued', 'running')`,
			stage, p.Attempt, p.At.UTC(), p.Tenant, p.ID); err != nil {
			return fmt.Errorf("store/postgres: start job: %w", err)
		}
		out, err = getJob(ctx, tx, p.Tenant, p.ID, false)
		return err
	})
	return out, err
}

// settle makes a non-terminal job terminal, consuming or refunding its units.
// The caller holds the job's row lock and has checked it is not terminal.
func settle(ctx context.Context, tx pgx.Tx, j *store.Job, state store.JobState, code, msg string, decision store.CancelDecision, result []byte, at time.Time) error {
	consumed := int64(0)
	stage := store.StageFailed
	switch state {
	case store.Completed:
		consumed, stage = j.UnitsReserved, store.StageFinalizing
	case store.Cancelled:
		stage = store.StageCancelled
	}
	if state != store.Completed && j.UnitsReserved > 0 {
		if _, err := tx.Exec(ctx, `UPDATE tenant_balances SET balance = balance + $1, updated_at = $2 WHERE tenant_id = $3`,
			j.UnitsReserved, at.UTC(), j.Tenant); err != nil {
			return fmt.Errorf("store/postgres: refund: %w", err)
		}
	}
	if decision == "" {
		decision = j.CancelDecision
	}
	cancelAt := j.CancelRequestedAt
	if cancelAt.IsZero() && decision == store.CancelledBeforeStart {
		cancelAt = at
	}
	tag, err := tx.Exec(ctx, `UPDATE jobs SET state = $1, stage = $2, result = $3, error_code = $4, error_message = $5,
		units_consumed = $6, completed_at = $7, updated_at = $7, cancel_decision = $8, cancel_requested_at = $9
		WHERE tenant_id = $10 AND job_id = $11 AND state IN ('queued', 'running')`,
		string(state), stage, result, code, msg, consumed, at.UTC(), string(decision), ts(cancelAt), j.Tenant, j.ID)
	if err != nil {
		return fmt.Errorf("store/postgres: finish job: %w", err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("store/postgres: finish job %s: not in a running state", j.ID)
	}
	return nil
}

// JobFinish implements store.Store.
func (db *DB) JobFinish(ctx context.Context, p *store.JobFinishParams) (*store.JobFinishResult, error) {
	if p == nil {
		return nil, errNilParams
	}
	if !p.State.Terminal() {
		return nil, fmt.Errorf("store/postgres: finish job with non-terminal state %q", p.State)
	}
	var out *store.JobFinishResult
	err := db.inTenant(ctx, p.Tenant, func(tx pgx.Tx) error {
		j, err := getJob(ctx, tx, p.Tenant, p.ID, true)
		if err != nil {
			return err
		}
		if j.State.Terminal() {
			out = &store.JobFinishResult{Job: j}
			return nil
		}
		var decision store.CancelDecision
		if !j.CancelRequestedAt.IsZero() {
			decision = store.CancelWon
			if p.State == store.Completed {
				decision = store.CompletionWon
			}
		}
		if err := settle(ctx, tx, j, p.State, p.ErrorCode, p.ErrorMessage, decision, p.Result, p.At); err != nil {
			return err
		}
		if p.State == store.Completed && len(p.Evidence) > 0 {
			// One statement for all crops. (COPY would be faster but is not
			// allowed on a table under row-level security.)
			ids, mimes, data := make([]string, len(p.Evidence)), make([]string, len(p.Evidence)), make([][]byte, len(p.Evidence))
			for i, e := range p.Evidence {
				ids[i], mimes[i], data[i] = e.ID, e.MIMEType, e.Data
			}
			if _, err := tx.Exec(ctx, `INSERT INTO evidence (tenant_id, job_id, seq, evidence_id, mime_type, data)
				SELECT $1, $2, e.n - 1, e.id, e.mime, e.data
				FROM unnest($3::text[], $4::text[], $5::bytea[]) WITH ORDINALITY AS e(id, mime, data, n)`,
				p.Tenant, p.ID, ids, mimes, data); err != nil {
				return fmt.Errorf("store/postgres: store evidence: %w", err)
			}
		}
		j, err = getJob(ctx, tx, p.Tenant, p.ID, false)
		out = &store.JobFinishResult{Job: j, Applied: true}
		return err
	})
	return out, err
}

// JobCancel implements store.Store.
func (db *DB) JobCancel(ctx context.Context, p *store.JobCancelParams) (*store.JobCancelResult, error) {
	if p == nil {
		return nil, errNilParams
	}
	var out *store.JobCancelResult
	err := db.inTenant(ctx, p.Tenant, func(tx pgx.Tx) error {
		// FOR UPDATE: a cancel and a completion of one job, from any two
		// replicas, take turns on the row; the second sees the first's state.
		j, err := getJob(ctx, tx, p.Tenant, p.ID, true)
		if err != nil {
			return err
		}
		switch j.State {
		case store.Queued:
			j.CancelReason = p.Reason
			if _, err := tx.Exec(ctx, `UPDATE jobs SET cancel_reason = $1 WHERE tenant_id = $2 AND job_id = $3`,
				p.Reason, p.Tenant, p.ID); err != nil {
				return fmt.Errorf("store/postgres: cancel job: %w", err)
			}
			if err := settle(ctx, tx, j, store.Cancelled, "", "", store.CancelledBeforeStart, nil, p.At); err != nil {
				return err
			}
			j, err = getJob(ctx, tx, p.Tenant, p.ID, false)
			out = &store.JobCancelResult{Job: j, Decision: store.CancelledBeforeStart}
			return err
		case store.Running:
			// The first request's time and reason are kept; later ones only
			// re-signal the worker.
			if _, err := tx.Exec(ctx, `UPDATE jobs SET stage = $1, updated_at = $2, cancel_decision = $3,
				cancel_reason = CASE WHEN cancel_requested_at IS NULL THEN $4 ELSE cancel_reason END,
				cancel_requested_at = coalesce(cancel_requested_at, $2)
				WHERE tenant_id = $5 AND job_id = $6 AND state = 'running'`,
				store.StageCancelling, p.At.UTC(), string(store.CancelRequested), p.Reason, p.Tenant, p.ID); err != nil {
				return fmt.Errorf("store/postgres: cancel job: %w", err)
			}
			j, err = getJob(ctx, tx, p.Tenant, p.ID, false)
			out = &store.JobCancelResult{Job: j, Decision: store.CancelRequested}
			return err
		default:
			out = &store.JobCancelResult{Job: j, Decision: store.AlreadyTerminal}
			return nil
		}
	})
	return out, err
}

// JobSweep implements store.Store. It crosses tenants without BYPASSRLS:
// it lists the tenants directory and sweeps each tenant in its own
// transaction bound to that tenant, so the row-level security policies hold
// throughout. Rows are locked FOR UPDATE in job id order, so replicas
// sweeping at once take turns and the second finds nothing left to fail.
func (db *DB) JobSweep(ctx context.Context, p *store.JobSweepParams) (*store.JobSweepResult, error) {
	if p == nil {
		return nil, errNilParams
	}
	rows, err := db.pool.Query(ctx, `SELECT tenant_id FROM tenants ORDER BY tenant_id`)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: sweep: %w", err)
	}
	tenants, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store/postgres: sweep: %w", err)
	}
	res := &store.JobSweepResult{}
	for _, tenant := range tenants {
		var r store.JobSweepResult
		if err := db.inTenant(ctx, tenant, func(tx pgx.Tx) error { return sweepTenant(ctx, tx, tenant, p, &r) }); err != nil {
			return nil, err
		}
		res.Expired += r.Expired
		res.Stale += r.Stale
		res.Purged += r.Purged
	}
	return res, nil
}

func sweepTenant(ctx context.Context, tx pgx.Tx, tenant string, p *store.JobSweepParams, res *store.JobSweepResult) error {
	failAll := func(cond string, code, msg string, arg time.Time) (int, error) {
		rows, err := tx.Query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE tenant_id = $1 AND `+cond+` ORDER BY job_id FOR UPDATE`,
			tenant, arg.UTC())
		if err != nil {
			return 0, fmt.Errorf("store/postgres: sweep: %w", err)
		}
		jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.Job, error) { return scanJob(r) })
		if err != nil {
			return 0, fmt.Errorf("store/postgres: sweep: %w", err)
		}
		for _, j := range jobs {
			if err := settle(ctx, tx, j, store.Failed, code, msg, "", nil, p.Now); err != nil {
				return 0, err
			}
		}
		return len(jobs), nil
	}
	var err error
	if res.Expired, err = failAll(`state IN ('queued', 'running') AND expires_at <= $2`,
		store.SweepExpiredCode, store.SweepExpiredMessage, p.Now); err != nil {
		return err
	}
	if !p.StaleBefore.IsZero() {
		if res.Stale, err = failAll(`state = 'running' AND started_at IS NOT NULL AND started_at < $2`,
			store.SweepStaleCode, store.SweepStaleMessage, p.StaleBefore); err != nil {
			return err
		}
	}
	if !p.PurgeBefore.IsZero() {
		cut := p.PurgeBefore.UTC()
		if _, err := tx.Exec(ctx, `DELETE FROM evidence e USING jobs j
			WHERE e.tenant_id = $1 AND j.tenant_id = $1 AND e.job_id = j.job_id AND j.expires_at < $2`, tenant, cut); err != nil {
			return fmt.Errorf("store/postgres: purge: %w", err)
		}
		tag, err := tx.Exec(ctx, `DELETE FROM jobs WHERE tenant_id = $1 AND expires_at < $2`, tenant, cut)
		if err != nil {
			return fmt.Errorf("store/postgres: purge: %w", err)
		}
		res.Purged = int(tag.RowsAffected())
		if _, err := tx.Exec(ctx, `DELETE FROM recheck_events WHERE tenant_id = $1 AND at < $2`, tenant, cut); err != nil {
			return fmt.Errorf("store/postgres: purge: %w", err)
		}
	}
	return nil
}

// EvidenceList implements store.Store.
func (db *DB) EvidenceList(ctx context.Context, tenant, jobID string) ([]store.Evidence, error) {
	var out []store.Evidence
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT evidence_id, mime_type, data FROM evidence
			WHERE tenant_id = $1 AND job_id = $2 ORDER BY seq`, tenant, jobID)
		if err != nil {
			return fmt.Errorf("store/postgres: evidence: %w", err)
		}
		var e store.Evidence
		if _, err := pgx.ForEachRow(rows, []any{&e.ID, &e.MIMEType, &e.Data}, func() error {
			out = append(out, e)
			e = store.Evidence{}
			return nil
		}); err != nil {
			return fmt.Errorf("store/postgres: evidence: %w", err)
		}
		return nil
	})
	return out, err
}

// BalanceGet implements store.Store.
func (db *DB) BalanceGet(ctx context.Context, tenant string, def int64) (int64, error) {
	var bal int64
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT balance FROM tenant_balances WHERE tenant_id = $1`, tenant).Scan(&bal)
		if errors.Is(err, pgx.ErrNoRows) {
			bal = max(def, 0)
			return nil
		}
		if err != nil {
			return fmt.Errorf("store/postgres: balance: %w", err)
		}
		return nil
	})
	return bal, err
}

// BalanceSet implements store.Store.
func (db *DB) BalanceSet(ctx context.Context, tenant string, units int64) error {
	if units < 0 {
		return fmt.Errorf("store/postgres: negative balance %d", units)
	}
	return db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO tenants (tenant_id) VALUES ($1) ON CONFLICT (tenant_id) DO NOTHING`, tenant); err != nil {
			return fmt.Errorf("store/postgres: register tenant: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO tenant_balances (tenant_id, balance, updated_at) VALUES ($1, $2, now())
			ON CONFLICT (tenant_id) DO UPDATE SET balance = excluded.balance, updated_at = excluded.updated_at`,
			tenant, units); err != nil {
			return fmt.Errorf("store/postgres: balance: %w", err)
		}
		return nil
	})
}
