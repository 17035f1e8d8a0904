package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bastion-mcp/bastion/store"
)

var (
	_ store.Store      = (*DB)(nil)
	_ store.Driver     = driver{}
	_ store.ExecutorTx = executorTx{}
)

const jobColumns = `tenant_id, job_id, principal_id, kind, client_request_id, fingerprint, state, stage,
	request, review_id, host, target_fingerprint, result, error_code, error_message, units_reserved,
	units_consumed, attempt, created_at, updated_at, started_at, completed_at, expires_at,
	cancel_requested_at, cancel_reason, cancel_decision`

// driver is store.Driver on PostgreSQL. Every transaction, reads included,
// is bound to its tenant (see bindTenant), and ForUpdate reads take row
// locks, so arbitration on a job or a tenant's ledger is serialized across
// replicas.
type driver struct{ db *DB }

func (d driver) Begin(ctx context.Context, tenant string) (store.ExecutorTx, error) {
	tx, err := d.db.beginTenant(ctx, tenant)
	if err != nil {
		return nil, err
	}
	return executorTx{executor{tx}}, nil
}

func (d driver) Read(ctx context.Context, tenant string, fn func(store.Executor) error) error {
	return d.db.inTenant(ctx, tenant, func(tx pgx.Tx) error { return fn(executor{tx}) })
}

// TenantList reads the tenants directory, the one table the serving role
// may read unbound.
func (d driver) TenantList(ctx context.Context) ([]string, error) {
	rows, err := d.db.pool.Query(ctx, `SELECT tenant_id FROM tenants ORDER BY tenant_id`)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: sweep: %w", err)
	}
	tenants, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store/postgres: sweep: %w", err)
	}
	return tenants, nil
}

type executorTx struct{ executor }

func (e executorTx) Tx() store.Tx { return e.tx }

func (e executorTx) Commit(ctx context.Context) error {
	if err := e.tx.Commit(ctx); err != nil {
		return fmt.Errorf("store/postgres: commit: %w", err)
	}
	return nil
}

func (e executorTx) Rollback(ctx context.Context) error {
	if err := e.tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return fmt.Errorf("store/postgres: rollback: %w", err)
	}
	return nil
}

// executor is store.Executor in a transaction bound to a tenant.
type executor struct{ tx pgx.Tx }

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

// forUpdate is the locking clause of a read that asked for one.
func forUpdate(lock bool) string {
	if lock {
		return ` FOR UPDATE`
	}
	return ``
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

func (e executor) exec(ctx context.Context, what, query string, args ...any) (int64, error) {
	tag, err := e.tx.Exec(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("store/postgres: %s: %w", what, err)
	}
	return tag.RowsAffected(), nil
}

// BalanceInit also registers the tenant in the directory the sweep reads.
func (e executor) BalanceInit(ctx context.Context, tenant string, units int64, at time.Time) error {
	if err := e.tenantRegister(ctx, tenant); err != nil {
		return err
	}
	_, err := e.exec(ctx, "ledger", `INSERT INTO tenant_balances (tenant_id, balance, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (tenant_id) DO NOTHING`, tenant, units, at.UTC())
	return err
}

func (e executor) tenantRegister(ctx context.Context, tenant string) error {
	_, err := e.exec(ctx, "register tenant", `INSERT INTO tenants (tenant_id) VALUES ($1) ON CONFLICT (tenant_id) DO NOTHING`, tenant)
	return err
}

func (e executor) BalanceGet(ctx context.Context, p *store.BalanceGetParams) (int64, error) {
	var bal int64
	err := e.tx.QueryRow(ctx, `SELECT balance FROM tenant_balances WHERE tenant_id = $1`+forUpdate(p.ForUpdate), p.Tenant).Scan(&bal)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, store.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("store/postgres: balance: %w", err)
	}
	return bal, nil
}

func (e executor) BalanceAdd(ctx context.Context, tenant string, delta int64, at time.Time) error {
	_, err := e.exec(ctx, "ledger", `UPDATE tenant_balances SET balance = balance + $1, updated_at = $2 WHERE tenant_id = $3`,
		delta, at.UTC(), tenant)
	return err
}

// BalanceSet also registers the tenant in the directory the sweep reads.
func (e executor) BalanceSet(ctx context.Context, tenant string, units int64) error {
	if err := e.tenantRegister(ctx, tenant); err != nil {
		return err
	}
	_, err := e.exec(ctx, "balance", `INSERT INTO tenant_balances (tenant_id, balance, updated_at) VALUES ($1, $2, now())
		ON CONFLICT (tenant_id) DO UPDATE SET balance = excluded.balance, updated_at = excluded.updated_at`, tenant, units)
	return err
}

