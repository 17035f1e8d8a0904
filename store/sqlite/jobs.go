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

var (
	_ store.Store      = (*DB)(nil)
	_ store.Driver     = driver{}
	_ store.ExecutorTx = (*executorTx)(nil)
)

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

// driver is store.Driver on one SQLite file. Every write transaction begins
// IMMEDIATE (the DSN's _txlock) on db, so writers are serialized by the
// database and ForUpdate needs no SQL; reads outside a transaction go to rd,
// the query-only pool, and never queue behind a writer.
type driver struct {
	db *sql.DB
	rd *stmtCache
}

func (d driver) Begin(ctx context.Context, _ string) (store.ExecutorTx, error) {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: begin: %w", err)
	}
	return &executorTx{executor: executor{q: tx}, tx: tx}, nil
}

func (d driver) Read(_ context.Context, _ string, fn func(store.Executor) error) error {
	return fn(executor{q: d.rd})
}

// TenantList names every tenant with a ledger row, a job or a recheck event.
func (d driver) TenantList(ctx context.Context) ([]string, error) {
	rows, err := d.rd.QueryContext(ctx, `SELECT tenant_id FROM tenant_balances UNION SELECT tenant_id FROM jobs
		UNION SELECT tenant_id FROM recheck_events UNION SELECT tenant_id FROM feedback_events ORDER BY tenant_id`)
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: tenants: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, fmt.Errorf("store/sqlite: tenants: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

type executorTx struct {
	executor
	tx *sql.Tx
}

func (e *executorTx) Tx() store.Tx { return e.tx }

func (e *executorTx) Commit(context.Context) error {
	if err := e.tx.Commit(); err != nil {
		return fmt.Errorf("store/sqlite: commit: %w", err)
	}
	return nil
}

func (e *executorTx) Rollback(context.Context) error {
	if err := e.tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return fmt.Errorf("store/sqlite: rollback: %w", err)
	}
	return nil
}

// executor is store.Executor on the pool or a transaction.
type executor struct{ q querier }

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

func (e executor) exec(ctx context.Context, what, query string, args ...any) (int64, error) {
	r, err := e.q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("store/sqlite: %s: %w", what, err)
	}
	n, err := r.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("store/sqlite: %s: %w", what, err)
	}
	return n, nil
}

func (e executor) BalanceInit(ctx context.Context, tenant string, units int64, at time.Time) error {
	_, err := e.exec(ctx, "ledger", `INSERT INTO tenant_balances (tenant_id, balance, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (tenant_id) DO NOTHING`, tenant, units, ms(at))
	return err
}

func (e executor) BalanceGet(ctx context.Context, p *store.BalanceGetParams) (int64, error) {
	var bal int64
	err := e.q.QueryRowContext(ctx, `SELECT balance FROM tenant_balances WHERE tenant_id = ?`, p.Tenant).Scan(&bal)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, store.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("store/sqlite: balance: %w", err)
	}
	return bal, nil
}

func (e executor) BalanceAdd(ctx context.Context, tenant string, delta int64, at time.Time) error {
	_, err := e.exec(ctx, "ledger", `UPDATE tenant_balances SET balance = balance + ?, updated_at = ? WHERE tenant_id = ?`,
		delta, ms(at), tenant)
	return err
}

func (e executor) BalanceSet(ctx context.Context, tenant string, units int64) error {
	_, err := e.exec(ctx, "balance", `INSERT INTO tenant_balances (tenant_id, balance, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (tenant_id) DO UPDATE SET balance = excluded.balance, updated_at = excluded.updated_at`,
		tenant, units, time.Now().UnixMilli())
	return err
}

func (e executor) JobGet(ctx context.Context, p *store.JobGetParams) (*store.Job, error) {
	return scanJob(e.q.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE tenant_id = ? AND job_id = ?`, p.Tenant, p.ID))
}

func (e executor) JobGetByKey(ctx context.Context, tenant, principalID, key string) (*store.Job, error) {
	return scanJob(e.q.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE tenant_id = ? AND principal_id = ? AND client_request_id = ?`, tenant, principalID, key))
}

func (e executor) JobGetReview(ctx context.Context, tenant, reviewID string) (*store.Job, error) {
	return scanJob(e.q.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE tenant_id = ? AND review_id = ? AND kind = 'review'`, tenant, reviewID))
}

func (e executor) JobCountQueued(ctx context.Context, tenant string, before time.Time) (int, error) {
	var n int
	err := e.q.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE tenant_id = ? AND state = 'queued' AND created_at < ?`,
		tenant, ms(before)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("sqlite: count queued jobs: %w", err)
	}
	return n, nil
}

