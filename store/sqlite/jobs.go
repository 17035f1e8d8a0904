package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bastion-mcp/bastion/store"
)

var _ store.Store = (*DB)(nil)

const jobColumns = `tenant_id, job_id, principal_id, kind, client_request_id, fingerprint, state, stage,
	request, review_id, host, target_fingerprint, result, error_code, error_message, units_reserved,
	units_consumed, attempt, created_at, updated_at, started_at, completed_at, expires_at,
	cancel_requested_at, cancel_reason, cancel_decision`

// querier is what both *sql.DB and *sql.Tx offer.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func scanJob(row interface{ Scan(...any) error }) (*store.Job, error) {
	var (
		j                                                     store.Job
		kind, state, decision                                 string
		created, updated, started, completed, expires, cancel int64
	)
	err := row.Scan(&j.Tenant, &j.ID, &j.PrincipalID, &kind, &j.ClientRequestID, &j.Fingerprint, &state, &j.Stage,
		&j.Request, &j.ReviewID, &j.Host, &j.TargetFingerprint, &j.Result, &j.ErrorCode, &j.ErrorMessage, &j.UnitsReserved,
		&j.UnitsConsumed, &j.Attempt, &created, &updated, &started, &completed, &expires,
		&cancel, &j.CancelReason, &decision)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: scan job: %w", err)
	}
	j.Kind, j.State, j.CancelDecision = store.JobKind(kind), store.JobState(state), store.CancelDecision(decision)
	j.CreatedAt, j.UpdatedAt, j.StartedAt = fromMS(created), fromMS(updated), fromMS(started)
	j.CompletedAt, j.ExpiresAt, j.CancelRequestedAt = fromMS(completed), fromMS(expires), fromMS(cancel)
	return &j, nil
}

func getJob(ctx context.Context, q querier, tenant, id string) (*store.Job, error) {
	return scanJob(q.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE tenant_id = ? AND job_id = ?`, tenant, id))
}

// inTx runs fn in an IMMEDIATE transaction, committing when it returns nil.
func (s *DB) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store/sqlite: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store/sqlite: commit: %w", err)
	}
	return nil
}

// JobGet implements store.Store.
func (s *DB) JobGet(ctx context.Context, tenant, id string) (*store.Job, error) {
	return getJob(ctx, s.db, tenant, id)
}

// JobGetByKey implements store.Store.
func (s *DB) JobGetByKey(ctx context.Context, tenant, principalID, key string) (*store.Job, error) {
	return scanJob(s.db.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE tenant_id = ? AND principal_id = ? AND client_request_id = ?`, tenant, principalID, key))
}