func (e executor) JobGet(ctx context.Context, p *store.JobGetParams) (*store.Job, error) {
	return scanJob(e.tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE tenant_id = $1 AND job_id = $2`+forUpdate(p.ForUpdate),
		p.Tenant, p.ID))
}

func (e executor) JobGetByKey(ctx context.Context, tenant, principalID, key string) (*store.Job, error) {
	return scanJob(e.tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE tenant_id = $1 AND principal_id = $2 AND client_request_id = $3`, tenant, principalID, key))
}

func (e executor) JobGetReview(ctx context.Context, tenant, reviewID string) (*store.Job, error) {
	return scanJob(e.tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE tenant_id = $1 AND review_id = $2 AND kind = 'review'`, tenant, reviewID))
}

func (e executor) JobCountQueued(ctx context.Context, tenant string, before time.Time) (int, error) {
	var n int
	err := e.tx.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE tenant_id = $1 AND state = 'queued' AND created_at < $2`,
		tenant, before.UTC()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("postgres: count queued jobs: %w", err)
	}
	return n, nil
}

func (e executor) JobInsert(ctx context.Context, j *store.Job) error {
	_, err := e.exec(ctx, "insert job", `INSERT INTO jobs (tenant_id, job_id, principal_id, kind, client_request_id,
		fingerprint, state, stage, request, review_id, host, target_fingerprint, units_reserved, created_at, updated_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
		j.Tenant, j.ID, j.PrincipalID, string(j.Kind), j.ClientRequestID, j.Fingerprint, string(j.State), j.Stage,
		j.Request, j.ReviewID, j.Host, j.TargetFingerprint, j.UnitsReserved, j.CreatedAt.UTC(), j.UpdatedAt.UTC(), j.ExpiresAt.UTC())
	return err
}

func (e executor) JobSetRunning(ctx context.Context, p *store.JobSetRunningParams) error {
	_, err := e.exec(ctx, "start job", `UPDATE jobs SET state = 'running', stage = $1, attempt = $2, updated_at = $3,
		started_at = coalesce(started_at, $3)
		WHERE tenant_id = $4 AND job_id = $5 AND state IN ('queued', 'running')`,
		p.Stage, p.Attempt, p.At.UTC(), p.Tenant, p.ID)
	return err
}

func (e executor) JobSetTerminal(ctx context.Context, p *store.JobSetTerminalParams) (bool, error) {
	n, err := e.exec(ctx, "finish job", `UPDATE jobs SET state = $1, stage = $2, result = $3, error_code = $4, error_message = $5,
		units_consumed = $6, completed_at = $7, updated_at = $7, cancel_decision = $8, cancel_requested_at = $9, cancel_reason = $10
		WHERE tenant_id = $11 AND job_id = $12 AND state IN ('queued', 'running')`,
		string(p.State), p.Stage, p.Result, p.ErrorCode, p.ErrorMessage, p.UnitsConsumed, p.At.UTC(),
		string(p.CancelDecision), ts(p.CancelRequestedAt), p.CancelReason, p.Tenant, p.ID)
	return n == 1, err
}

func (e executor) JobSetCancelRequested(ctx context.Context, p *store.JobSetCancelRequestedParams) error {
	_, err := e.exec(ctx, "cancel job", `UPDATE jobs SET stage = $1, updated_at = $2, cancel_decision = $3,
		cancel_reason = CASE WHEN cancel_requested_at IS NULL THEN $4 ELSE cancel_reason END,
		cancel_requested_at = coalesce(cancel_requested_at, $2)
		WHERE tenant_id = $5 AND job_id = $6 AND state = 'running'`,
		p.Stage, p.At.UTC(), string(p.Decision), p.Reason, p.Tenant, p.ID)
	return err
}

func (e executor) JobListExpired(ctx context.Context, tenant string, now time.Time) ([]*store.Job, error) {
	return e.jobList(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE tenant_id = $1 AND state IN ('queued', 'running') AND expires_at <= $2 ORDER BY job_id FOR UPDATE`, tenant, now.UTC())
}