func (e executor) JobInsert(ctx context.Context, j *store.Job) error {
	_, err := e.exec(ctx, "insert job", `INSERT INTO jobs (tenant_id, job_id, principal_id, kind, client_request_id,
		fingerprint, state, stage, request, review_id, host, target_fingerprint, units_reserved, created_at, updated_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		j.Tenant, j.ID, j.PrincipalID, string(j.Kind), j.ClientRequestID, j.Fingerprint, string(j.State), j.Stage,
		j.Request, j.ReviewID, j.Host, j.TargetFingerprint, j.UnitsReserved, ms(j.CreatedAt), ms(j.UpdatedAt), ms(j.ExpiresAt))
	return err
}

func (e executor) JobSetRunning(ctx context.Context, p *store.JobSetRunningParams) error {
	_, err := e.exec(ctx, "start job", `UPDATE jobs SET state = 'running', stage = ?, attempt = ?, updated_at = ?,
		started_at = CASE WHEN started_at = 0 THEN ? ELSE started_at END
		WHERE tenant_id = ? AND job_id = ? AND state IN ('queued', 'running')`,
		p.Stage, p.Attempt, ms(p.At), ms(p.At), p.Tenant, p.ID)
	return err
}

func (e executor) JobSetTerminal(ctx context.Context, p *store.JobSetTerminalParams) (bool, error) {
	n, err := e.exec(ctx, "finish job", `UPDATE jobs SET state = ?, stage = ?, result = ?, error_code = ?, error_message = ?,
		units_consumed = ?, completed_at = ?, updated_at = ?, cancel_decision = ?, cancel_requested_at = ?, cancel_reason = ?
		WHERE tenant_id = ? AND job_id = ? AND state IN ('queued', 'running')`,
		string(p.State), p.Stage, p.Result, p.ErrorCode, p.ErrorMessage, p.UnitsConsumed, ms(p.At), ms(p.At),
		string(p.CancelDecision), ms(p.CancelRequestedAt), p.CancelReason, p.Tenant, p.ID)
	return n == 1, err
}

func (e executor) JobSetCancelRequested(ctx context.Context, p *store.JobSetCancelRequestedParams) error {
	_, err := e.exec(ctx, "cancel job", `UPDATE jobs SET stage = ?, updated_at = ?, cancel_decision = ?,
		cancel_requested_at = CASE WHEN cancel_requested_at = 0 THEN ? ELSE cancel_requested_at END,
		cancel_reason = CASE WHEN cancel_requested_at = 0 THEN ? ELSE cancel_reason END
		WHERE tenant_id = ? AND job_id = ? AND state = 'running'`,
		p.Stage, ms(p.At), string(p.Decision), ms(p.At), p.Reason, p.Tenant, p.ID)
	return err
}

func (e executor) JobListExpired(ctx context.Context, tenant string, now time.Time) ([]*store.Job, error) {
	return e.jobList(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE tenant_id = ? AND state IN ('queued', 'running') AND expires_at <= ? ORDER BY job_id`, tenant, ms(now))
}