// JobGetReview implements store.Store.
func (s *DB) JobGetReview(ctx context.Context, tenant, reviewID string) (*store.Job, error) {
	return scanJob(s.db.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE tenant_id = ? AND review_id = ? AND kind = 'review'`, tenant, reviewID))
}

// ensureBalance creates the tenant's ledger row at def and returns the balance.
func ensureBalance(ctx context.Context, tx *sql.Tx, tenant string, def int64, now time.Time) (int64, error) {
	if _, err := tx.ExecContext(ctx, `INSERT INTO tenant_balances (tenant_id, balance, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (tenant_id) DO NOTHING`, tenant, max(def, 0), ms(now)); err != nil {
		return 0, fmt.Errorf("store/sqlite: ledger: %w", err)
	}
	var bal int64
	if err := tx.QueryRowContext(ctx, `SELECT balance FROM tenant_balances WHERE tenant_id = ?`, tenant).Scan(&bal); err != nil {
		return 0, fmt.Errorf("store/sqlite: ledger: %w", err)
	}
	return bal, nil
}

// JobCreate implements store.Store.
func (s *DB) JobCreate(ctx context.Context, p *store.JobCreateParams) (*store.JobCreateResult, error) {
	if p == nil {
		return nil, errNilParams
	}
	j := p.Job
	var res *store.JobCreateResult
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		now := j.CreatedAt
		existing, err := scanJob(tx.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs
			WHERE tenant_id = ? AND principal_id = ? AND client_request_id = ?`, j.Tenant, j.PrincipalID, j.ClientRequestID))
		switch {
		case err == nil:
			if existing.Kind != j.Kind || existing.Fingerprint != j.Fingerprint {
				return store.ErrIdempotencyConflict
			}
			bal, err := ensureBalance(ctx, tx, j.Tenant, p.DefaultBalance, now)
			if err != nil {
				return err
			}
			res = &store.JobCreateResult{Job: existing, Reused: true, Balance: bal}
			return nil
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		bal, err := ensureBalance(ctx, tx, j.Tenant, p.DefaultBalance, now)
		if err != nil {
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
			if _, err := tx.ExecContext(ctx, `UPDATE tenant_balances SET balance = balance - ?, updated_at = ? WHERE tenant_id = ?`,
				j.UnitsReserved, ms(now), j.Tenant); err != nil {
				return fmt.Errorf("store/sqlite: reserve: %w", err)
			}
		}
		j.State, j.UpdatedAt, j.UnitsConsumed, j.Attempt = store.Queued, now, 0, 0
		if j.Stage == "" {
			j.Stage = store.StageWaitingCapacity
		}
		if j.Request == nil {
			j.Request = []byte("{}")
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO jobs (tenant_id, job_id, principal_id, kind, client_request_id,
			fingerprint, state, stage, request, review_id, host, target_fingerprint, units_reserved, created_at, updated_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			j.Tenant, j.ID, j.PrincipalID, string(j.Kind), j.ClientRequestID, j.Fingerprint, string(j.State), j.Stage,
			j.Request, j.ReviewID, j.Host, j.TargetFingerprint, j.UnitsReserved, ms(now), ms(now), ms(j.ExpiresAt)); err != nil {
			return fmt.Errorf("store/sqlite: insert job: %w", err)
		}
		if p.Enqueue != nil {
			if err := p.Enqueue(ctx, tx, &j); err != nil {
				return err
			}
		}
		created, err := getJob(ctx, tx, j.Tenant, j.ID)
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
// event, all inside the creating transaction.
func admitRecheck(ctx context.Context, tx *sql.Tx, j *store.Job, a *store.RecheckAdmission) error {
	u := &store.RecheckUsage{Since: a.Since}
	var err error
	if u.ByPrincipal, err = recheckEvents(ctx, tx, `principal_id`, j.Tenant, j.PrincipalID, a.Since); err != nil {
		return err
	}
	if u.ByReview, err = recheckEvents(ctx, tx, `review_id`, j.Tenant, j.ReviewID, a.Since); err != nil {
		return err
	}
	var last int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(max(at), 0) FROM recheck_events
		WHERE tenant_id = ? AND review_id = ?`, j.Tenant, j.ReviewID).Scan(&u.ReviewTotal, &last); err != nil {
		return fmt.Errorf("store/sqlite: recheck usage: %w", err)
	}
	u.ReviewLast = fromMS(last)
	if a.Admit != nil {
		if err := a.Admit(u); err != nil {
			return err
		}
	}
	ids, err := json.Marshal(a.FindingIDs)
	if err != nil {
		return fmt.Errorf("store/sqlite: recheck event: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO recheck_events (tenant_id, job_id, review_id, principal_id, finding_ids, units, at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, j.Tenant, j.ID, j.ReviewID, j.PrincipalID, string(ids), j.UnitsReserved, ms(j.CreatedAt)); err != nil {
		return fmt.Errorf("store/sqlite: recheck event: %w", err)
	}
	return nil
}

func recheckEvents(ctx context.Context, tx *sql.Tx, col, tenant, key string, since time.Time) ([]store.RecheckEvent, error) {
	// col is one of two constants chosen by the caller, never input.
	rows, err := tx.QueryContext(ctx, `SELECT job_id, review_id, principal_id, finding_ids, units, at FROM recheck_events
		WHERE tenant_id = ? AND `+col+` = ? AND at >= ? ORDER BY at, job_id`, tenant, key, ms(since))
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: recheck usage: %w", err)
	}
	defer rows.Close()
	var out []store.RecheckEvent
	for rows.Next() {
		var (
			e   store.RecheckEvent
			ids string
			at  int64
		)
		if err := rows.Scan(&e.JobID, &e.ReviewID, &e.PrincipalID, &ids, &e.Units, &at); err != nil {
			return nil, fmt.Errorf("store/sqlite: recheck usage: %w", err)
		}
		if err := json.Unmarshal([]byte(ids), &e.FindingIDs); err != nil {
			return nil, fmt.Errorf("store/sqlite: recheck usage: %w", err)
		}
		e.At = fromMS(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// JobStart implements store.Store.
func (s *DB) JobStart(ctx context.Context, p *store.JobStartParams) (*store.Job, error) {
	if p == nil {
		return nil, errNilParams
	}
	var out *store.Job
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		j, err := getJob(ctx, tx, p.Tenant, p.ID)
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
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'running', stage = ?, attempt = ?, updated_at = ?,
			started_at = CASE WHEN started_at = 0 THEN ? ELSE started_at END
			WHERE tenant_id = ? AND job_id = ? AND state IN ('queued', 'running')`,
			stage, p.Attempt, ms(p.At), ms(p.At), p.Tenant, p.ID); err != nil {
			return fmt.Errorf("store/sqlite: start job: %w", err)
		}
		out, err = getJob(ctx, tx, p.Tenant, p.ID)
		return err
	})
	return out, err
}

