package store

import (
	"context"
	"time"

	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/targets"
)

// Driver is what an adapter gives Jobs, Targets and PATs: transactions and
// the two unbound reads (the sweep's tenants, a token's hash). Every rule
// about jobs, units, targets and tokens lives in those; a driver holds only its database's SQL and its way of
// binding a tenant.
type Driver interface {
	// Begin opens a write transaction acting for tenant. Writers of one
	// tenant that touch the same job or ledger row must be serialized by it
	// together with the executor's ForUpdate reads.
	Begin(ctx context.Context, tenant string) (ExecutorTx, error)
	// Read runs fn with an executor for reading tenant's rows: the pool when
	// the database needs no per-transaction binding, else a transaction
	// bound to tenant that ends when fn returns.
	Read(ctx context.Context, tenant string, fn func(Executor) error) error
	// PATLookup names the tenant and id of the token with this hash, the
	// one lookup made before a tenant is known; it must read nothing else.
	PATLookup(ctx context.Context, hash [32]byte) (tenant, id string, err error)
	// TenantList returns, sorted, every tenant that may own job, ledger or
	// recheck rows; the sweep visits each in its own transaction.
	TenantList(ctx context.Context) ([]string, error)
}

// ExecutorTx is an Executor inside a transaction the caller ends.
type ExecutorTx interface {
	Executor
	// Tx is the adapter's native transaction, for JobCreateParams.Enqueue.
	Tx() Tx
	Commit(ctx context.Context) error
	// Rollback ends the transaction unless it was committed; then it is a
	// no-op.
	Rollback(ctx context.Context) error
}