func (e executor) JobListStale(ctx context.Context, tenant string, before time.Time) ([]*store.Job, error) {
	return e.jobList(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE tenant_id = ? AND state = 'running' AND started_at > 0 AND started_at < ? ORDER BY job_id`, tenant, ms(before))
}

func (e executor) jobList(ctx context.Context, query string, args ...any) ([]*store.Job, error) {
	rows, err := e.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: list jobs: %w", err)
	}
	defer rows.Close()
	var out []*store.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

func (e executor) JobDeleteExpired(ctx context.Context, tenant string, before time.Time) (int, error) {
	n, err := e.exec(ctx, "purge", `DELETE FROM jobs WHERE tenant_id = ? AND expires_at < ?`, tenant, ms(before))
	return int(n), err
}

func (e executor) EvidenceInsertMany(ctx context.Context, tenant, jobID string, evidence []store.Evidence) error {
	for i, ev := range evidence {
		if _, err := e.exec(ctx, "store evidence", `INSERT INTO evidence (tenant_id, job_id, seq, evidence_id, mime_type, data)
			VALUES (?, ?, ?, ?, ?, ?)`, tenant, jobID, i, ev.ID, ev.MIMEType, ev.Data); err != nil {
			return err
		}
	}
	return nil
}

func (e executor) EvidenceList(ctx context.Context, tenant, jobID string) ([]store.Evidence, error) {
	rows, err := e.q.QueryContext(ctx, `SELECT evidence_id, mime_type, data FROM evidence
		WHERE tenant_id = ? AND job_id = ? ORDER BY seq`, tenant, jobID)
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: evidence: %w", err)
	}
	defer rows.Close()
	var out []store.Evidence
	for rows.Next() {
		var ev store.Evidence
		if err := rows.Scan(&ev.ID, &ev.MIMEType, &ev.Data); err != nil {
			return nil, fmt.Errorf("store/sqlite: evidence: %w", err)
		}
		out = append(out, ev)
	}
	return out, rows.Err()
}

func (e executor) EvidenceDeleteExpired(ctx context.Context, tenant string, before time.Time) error {
	_, err := e.exec(ctx, "purge", `DELETE FROM evidence WHERE tenant_id = ? AND job_id IN
		(SELECT job_id FROM jobs WHERE tenant_id = ? AND expires_at < ?)`, tenant, tenant, ms(before))
	return err
}

func (e executor) RecheckEventListByPrincipal(ctx context.Context, tenant, principalID string, since time.Time) ([]store.RecheckEvent, error) {
	return e.recheckEvents(ctx, `SELECT job_id, review_id, principal_id, finding_ids, units, at FROM recheck_events
		WHERE tenant_id = ? AND principal_id = ? AND at >= ? ORDER BY at, job_id`, tenant, principalID, ms(since))
}

func (e executor) RecheckEventListByReview(ctx context.Context, tenant, reviewID string, since time.Time) ([]store.RecheckEvent, error) {
	return e.recheckEvents(ctx, `SELECT job_id, review_id, principal_id, finding_ids, units, at FROM recheck_events
		WHERE tenant_id = ? AND review_id = ? AND at >= ? ORDER BY at, job_id`, tenant, reviewID, ms(since))
}

func (e executor) recheckEvents(ctx context.Context, query string, args ...any) ([]store.RecheckEvent, error) {
	rows, err := e.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: recheck usage: %w", err)
	}
	defer rows.Close()
	var out []store.RecheckEvent
	for rows.Next() {
		var (
			ev  store.RecheckEvent
			ids string
			at  int64
		)
		if err := rows.Scan(&ev.JobID, &ev.ReviewID, &ev.PrincipalID, &ids, &ev.Units, &at); err != nil {
			return nil, fmt.Errorf("store/sqlite: recheck usage: %w", err)
		}
		if err := json.Unmarshal([]byte(ids), &ev.FindingIDs); err != nil {
			return nil, fmt.Errorf("store/sqlite: recheck usage: %w", err)
		}
		ev.At = fromMS(at)
		out = append(out, ev)
	}
	return out, rows.Err()
}

func (e executor) RecheckEventSummary(ctx context.Context, tenant, reviewID string) (int, time.Time, error) {
	var (
		n    int
		last int64
	)
	if err := e.q.QueryRowContext(ctx, `SELECT count(*), coalesce(max(at), 0) FROM recheck_events
		WHERE tenant_id = ? AND review_id = ?`, tenant, reviewID).Scan(&n, &last); err != nil {
		return 0, time.Time{}, fmt.Errorf("store/sqlite: recheck usage: %w", err)
	}
	return n, fromMS(last), nil
}

func (e executor) RecheckEventInsert(ctx context.Context, tenant string, ev *store.RecheckEvent) error {
	ids, err := json.Marshal(ev.FindingIDs)
	if err != nil {
		return fmt.Errorf("store/sqlite: recheck event: %w", err)
	}
	_, err = e.exec(ctx, "recheck event", `INSERT INTO recheck_events (tenant_id, job_id, review_id, principal_id, finding_ids, units, at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, tenant, ev.JobID, ev.ReviewID, ev.PrincipalID, string(ids), ev.Units, ms(ev.At))
	return err
}

func (e executor) RecheckEventDeleteBefore(ctx context.Context, tenant string, before time.Time) error {
	_, err := e.exec(ctx, "purge", `DELETE FROM recheck_events WHERE tenant_id = ? AND at < ?`, tenant, ms(before))
	return err
}
