// Package review is bastion's design-review service: the one place that
// decides who may submit, read, recheck and cancel reviews, what a request
// means once normalized, what it costs, and how its durable job runs.
// Transports (MCP tools, REST) are thin adapters over Service and hold no
// store handle.
//
// Invariants: every method takes the caller's Principal and checks its scope
// before any lookup; a job is visible only to the principal that submitted it
// (another principal, even in the same tenant, gets JOB_NOT_FOUND); every
// error is a *fault.Error whose message is safe to show; idempotency keys,
// the unit ledger, recheck limits and cancellation all live in the store, so
// any Service on the same database, before or after a restart, gives the same
// answers. A review's result is only ever produced by the Engine and written
// by the worker through the store's arbitration; no caller can set a status.
//
// Units: each tenant has a balance (Options.DefaultBalance, 1000 by default,
// topped up by an operator with store.BalanceSet). A review reserves 1 unit
// and a recheck max(1, ceil(findings/3)) when submitted; the units are
// consumed when the job completes and refunded when it fails, is cancelled
// or expires. A submit the balance cannot cover is BUDGET_EXHAUSTED with
// retriable false and next_action contact_support: nothing refills a balance
// by itself, so retrying would not help. (The recheck limiter's per-review
// half-hour chain is also BUDGET_EXHAUSTED, but retriable with wait and
// retry_after, as in the peer contract.)
package review

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"go.opentelemetry.io/otel/trace"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/store"
)

// Engine measures pages. The engine package implements it.
type Engine interface {
	Review(ctx context.Context, req engine.Request) (*design.Result, error)
	Recheck(ctx context.Context, req engine.RecheckRequest) ([]design.RecheckOutcome, error)
}

// Authorizer decides whether a tenant may have a URL captured: the egress
// guard's target check plus the tenant's verified-targets registry. It
// returns the canonical URL and host, or a *fault.Error (URL_NOT_ALLOWED,
// DOMAIN_UNVERIFIED, DNS_TARGET_PROHIBITED…).
type Authorizer interface {
	AuthorizeTarget(ctx context.Context, tenant, rawURL string) (canonicalURL string, host string, err error)
}

// Clock tells the time. Tests inject one to move time forward.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Deps are the Service's collaborators. Store, Engine and Authorizer are
// required.
type Deps struct {
	Store      store.Store
	Engine     Engine
	Authorizer Authorizer
	Clock      Clock        // nil means the system clock
	Logger     *slog.Logger // nil discards
	Metrics    Metrics      // nil observes nothing
	// Tracer starts the service's spans (submit, the job's run); nil
	// (tracing off) starts none. A job carries its submitter's trace
	// context in its River metadata, so its run joins that trace.
	Tracer trace.Tracer
	// Feedback records the team's verdicts on findings. Nil means Store
	// when it implements store.FeedbackStore (both adapters do); with
	// neither, RecordFeedback is UNAVAILABLE and panel actions record
	// nothing.
	Feedback store.FeedbackStore
}

// Options tunes the Service. The zero value of each field means its default.
type Options struct {
	// DefaultBalance is the unit balance a tenant starts with. Default 1000.
	DefaultBalance int64
	// JobTTL is how long a job can be read after it is created. Default 24h.
	JobTTL time.Duration
	// Retention is how long an expired job's row is kept (answering
	// JOB_EXPIRED and holding its idempotency key) before the sweeper
	// deletes it. Default 7 days.
	Retention time.Duration
	// PollAfter is the poll interval the Service asks clients for. Default 1.5s.
	PollAfter time.Duration
	// ReviewTimeout bounds one engine run. Default DefaultTimeout.
	ReviewTimeout time.Duration
	// RescueStuckJobsAfter is how long a job may stay running before River
	// assumes its process died and runs it again; it must exceed
	// ReviewTimeout plus a margin of half of it (at most 30s). Default
	// ReviewTimeout + 90s.
	RescueStuckJobsAfter time.Duration
	// MaxAttempts is how many times River runs a job whose process died.
	// Default 3.
	MaxAttempts int
	// StaleAfter fails a job still running this long after it first started
	// (its retries are exhausted). Default MaxAttempts × (RescueStuckJobsAfter
	// + ReviewTimeout) + 10 minutes.
	StaleAfter time.Duration
	// Workers is how many jobs run at once in this process. Default 2.
	Workers int
	// WaitPollInterval is how often a Get with wait_ms re-reads its job,
	// to see changes made by other processes (this process's own changes
	// wake it at once). Default 500ms.
	WaitPollInterval time.Duration
	// CancelPollInterval is how often a running job checks the store for a
	// cancel requested by another process. Default 1s.
	CancelPollInterval time.Duration
	// SweepInterval is how often Start's sweeper runs. Default 1 minute.
	SweepInterval time.Duration
	// FetchPollInterval is how often River looks for new jobs. Default 1s.
	FetchPollInterval time.Duration
	// RecheckLimits are the recheck limiter's numbers. Zero fields mean the
	// defaults (see RecheckLimits).
	RecheckLimits RecheckLimits
	// ClientID names this process to River; empty lets River choose.
	ClientID string
}

// jobTimeoutMargin is how much longer than ReviewTimeout River lets a job
// run, so a timed-out review still records its failure.
func (o Options) jobTimeoutMargin() time.Duration { return min(30*time.Second, o.ReviewTimeout/2) }

