package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/attribute"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/store"
)

// jobArgs is the River job for one review or recheck job row. The row, not
// the args, holds the request, so args never carry page or user data.
type jobArgs struct {
	Tenant string `json:"tenant"`
	JobID  string `json:"job_id"`
}

// Kind implements river.JobArgs. Stable: stored in River's table.
func (jobArgs) Kind() string { return "bastion_review" }

type worker struct {
	river.WorkerDefaults[jobArgs]
	s *Service
}

// Work runs one attempt of a job.
func (w *worker) Work(ctx context.Context, job *river.Job[jobArgs]) error {
	if w.s.tracer == nil {
		return w.s.work(ctx, job.Args, job.Attempt, job.MaxAttempts)
	}
	ctx, span := w.s.startSpan(jobContext(ctx, job.Metadata), "review.job",
		attribute.String(attrJobID, job.Args.JobID), attribute.Int(attrAttempt, job.Attempt))
	err := w.s.work(ctx, job.Args, job.Attempt, job.MaxAttempts)
	endSpan(span, err)
	return err
}

// riverQueue is the queue on a River client of any driver.
type riverQueue[TTx any] struct {
	client      *river.Client[TTx]
	maxAttempts int
}

func (q *riverQueue[TTx]) insertTx(ctx context.Context, tx store.Tx, args jobArgs) error {
	t, ok := tx.(TTx)
	if !ok {
		return fmt.Errorf("review: store transaction %T does not match the River driver", tx)
	}
	opts := &river.InsertOpts{MaxAttempts: q.maxAttempts, Metadata: jobMetadata(ctx)}
	if _, err := q.client.InsertTx(ctx, t, args, opts); err != nil {
		return fmt.Errorf("review: enqueue: %w", err)
	}
	return nil
}

func (q *riverQueue[TTx]) start(ctx context.Context) error { return q.client.Start(ctx) }

// stop waits for running jobs until ctx ends, then cancels them; their rows
// stay running and River runs them again after a restart.
func (q *riverQueue[TTx]) stop(ctx context.Context) error {
	err := q.client.Stop(ctx)
	if ctx.Err() == nil {
		return err
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return q.client.StopAndCancel(cctx)
}

var errReviewTimeout = errors.New("review: engine timeout")

// work runs a job row through the engine and settles it through the store's
// arbitration. A nil return tells River the attempt is done; an error makes
// River run it again later (a shutdown mid-run), bounded by MaxAttempts.
func (s *Service) work(ctx context.Context, args jobArgs, attempt, maxAttempts int) error {
	// A started job is capturing until the engine says how far it is: a
	// review and a recheck both begin by loading the page.
	j, err := s.store.JobStart(ctx, &store.JobStartParams{Tenant: args.Tenant, ID: args.JobID, Attempt: attempt, At: s.now(), Stage: engine.StageCapturing})
	if errors.Is(err, store.ErrNotFound) {
		return nil // swept away
	}
	if err != nil {
		return err
	}
	s.changes.notify()
	if j.State.Terminal() {
		return nil // cancelled before it started, or expired
	}
	if !j.CancelRequestedAt.IsZero() {
		return s.finish(ctx, j, &store.JobFinishParams{State: store.Cancelled})
	}
	if attempt == 1 && !j.StartedAt.IsZero() {
		s.met.QueueWait(j.StartedAt.Sub(j.CreatedAt))
	}
	if !s.now().Before(j.ExpiresAt) {
		// Nobody can read the result any more; do not spend a capture on it.
		return s.finish(ctx, j, &store.JobFinishParams{State: store.Failed, ErrorCode: store.SweepExpiredCode, ErrorMessage: store.SweepExpiredMessage})
	}

	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	key := runKey(j.Tenant, j.ID)
	s.mu.Lock()
	s.running[key] = stop
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.running, key)
		s.mu.Unlock()
	}()
	go s.watchCancel(runCtx, j, stop)

	engCtx, cancel := context.WithTimeoutCause(runCtx, s.opts.ReviewTimeout, errReviewTimeout)
	defer cancel()
	fin, runErr := s.run(engCtx, j)
	switch {
	case runErr == nil:
		fin.State = store.Completed
	case errors.Is(context.Cause(runCtx), errCancelRequested):
		fin = &store.JobFinishParams{State: store.Cancelled}
	case errors.Is(context.Cause(engCtx), errReviewTimeout):
		fin = &store.JobFinishParams{State: store.Failed, ErrorCode: string(fault.CaptureFailed),
			ErrorMessage: fmt.Sprintf("the review did not finish within %s", s.opts.ReviewTimeout)}
	case ctx.Err() != nil:
		// This process is stopping. Leave the row running for the next
		// attempt, unless this was the last one.
		if attempt < maxAttempts {
			return ctx.Err()
		}
		fin = &store.JobFinishParams{State: store.Failed, ErrorCode: store.SweepStaleCode, ErrorMessage: store.SweepStaleMessage}
	default:
		code, msg := failureReason(runErr)
		s.log.Warn("review: job failed", "job", j.ID, "code", code, "err", runErr)
		fin = &store.JobFinishParams{State: store.Failed, ErrorCode: string(code), ErrorMessage: msg}
	}
	return s.finish(ctx, j, fin)
}