func (e executor) JobListStale(ctx context.Context, tenant string, before time.Time) ([]*store.Job, error) {
	return e.jobList(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE tenant_id = $1 AND state = 'running' AND started_at IS NOT NULL AND started_at < $2 ORDER BY job_id FOR UPDATE`,
		tenant, before.UTC())
}

func (e executor) jobList(ctx context.Context, query string, args ...any) ([]*store.Job, error) {
	rows, err := e.tx.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: list jobs: %w", err)
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.Job, error) { return scanJob(r) })
	if err != nil {
		return nil, fmt.Errorf("store/postgres: list jobs: %w", err)
	}
	return jobs, nil
}

func (e executor) JobDeleteExpired(ctx context.Context, tenant string, before time.Time) (int, error) {
	n, err := e.exec(ctx, "purge", `DELETE FROM jobs WHERE tenant_id = $1 AND expires_at < $2`, tenant, before.UTC())
	return int(n), err
}

// EvidenceInsertMany writes all crops in one statement. (COPY would be
// faster but is not allowed on a table under row-level security.)
func (e executor) EvidenceInsertMany(ctx context.Context, tenant, jobID string, evidence []store.Evidence) error {
	ids, mimes, data := make([]string, len(evidence)), make([]string, len(evidence)), make([][]byte, len(evidence))
	for i, ev := range evidence {
		ids[i], mimes[i], data[i] = ev.ID, ev.MIMEType, ev.Data
	}
	_, err := e.exec(ctx, "store evidence", `INSERT INTO evidence (tenant_id, job_id, seq, evidence_id, mime_type, data)
		SELECT $1, $2, e.n - 1, e.id, e.mime, e.data
		FROM unnest($3::text[], $4::text[], $5::bytea[]) WITH ORDINALITY AS e(id, mime, data, n)`,
		tenant, jobID, ids, mimes, data)
	return err
}

func (e executor) EvidenceList(ctx context.Context, tenant, jobID string) ([]store.Evidence, error) {
	rows, err := e.tx.Query(ctx, `SELECT evidence_id, mime_type, data FROM evidence
		WHERE tenant_id = $1 AND job_id = $2 ORDER BY seq`, tenant, jobID)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: evidence: %w", err)
	}
	var (
		out []store.Evidence
		ev  store.Evidence
	)
	if _, err := pgx.ForEachRow(rows, []any{&ev.ID, &ev.MIMEType, &ev.Data}, func() error {
		out = append(out, ev)
		ev = store.Evidence{}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store/postgres: evidence: %w", err)
	}
	return out, nil
}

func (e executor) EvidenceDeleteExpired(ctx context.Context, tenant string, before time.Time) error {
	_, err := e.exec(ctx, "purge", `DELETE FROM evidence e USING jobs j
		WHERE e.tenant_id = $1 AND j.tenant_id = $1 AND e.job_id = j.job_id AND j.expires_at < $2`, tenant, before.UTC())
	return err
}

func (e executor) RecheckEventListByPrincipal(ctx context.Context, tenant, principalID string, since time.Time) ([]store.RecheckEvent, error) {
	return e.recheckEvents(ctx, `SELECT job_id, review_id, principal_id, finding_ids, units, at FROM recheck_events
		WHERE tenant_id = $1 AND principal_id = $2 AND at >= $3 ORDER BY at, job_id`, tenant, principalID, since.UTC())
}

func (e executor) RecheckEventListByReview(ctx context.Context, tenant, reviewID string, since time.Time) ([]store.RecheckEvent, error) {
	return e.recheckEvents(ctx, `SELECT job_id, review_id, principal_id, finding_ids, units, at FROM recheck_events
		WHERE tenant_id = $1 AND review_id = $2 AND at >= $3 ORDER BY at, job_id`, tenant, reviewID, since.UTC())
}

func (e executor) recheckEvents(ctx context.Context, query string, args ...any) ([]store.RecheckEvent, error) {
	rows, err := e.tx.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: recheck usage: %w", err)
	}
	var (
		out []store.RecheckEvent
		ev  store.RecheckEvent
	)
	_, err = pgx.ForEachRow(rows, []any{&ev.JobID, &ev.ReviewID, &ev.PrincipalID, &ev.FindingIDs, &ev.Units, &ev.At}, func() error {
		ev.At = ev.At.UTC()
		out = append(out, ev)
		ev = store.RecheckEvent{}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store/postgres: recheck usage: %w", err)
	}
	return out, nil
}

func (e executor) RecheckEventSummary(ctx context.Context, tenant, reviewID string) (int, time.Time, error) {
	var (
		n    int
		last *time.Time
	)
	if err := e.tx.QueryRow(ctx, `SELECT count(*), max(at) FROM recheck_events
		WHERE tenant_id = $1 AND review_id = $2`, tenant, reviewID).Scan(&n, &last); err != nil {
		return 0, time.Time{}, fmt.Errorf("store/postgres: recheck usage: %w", err)
	}
	return n, fromTS(last), nil
}

func (e executor) RecheckEventInsert(ctx context.Context, tenant string, ev *store.RecheckEvent) error {
	ids := ev.FindingIDs
	if ids == nil {
		ids = []string{} // the column is a NOT NULL array
	}
	_, err := e.exec(ctx, "recheck event", `INSERT INTO recheck_events (tenant_id, job_id, review_id, principal_id, finding_ids, units, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, tenant, ev.JobID, ev.ReviewID, ev.PrincipalID, ids, ev.Units, ev.At.UTC())
	return err
}

func (e executor) RecheckEventDeleteBefore(ctx context.Context, tenant string, before time.Time) error {
	_, err := e.exec(ctx, "purge", `DELETE FROM recheck_events WHERE tenant_id = $1 AND at < $2`, tenant, before.UTC())
	return err
}
