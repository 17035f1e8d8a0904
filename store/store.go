// Package store declares bastion's persistent state: review jobs with their
// idempotency keys and cancellation decisions, the tenant unit ledger, recheck
// limiter events, evidence crops, the targets registry's verified hosts and
// the team's feedback events on findings.
// Adapters (store/sqlite, store/postgres) implement Store and all pass
// storetest.Exercise. The job state machine, the unit ledger and cancel
// arbitration are written once, in Jobs, over a Driver whose Executor runs
// single statements of the adapter's dialect; an adapter holds only its SQL,
// its transactions and its way of binding a tenant.
//
// Invariants: every row is keyed by tenant and every method takes the tenant,
// so a row of one tenant is never read or written on behalf of another (the
// Postgres adapter backs this with row-level security). A job's state moves
// only queued → running → completed | failed | cancelled, and a terminal job
// is immutable: completion and cancellation both go through one conditional
// update in one transaction, so a late result never overwrites a cancel.
// Units reserved by a job are consumed when it completes and refunded to the
// tenant when it fails or is cancelled, in the same transaction that decides
// its terminal state.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/targets"
)

// Errors returned by Store methods. Adapters return these exact values
// (possibly wrapped), never driver errors for these conditions.
var (
	// ErrNotFound means no row matched the tenant and key.
	ErrNotFound = errors.New("store: not found")
	// ErrIdempotencyConflict means the client request id is already bound to a
	// job with a different fingerprint.
	ErrIdempotencyConflict = errors.New("store: client request id bound to a different request")
	// ErrInsufficientBalance means the tenant's unit balance cannot cover a
	// reservation. See *BalanceError for the numbers.
	ErrInsufficientBalance = errors.New("store: insufficient unit balance")
)

// BalanceError reports a refused reservation. It matches
// ErrInsufficientBalance under errors.Is.
type BalanceError struct {
	Balance int64 // units the tenant has left
	Needed  int64 // units the request needed
}

func (e *BalanceError) Error() string { return ErrInsufficientBalance.Error() }

// Is reports whether target is ErrInsufficientBalance.
func (e *BalanceError) Is(target error) bool { return target == ErrInsufficientBalance }

// JobKind says what a job does.
type JobKind string

// Job kinds.
const (
	KindReview  JobKind = "review"
	KindRecheck JobKind = "recheck"
)

// JobState is a job's place in its state machine.
type JobState string

// Job states. Completed, Failed and Cancelled are terminal.
const (
	Queued    JobState = "queued"
	Running   JobState = "running"
	Completed JobState = "completed"
	Failed    JobState = "failed"
	Cancelled JobState = "cancelled"
)

// Terminal reports whether s is a final state.
func (s JobState) Terminal() bool { return s == Completed || s == Failed || s == Cancelled }

// CancelDecision records how a cancel and a completion were arbitrated.
type CancelDecision string

// Cancel decisions.
const (
	// CancelledBeforeStart: the job was queued and became cancelled at once.
	CancelledBeforeStart CancelDecision = "cancelled_before_start"
	// CancelRequested: the job was running; its worker was asked to stop.
	CancelRequested CancelDecision = "cancel_requested"
	// CancelWon: the worker stopped because of the request; the job is cancelled.
	CancelWon CancelDecision = "cancel_won"
	// CompletionWon: a result arrived after the request and was kept.
	CompletionWon CancelDecision = "completion_won"
	// AlreadyTerminal: the job had finished before the cancel arrived.
	AlreadyTerminal CancelDecision = "already_terminal"
)

// Job is one review or recheck. Times are UTC with millisecond precision; a
// zero time means "not yet".
type Job struct {
	Tenant          string
	ID              string // "job_" + UUIDv4
	PrincipalID     string
	Kind            JobKind
	ClientRequestID string
	Fingerprint     string // of the normalized request; idempotency compares it
	State           JobState
	Stage           string
	Request         []byte // normalized request as JSON; opaque to the store
	// ReviewID is the review a job belongs to: a review's own id ("rev_…")
	// or, for a recheck, the id of the review it rechecks.
	ReviewID          string
	Host              string // canonical host of the target
	TargetFingerprint string // of (url, expected_revision)
	Result            []byte // JSON, set when the job completes; opaque to the store
	ErrorCode         string // set when the job fails
	ErrorMessage      string // client-safe
	UnitsReserved     int64
	UnitsConsumed     int64
	Attempt           int
	CreatedAt         time.Time
	UpdatedAt         time.Time
	StartedAt         time.Time
	CompletedAt       time.Time
	ExpiresAt         time.Time
	CancelRequestedAt time.Time
	CancelReason      string
	CancelDecision    CancelDecision
}