// settle makes a non-terminal job terminal, consuming or refunding its units.
// The caller has checked that the job is not terminal inside tx.
func settle(ctx context.Context, tx *sql.Tx, j *store.Job, state store.JobState, code, msg string, decision store.CancelDecision, result []byte, at time.Time) error {
	consumed := int64(0)
	stage := store.StageFailed
	switch state {
	case store.Completed:
		consumed, stage = j.UnitsReserved, store.StageFinalizing
	case store.Cancelled:
		stage = store.StageCancelled
	}
	if state != store.Completed && j.UnitsReserved > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE tenant_balances SET balance = balance + ?, updated_at = ? WHERE tenant_id = ?`,
			j.UnitsReserved, ms(at), j.Tenant); err != nil {
			return fmt.Errorf("store/sqlite: refund: %w", err)
		}
	}
	if decision == "" {
		decision = j.CancelDecision
	}
	cancelAt := ms(j.CancelRequestedAt)
	if cancelAt == 0 && decision == store.CancelledBeforeStart {
		cancelAt = ms(at)
	}
	r, err := tx.ExecContext(ctx, `UPDATE jobs SET state = ?, stage = ?, result = ?, error_code = ?, error_message = ?,
		units_consumed = ?, completed_at = ?, updated_at = ?, cancel_decision = ?, cancel_requested_at = ?
		WHERE tenant_id = ? AND job_id = ? AND state IN ('queued', 'running')`,
		string(state), stage, result, code, msg, consumed, ms(at), ms(at), string(decision), cancelAt, j.Tenant, j.ID)
	if err != nil {
		return fmt.Errorf("store/sqlite: finish job: %w", err)
	}
	if n, _ := r.RowsAffected(); n != 1 {
		return fmt.Errorf("store/sqlite: finish job %s: not in a running state", j.ID)
	}
	return nil
}

// JobFinish implements store.Store.
func (s *DB) JobFinish(ctx context.Context, p *store.JobFinishParams) (*store.JobFinishResult, error) {
	if p == nil {
		return nil, errNilParams
	}
	if !p.State.Terminal() {
		return nil, fmt.Errorf("store/sqlite: finish job with non-terminal state %q", p.State)
	}
	var out *store.JobFinishResult
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		j, err := getJob(ctx, tx, p.Tenant, p.ID)
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
		if p.State == store.Completed {
			for i, e := range p.Evidence {
				if _, err := tx.ExecContext(ctx, `INSERT INTO evidence (tenant_id, job_id, seq, evidence_id, mime_type, data)
					VALUES (?, ?, ?, ?, ?, ?)`, p.Tenant, p.ID, i, e.ID, e.MIMEType, e.Data); err != nil {
					return fmt.Errorf("store/sqlite: store evidence: %w", err)
				}
			}
		}
		j, err = getJob(ctx, tx, p.Tenant, p.ID)
		out = &store.JobFinishResult{Job: j, Applied: true}
		return err
	})
	return out, err
}

// JobCancel implements store.Store.
func (s *DB) JobCancel(ctx context.Context, p *store.JobCancelParams) (*store.JobCancelResult, error) {
	if p == nil {
		return nil, errNilParams
	}
	var out *store.JobCancelResult
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		j, err := getJob(ctx, tx, p.Tenant, p.ID)
		if err != nil {
			return err
		}
		switch j.State {
		case store.Queued:
			j.CancelReason = p.Reason
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET cancel_reason = ? WHERE tenant_id = ? AND job_id = ?`,
				p.Reason, p.Tenant, p.ID); err != nil {
				return fmt.Errorf("store/sqlite: cancel job: %w", err)
			}
			if err := settle(ctx, tx, j, store.Cancelled, "", "", store.CancelledBeforeStart, nil, p.At); err != nil {
				return err
			}
			j, err = getJob(ctx, tx, p.Tenant, p.ID)
			out = &store.JobCancelResult{Job: j, Decision: store.CancelledBeforeStart}
			return err
		case store.Running:
			// The first request's time and reason are kept; later ones only
			// re-signal the worker.
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET stage = ?, updated_at = ?, cancel_decision = ?,
				cancel_requested_at = CASE WHEN cancel_requested_at = 0 THEN ? ELSE cancel_requested_at END,
				cancel_reason = CASE WHEN cancel_requested_at = 0 THEN ? ELSE cancel_reason END
				WHERE tenant_id = ? AND job_id = ? AND state = 'running'`,
				store.StageCancelling, ms(p.At), string(store.CancelRequested), ms(p.At), p.Reason, p.Tenant, p.ID); err != nil {
				return fmt.Errorf("store/sqlite: cancel job: %w", err)
			}
			j, err = getJob(ctx, tx, p.Tenant, p.ID)
			out = &store.JobCancelResult{Job: j, Decision: store.CancelRequested}
			return err
		default:
			out = &store.JobCancelResult{Job: j, Decision: store.AlreadyTerminal}
			return nil
		}
	})
	return out, err
}

// JobSweep implements store.Store.
func (s *DB) JobSweep(ctx context.Context, p *store.JobSweepParams) (*store.JobSweepResult, error) {
	if p == nil {
		return nil, errNilParams
	}
	res := &store.JobSweepResult{}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		failAll := func(query string, code, msg string, args ...any) (int, error) {
			rows, err := tx.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE `+query, args...)
			if err != nil {
				return 0, fmt.Errorf("store/sqlite: sweep: %w", err)
			}
			var jobs []*store.Job
			for rows.Next() {
				j, err := scanJob(rows)
				if err != nil {
					rows.Close()
					return 0, err
				}
				jobs = append(jobs, j)
			}
			if err := rows.Close(); err != nil {
				return 0, fmt.Errorf("store/sqlite: sweep: %w", err)
			}
			for _, j := range jobs {
				if err := settle(ctx, tx, j, store.Failed, code, msg, "", nil, p.Now); err != nil {
					return 0, err
				}
			}
			return len(jobs), nil
		}
		var err error
		if res.Expired, err = failAll(`state IN ('queued', 'running') AND expires_at <= ?`,
			store.SweepExpiredCode, store.SweepExpiredMessage, ms(p.Now)); err != nil {
			return err
		}
		if !p.StaleBefore.IsZero() {
			if res.Stale, err = failAll(`state = 'running' AND started_at > 0 AND started_at < ?`,
				store.SweepStaleCode, store.SweepStaleMessage, ms(p.StaleBefore)); err != nil {
				return err
			}
		}
		if !p.PurgeBefore.IsZero() {
			cut := ms(p.PurgeBefore)
			if _, err := tx.ExecContext(ctx, `DELETE FROM evidence WHERE (tenant_id, job_id) IN
				(SELECT tenant_id, job_id FROM jobs WHERE expires_at < ?)`, cut); err != nil {
				return fmt.Errorf("store/sqlite: purge: %w", err)
			}
			r, err := tx.ExecContext(ctx, `DELETE FROM jobs WHERE expires_at < ?`, cut)
			if err != nil {
				return fmt.Errorf("store/sqlite: purge: %w", err)
			}
			n, _ := r.RowsAffected()
			res.Purged = int(n)
			if _, err := tx.ExecContext(ctx, `DELETE FROM recheck_events WHERE at < ?`, cut); err != nil {
				return fmt.Errorf("store/sqlite: purge: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// EvidenceList implements store.Store.
func (s *DB) EvidenceList(ctx context.Context, tenant, jobID string) ([]store.Evidence, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT evidence_id, mime_type, data FROM evidence
		WHERE tenant_id = ? AND job_id = ? ORDER BY seq`, tenant, jobID)
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: evidence: %w", err)
	}
	defer rows.Close()
	var out []store.Evidence
	for rows.Next() {
		var e store.Evidence
		if err := rows.Scan(&e.ID, &e.MIMEType, &e.Data); err != nil {
			return nil, fmt.Errorf("store/sqlite: evidence: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// BalanceGet implements store.Store.
func (s *DB) BalanceGet(ctx context.Context, tenant string, def int64) (int64, error) {
	var bal int64
	err := s.db.QueryRowContext(ctx, `SELECT balance FROM tenant_balances WHERE tenant_id = ?`, tenant).Scan(&bal)
	if errors.Is(err, sql.ErrNoRows) {
		return max(def, 0), nil
	}
	if err != nil {
		return 0, fmt.Errorf("store/sqlite: balance: %w", err)
	}
	return bal, nil
}

// BalanceSet implements store.Store.
func (s *DB) BalanceSet(ctx context.Context, tenant string, units int64) error {
	if units < 0 {
		return fmt.Errorf("store/sqlite: negative balance %d", units)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO tenant_balances (tenant_id, balance, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (tenant_id) DO UPDATE SET balance = excluded.balance, updated_at = excluded.updated_at`,
		tenant, units, time.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("store/sqlite: balance: %w", err)
	}
	return nil
}