func (o Options) withDefaults() (Options, error) {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.DefaultBalance <= 0 {
		o.DefaultBalance = 1000
	}
	def(&o.JobTTL, 24*time.Hour)
	def(&o.Retention, 7*24*time.Hour)
	def(&o.PollAfter, 1500*time.Millisecond)
	def(&o.ReviewTimeout, DefaultTimeout)
	def(&o.RescueStuckJobsAfter, o.ReviewTimeout+o.jobTimeoutMargin()+time.Minute)
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	def(&o.StaleAfter, time.Duration(o.MaxAttempts)*(o.RescueStuckJobsAfter+o.ReviewTimeout)+10*time.Minute)
	if o.Workers <= 0 {
		o.Workers = 2
	}
	def(&o.CancelPollInterval, time.Second)
	def(&o.WaitPollInterval, 500*time.Millisecond)
	def(&o.SweepInterval, time.Minute)
	def(&o.FetchPollInterval, time.Second)
	o.RecheckLimits = o.RecheckLimits.withDefaults()
	if o.RescueStuckJobsAfter < o.ReviewTimeout+o.jobTimeoutMargin() {
		return o, fmt.Errorf("review: RescueStuckJobsAfter (%s) must be at least ReviewTimeout + %s", o.RescueStuckJobsAfter, o.jobTimeoutMargin())
	}
	return o, nil
}

// Service is the design-review service. It is safe for concurrent use.
type Service struct {
	// Fixed at creation.
	store  store.Store
	fb     store.FeedbackStore // nil: feedback is not recorded
	engine Engine
	auth   Authorizer
	clock  Clock
	log    *slog.Logger
	met    Metrics
	tracer trace.Tracer // or nil
	opts   Options
	queue  queue

	mu        sync.Mutex
	running   map[string]context.CancelCauseFunc // tenant\x00job id → stop the job's run
	stopSweep context.CancelFunc                 // nil unless started
	sweepDone chan struct{}

	changes *jobChanges // wakes waiting Gets when this process changes a job
	pace    pace        // this process's job and capture durations, for poll_after_ms
}

// queue is the durable job queue: River over the store's database.
type queue interface {
	insertTx(ctx context.Context, tx store.Tx, args jobArgs) error
	start(ctx context.Context) error
	stop(ctx context.Context) error
}

// New builds a Service whose jobs run on River through driver, which must use
// the same database as deps.Store (for store/sqlite:
// riversqlite.New(db.SQL())), so a job row and its River job commit together.
// Jobs are only worked after Start.
func New[TTx any](deps Deps, driver riverdriver.Driver[TTx], opts Options) (*Service, error) {
	if deps.Store == nil || deps.Engine == nil || deps.Authorizer == nil || driver == nil {
		return nil, errors.New("review: Store, Engine, Authorizer and a River driver are required")
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Service{
		store:   deps.Store,
		fb:      deps.Feedback,
		engine:  deps.Engine,
		auth:    deps.Authorizer,
		clock:   deps.Clock,
		log:     deps.Logger,
		met:     deps.Metrics,
		tracer:  deps.Tracer,
		opts:    opts,
		running: map[string]context.CancelCauseFunc{},
		changes: newJobChanges(),
	}
	if s.met == nil {
		s.met = noMetrics{}
	}
	if fb, ok := deps.Store.(store.FeedbackStore); ok && s.fb == nil {
		s.fb = fb
	}
	if s.clock == nil {
		s.clock = systemClock{}
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &worker{s: s}); err != nil {
		return nil, fmt.Errorf("review: %w", err)
	}
	client, err := river.NewClient(driver, &river.Config{
		ID:                   opts.ClientID,
		Logger:               s.log,
		Workers:              workers,
		Queues:               map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: opts.Workers}},
		JobTimeout:           opts.ReviewTimeout + opts.jobTimeoutMargin(),
		RescueStuckJobsAfter: opts.RescueStuckJobsAfter,
		MaxAttempts:          opts.MaxAttempts,
		FetchPollInterval:    opts.FetchPollInterval,
		FetchCooldown:        min(opts.FetchPollInterval, 100*time.Millisecond),
	})
	if err != nil {
		return nil, fmt.Errorf("review: river client: %w", err)
	}
	s.queue = &riverQueue[TTx]{client: client, maxAttempts: opts.MaxAttempts}
	return s, nil
}

// Start runs the job workers and the expiry sweeper until Stop.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopSweep != nil {
		return errors.New("review: already started")
	}
	if err := s.queue.start(ctx); err != nil {
		return fmt.Errorf("review: start jobs: %w", err)
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stopSweep, s.sweepDone = cancel, make(chan struct{})
	go s.sweepLoop(sctx, s.sweepDone)
	return nil
}

// Stop stops the sweeper and the workers; running jobs are cancelled when ctx
// ends and are resumed by a later Start (here or on another process).
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	cancel, done := s.stopSweep, s.sweepDone
	s.stopSweep = nil
	s.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	<-done
	return s.queue.stop(ctx)
}

func (s *Service) sweepLoop(ctx context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(s.opts.SweepInterval)
	defer t.Stop()
	for {
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("review: sweep failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep fails jobs past their expiry or left running by a dead process
// (refunding their units) and deletes jobs expired longer than Retention.
// Start runs it periodically; it is idempotent, so every replica may run it.
func (s *Service) Sweep(ctx context.Context) (*store.JobSweepResult, error) {
	now := s.now()
	return s.store.JobSweep(ctx, &store.JobSweepParams{
		Now:         now,
		StaleBefore: now.Add(-s.opts.StaleAfter),
		PurgeBefore: now.Add(-s.opts.Retention),
	})
}

// now is the clock's time in UTC at the store's millisecond precision.
func (s *Service) now() time.Time { return s.clock.Now().UTC().Truncate(time.Millisecond) }

// newID returns prefix + a random UUIDv4.
func newID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%s%x-%x-%x-%x-%x", prefix, b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func runKey(tenant, id string) string { return tenant + "\x00" + id }