// Evidence is one stored evidence crop of a job.
type Evidence struct {
	ID       string
	MIMEType string
	Data     []byte
}

// Tx is an adapter's native transaction (*sql.Tx for store/sqlite, pgx.Tx for
// store/postgres), handed to hooks that must write in the same transaction,
// such as River's InsertTx.
type Tx any

// RecheckEvent is one admitted recheck, the unit of the recheck limiter.
type RecheckEvent struct {
	JobID       string
	ReviewID    string
	PrincipalID string
	FindingIDs  []string
	Units       int64
	At          time.Time
}

// RecheckUsage is the limiter state JobCreate hands to an admission check:
// every admitted recheck at or after Since, by the principal (on any review)
// and on the review (by any principal), oldest first, plus the review's
// lifetime count and latest recheck for backoff.
type RecheckUsage struct {
	Since       time.Time
	ByPrincipal []RecheckEvent
	ByReview    []RecheckEvent
	ReviewTotal int
	ReviewLast  time.Time // zero when ReviewTotal is 0
}

// RecheckAdmission asks JobCreate to admit a recheck against the limiter
// state, inside the creating transaction.
type RecheckAdmission struct {
	FindingIDs []string
	Since      time.Time // how far back the usage must reach
	// Admit decides from the usage; a non-nil error aborts the creation and
	// is returned unchanged. It must not touch the store.
	Admit func(*RecheckUsage) error
}

// JobCreateParams creates a job, idempotently.
type JobCreateParams struct {
	// Job holds the new row: Tenant, ID, PrincipalID, Kind, ClientRequestID,
	// Fingerprint, Request, ReviewID, Host, TargetFingerprint, UnitsReserved,
	// CreatedAt and ExpiresAt are used; State starts queued.
	Job Job
	// DefaultBalance is the balance a tenant without a ledger row starts with.
	DefaultBalance int64
	// Recheck, when non-nil, admits the job against the recheck limiter and
	// records it as a recheck event in the same transaction.
	Recheck *RecheckAdmission
	// Enqueue, when non-nil, runs inside the transaction after the job row is
	// written (e.g. River's InsertTx). Its error aborts the creation.
	Enqueue func(ctx context.Context, tx Tx, job *Job) error
}

// JobCreateResult is the job that now owns the key.
type JobCreateResult struct {
	Job     *Job
	Reused  bool  // an existing job with the same key and fingerprint
	Balance int64 // tenant balance after the reservation (or now, when reused)
}

// JobStartParams moves a queued job to running.
type JobStartParams struct {
	Tenant, ID string
	Attempt    int
	At         time.Time
	Stage      string
}

// JobSetStageParams records how far a running job has got.
type JobSetStageParams struct {
	Tenant, ID string
	Stage      string // free text to the store; review encodes it
	At         time.Time
}

// JobFinishParams proposes a terminal state for a job.
type JobFinishParams struct {
	Tenant, ID   string
	State        JobState // Completed, Failed or Cancelled
	Result       []byte
	Evidence     []Evidence
	ErrorCode    string
	ErrorMessage string
	At           time.Time
}

// JobFinishResult reports the arbitration.
type JobFinishResult struct {
	Job     *Job
	Applied bool // false when the job was already terminal and is unchanged
}

// JobCancelParams requests cancellation.
type JobCancelParams struct {
	Tenant, ID string
	Reason     string // stored with the first request only
	At         time.Time
}

// JobCancelResult reports the arbitration.
type JobCancelResult struct {
	Job      *Job
	Decision CancelDecision
}

// JobSweepParams expires and purges jobs across all tenants.
type JobSweepParams struct {
	Now time.Time
	// StaleBefore fails running jobs started before it whose worker is gone;
	// zero disables the rule.
	StaleBefore time.Time
	// PurgeBefore deletes jobs (and their evidence) that expired before it;
	// zero disables deletion.
	PurgeBefore time.Time
}