// finish settles a job. It runs even if ctx was cancelled, so a stopping
// process still records the outcome it has.
func (s *Service) finish(ctx context.Context, j *store.Job, p *store.JobFinishParams) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	p.Tenant, p.ID, p.At = j.Tenant, j.ID, s.now()
	res, err := s.store.JobFinish(ctx, p)
	if err != nil {
		return fmt.Errorf("review: finish job %s: %w", j.ID, err)
	}
	if !res.Applied {
		s.log.Info("review: late outcome dropped", "job", j.ID, "state", res.Job.State, "proposed", p.State)
		return nil
	}
	s.changes.notify()
	s.met.JobFinished(string(j.Kind), string(p.State), finishReason(p))
	if p.State == store.Completed && j.Kind == store.KindReview {
		s.countFindings(p.Result)
	}
	return nil
}

// watchCancel stops the run when a cancel for it lands in the store from any
// process. Cancels from this process also stop it at once (signalCancel).
func (s *Service) watchCancel(ctx context.Context, j *store.Job, stop context.CancelCauseFunc) {
	t := time.NewTicker(s.opts.CancelPollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur, err := s.store.JobGet(ctx, j.Tenant, j.ID)
		if err == nil && (!cur.CancelRequestedAt.IsZero() || cur.State.Terminal()) {
			stop(errCancelRequested)
			return
		}
	}
}

// failureReason keeps a typed engine failure's code and safe message and
// replaces anything untyped with a fixed one.
func failureReason(err error) (fault.Code, string) {
	if e, ok := fault.As(err); ok {
		return e.Code, e.Message
	}
	return fault.JudgmentFailed, "the engine could not review the page"
}

// run calls the engine for the job and returns what to store.
func (s *Service) run(ctx context.Context, j *store.Job) (*store.JobFinishParams, error) {
	switch j.Kind {
	case store.KindReview:
		var req reviewRequest
		if err := json.Unmarshal(j.Request, &req); err != nil {
			return nil, fmt.Errorf("review: stored request: %w", err)
		}
		w, stop := s.startStageWriter(ctx, j)
		defer stop()
		er := engine.Request{URL: req.URL, Routes: req.Routes, Progress: w.report}
		for _, v := range req.Viewports {
			er.Viewports = append(er.Viewports, design.Viewport(v))
		}
		began := time.Now()
		res, err := s.engine.Review(ctx, er)
		if err != nil {
			return nil, err
		}
		s.pace.observe(time.Since(began), len(er.Routes)*len(er.Viewports))
		if res == nil {
			return nil, fault.New(fault.JudgmentFailed, "the engine returned no result")
		}
		b, err := encodeResult(res)
		if err != nil {
			return nil, fmt.Errorf("review: encode result: %w", err)
		}
		fin := &store.JobFinishParams{Result: b}
		for _, e := range res.Evidence {
			fin.Evidence = append(fin.Evidence, store.Evidence{ID: e.ID, MIMEType: e.MIMEType, Data: e.Data})
		}
		return fin, nil
	case store.KindRecheck:
		var req storedRecheck
		if err := json.Unmarshal(j.Request, &req); err != nil {
			return nil, fmt.Errorf("review: stored request: %w", err)
		}
		rev, err := s.store.JobGetReview(ctx, j.Tenant, j.ReviewID)
		if err != nil {
			return nil, fmt.Errorf("review: recheck's review: %w", err)
		}
		res, err := decodeResult(rev)
		if err != nil {
			return nil, fmt.Errorf("review: recheck's review: %w", err)
		}
		rr := engine.RecheckRequest{URL: req.CanonicalURL}
		for _, f := range res.Findings {
			for _, id := range req.FindingIDs {
				if f.ID == id {
					rr.Findings = append(rr.Findings, f)
				}
			}
		}
		outs, err := s.engine.Recheck(ctx, rr)
		if err != nil {
			return nil, err
		}
		fin := &store.JobFinishParams{}
		for i := range outs {
			o := &outs[i]
			if k := slices.IndexFunc(rr.Findings, func(f design.Finding) bool { return f.ID == o.FindingID }); k >= 0 {
				o.BeforeEvidenceID = rr.Findings[k].EvidenceID
			}
			if e := o.Evidence; e != nil && e.ID == o.EvidenceID && len(e.Data) > 0 {
				fin.Evidence = append(fin.Evidence, store.Evidence{ID: e.ID, MIMEType: e.MIMEType, Data: e.Data})
			} else {
				o.EvidenceID = "" // name only a crop that is kept
			}
		}
		rep := RecheckReport{RecheckID: j.ID, ReviewID: j.ReviewID, BeforeFingerprint: req.BeforeFingerprint,
			AfterFingerprint: req.AfterFingerprint, Outcomes: outs}
		if fin.Result, err = json.Marshal(&rep); err != nil {
			return nil, fmt.Errorf("review: encode recheck: %w", err)
		}
		return fin, nil
	}
	return nil, fmt.Errorf("review: unknown job kind %q", j.Kind)
}