// Executor runs single statements, each one query of the adapter's
// dialect. A missing row is ErrNotFound; other errors are wrapped driver
// errors. Methods never decide anything: Jobs does.
type Executor interface {
	// BalanceInit creates the tenant's ledger row at units unless it exists
	// (and registers the tenant wherever the adapter lists tenants).
	BalanceInit(ctx context.Context, tenant string, units int64, at time.Time) error
	// BalanceGet reads the tenant's balance; ForUpdate holds the row until
	// the transaction ends.
	BalanceGet(ctx context.Context, p *BalanceGetParams) (int64, error)
	// BalanceAdd adds delta (negative to reserve) to an existing ledger row.
	BalanceAdd(ctx context.Context, tenant string, delta int64, at time.Time) error
	// BalanceSet creates or overwrites the tenant's ledger row.
	BalanceSet(ctx context.Context, tenant string, units int64) error

	// JobGet reads one job; ForUpdate holds the row until the transaction
	// ends.
	JobGet(ctx context.Context, p *JobGetParams) (*Job, error)
	// JobGetByKey reads the job bound to an idempotency key.
	JobGetByKey(ctx context.Context, tenant, principalID, clientRequestID string) (*Job, error)
	// JobGetReview reads the review job (kind review) of a review id.
	JobGetReview(ctx context.Context, tenant, reviewID string) (*Job, error)
	// JobCountQueued counts the tenant's queued jobs created before before.
	JobCountQueued(ctx context.Context, tenant string, before time.Time) (int, error)
	// JobInsert writes a new row from j's creation fields (those
	// JobCreateParams.Job names, plus State and Stage).
	JobInsert(ctx context.Context, j *Job) error
	// JobSetRunning moves a non-terminal job to running, keeping its first
	// start time.
	JobSetRunning(ctx context.Context, p *JobSetRunningParams) error
	// JobSetTerminal writes a terminal state on a non-terminal job and
	// reports whether one row changed.
	JobSetTerminal(ctx context.Context, p *JobSetTerminalParams) (bool, error)
	// JobSetCancelRequested marks a running job cancel-requested, keeping
	// the first request's time and reason.
	JobSetCancelRequested(ctx context.Context, p *JobSetCancelRequestedParams) error
	// JobListExpired reads, ordered by job id and ForUpdate, the tenant's
	// queued or running jobs whose expiry is at or before now.
	JobListExpired(ctx context.Context, tenant string, now time.Time) ([]*Job, error)
	// JobListStale reads, ordered by job id and ForUpdate, the tenant's
	// running jobs started before before.
	JobListStale(ctx context.Context, tenant string, before time.Time) ([]*Job, error)
	// JobDeleteExpired deletes the tenant's jobs that expired before
	// before and returns how many.
	JobDeleteExpired(ctx context.Context, tenant string, before time.Time) (int, error)

	// EvidenceInsertMany stores a job's crops, numbered in slice order.
	EvidenceInsertMany(ctx context.Context, tenant, jobID string, evidence []Evidence) error
	// EvidenceList reads a job's crops in stored order.
	EvidenceList(ctx context.Context, tenant, jobID string) ([]Evidence, error)
	// EvidenceDeleteExpired deletes the crops of the tenant's jobs that
	// expired before before.
	EvidenceDeleteExpired(ctx context.Context, tenant string, before time.Time) error

	// RecheckEventListByPrincipal and RecheckEventListByReview read the
	// tenant's recheck events of one principal (on any review) or one review
	// (by any principal) at or after since, by time then job id.
	RecheckEventListByPrincipal(ctx context.Context, tenant, principalID string, since time.Time) ([]RecheckEvent, error)
	RecheckEventListByReview(ctx context.Context, tenant, reviewID string, since time.Time) ([]RecheckEvent, error)
	// RecheckEventSummary counts a review's recheck events and returns the
	// latest one's time (zero when there are none).
	RecheckEventSummary(ctx context.Context, tenant, reviewID string) (int, time.Time, error)
	// RecheckEventInsert records one admitted recheck.
	RecheckEventInsert(ctx context.Context, tenant string, e *RecheckEvent) error
	// RecheckEventDeleteBefore deletes the tenant's events before before.
	RecheckEventDeleteBefore(ctx context.Context, tenant string, before time.Time) error

	// TargetUpsert writes a target by (tenant, host), replacing every other
	// column of an existing row.
	TargetUpsert(ctx context.Context, t *targets.Target) error
	// TargetGet reads one target.
	TargetGet(ctx context.Context, tenant, host string) (targets.Target, error)
	// TargetList reads the tenant's targets by host.
	TargetList(ctx context.Context, tenant string) ([]targets.Target, error)
	// TargetDelete deletes one target and reports whether it existed.
	TargetDelete(ctx context.Context, tenant, host string) (bool, error)

	// FeedbackEventInsert appends one feedback event; a duplicate id is an
	// error.
	FeedbackEventInsert(ctx context.Context, e *FeedbackEvent) error
	// FeedbackEventList reads the tenant's events by time, then id.
	FeedbackEventList(ctx context.Context, tenant string) ([]FeedbackEvent, error)
	// FeedbackEventCountByKind counts the tenant's events with verdict v by
	// finding kind.
	FeedbackEventCountByKind(ctx context.Context, tenant string, v Verdict) (map[string]int, error)

	// PATInsert writes a token record (and whatever index PATLookup reads);
	// a duplicate id or hash is an error.
	PATInsert(ctx context.Context, rec *auth.PATRecord) error
	// PATGet reads the tenant's token with this id and hash.
	PATGet(ctx context.Context, tenant, id string, hash [32]byte) (auth.PATRecord, error)
	// PATList reads the tenant's tokens, oldest first.
	PATList(ctx context.Context, tenant string) ([]auth.PATRecord, error)
	// PATRevoke and PATTouch set a token's revocation or last-use time and
	// report whether it exists.
	PATRevoke(ctx context.Context, tenant, id string, at time.Time) (bool, error)
	PATTouch(ctx context.Context, tenant, id string, at time.Time) (bool, error)
}

// BalanceGetParams reads a ledger row.
type BalanceGetParams struct {
	Tenant    string
	ForUpdate bool
}

// JobGetParams reads a job.
type JobGetParams struct {
	Tenant, ID string
	ForUpdate  bool
}

// JobSetRunningParams are the columns a start writes.
type JobSetRunningParams struct {
	Tenant, ID string
	Stage      string
	Attempt    int
	At         time.Time // updated_at, and started_at when unset
}

// JobSetTerminalParams are the columns a settlement writes.
type JobSetTerminalParams struct {
	Tenant, ID        string
	State             JobState
	Stage             string
	Result            []byte
	ErrorCode         string
	ErrorMessage      string
	UnitsConsumed     int64
	At                time.Time // completed_at and updated_at
	CancelDecision    CancelDecision
	CancelRequestedAt time.Time // zero stores "never"
	CancelReason      string
}

// JobSetCancelRequestedParams are the columns a cancel request writes.
type JobSetCancelRequestedParams struct {
	Tenant, ID string
	Stage      string
	Decision   CancelDecision
	Reason     string // written only with the first request
	At         time.Time
}