// JobSweepResult counts what a sweep did.
type JobSweepResult struct {
	Expired int // non-terminal jobs past expiry, now failed
	Stale   int // running jobs with no worker, now failed
	Purged  int // rows deleted
}

// The error codes the store writes itself when a sweep fails a job.
const (
	SweepExpiredCode     = "JOB_EXPIRED"
	SweepExpiredMessage  = "the job expired before it finished"
	SweepStaleCode       = "UNAVAILABLE"
	SweepStaleMessage    = "the review was interrupted and could not be resumed"
	StageFailed          = "failed"
	StageCancelled       = "cancelled"
	StageCancelling      = "cancelling"
	StageFinalizing      = "finalizing"
	StageJudging         = "judging"
	StageWaitingCapacity = "waiting_for_capacity"
)

// Store is bastion's persistence. Every method is safe for concurrent use by
// many goroutines and by several processes sharing the database.
type Store interface {
	// JobCreate returns the job bound to (tenant, principal, client request
	// id), creating it when the key is new: it reserves UnitsReserved from the
	// tenant balance (*BalanceError if short), admits a recheck, inserts the
	// row and runs Enqueue, all in one transaction. A known key with the same
	// fingerprint returns that job with Reused set and reserves nothing; a
	// different fingerprint or kind returns ErrIdempotencyConflict.
	JobCreate(ctx context.Context, p *JobCreateParams) (*JobCreateResult, error)
	// JobGet returns a job of the tenant, or ErrNotFound.
	JobGet(ctx context.Context, tenant, id string) (*Job, error)
	// JobGetByKey returns the job bound to an idempotency key, or ErrNotFound.
	JobGetByKey(ctx context.Context, tenant, principalID, clientRequestID string) (*Job, error)
	// JobGetReview returns the review job with the given review id, or ErrNotFound.
	JobGetReview(ctx context.Context, tenant, reviewID string) (*Job, error)
	// JobsAhead counts the tenant's jobs still queued that were created
	// before j: the jobs that start before it. Other tenants' jobs are not
	// visible to the tenant and are not counted.
	JobsAhead(ctx context.Context, j *Job) (int, error)
	// JobStart moves a queued (or re-attempted running) job to running and
	// returns it. A terminal job is returned unchanged.
	JobStart(ctx context.Context, p *JobStartParams) (*Job, error)
	// JobSetStage sets a running job's stage and reports whether it did: a
	// job that is not running, or whose cancel was requested (its stage is
	// cancelling), is left unchanged.
	JobSetStage(ctx context.Context, p *JobSetStageParams) (bool, error)
	// JobFinish makes a job terminal unless it already is, settling its units.
	JobFinish(ctx context.Context, p *JobFinishParams) (*JobFinishResult, error)
	// JobCancel cancels a queued job at once, marks a running one as
	// cancel-requested, and leaves a terminal one unchanged.
	JobCancel(ctx context.Context, p *JobCancelParams) (*JobCancelResult, error)
	// JobSweep fails expired and stale jobs (refunding their units) and
	// deletes long-expired ones.
	JobSweep(ctx context.Context, p *JobSweepParams) (*JobSweepResult, error)
	// EvidenceList returns a job's evidence in the order it was stored.
	EvidenceList(ctx context.Context, tenant, jobID string) ([]Evidence, error)
	// BalanceGet returns the tenant's unit balance (def when it has no row).
	BalanceGet(ctx context.Context, tenant string, def int64) (int64, error)
	// BalanceSet sets the tenant's unit balance (an operator top-up).
	BalanceSet(ctx context.Context, tenant string, units int64) error
	// Close releases the store.
	Close() error

	// The verified-targets registry's persistence: TargetGet and
	// TargetDelete return targets.ErrNotFound for a missing (tenant, host).
	targets.Store
}

// PATStore is the personal-access-token persistence every adapter implements
// beside Store: auth.PATStore plus auth.PATToucher, on the same database.
// PATGetByHash is the one lookup not scoped by a tenant (the token names its
// tenant); each adapter documents how it keeps that lookup from reading
// anything else across tenants. PAT ids are unique per tenant and hashes
// across all tenants; a duplicate is refused.
type PATStore interface {
	auth.PATStore
	auth.PATToucher
}
