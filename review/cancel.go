package review

import (
	"context"
	"errors"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/store"
)

var errCancelRequested = errors.New("review: cancel requested")

// Cancel cancels a queued job at once and asks a running one to stop
// (best effort: a result that arrives first is kept, recorded as
// completion_won). A terminal job keeps its state. Cancelling costs nothing
// and refunds the job's reserved units. Requires reviews:cancel, checked
// before any lookup.
func (s *Service) Cancel(ctx context.Context, p principal.Principal, in *CancelParams) (*CancelResult, error) {
	if err := authorize(p, principal.ReviewsCancel, "cancelling a review"); err != nil {
		return nil, err
	}
	if in == nil {
		return nil, invalid("arguments", "are required")
	}
	if len(in.Reason) > maxCancelReason {
		return nil, invalid("reason", "must be at most %d characters", maxCancelReason)
	}
	j, err := s.lookup(ctx, p, in.JobID, "no such cancellable job", msgCancelFailed)
	if err != nil {
		return nil, err
	}
	res, err := s.store.JobCancel(ctx, &store.JobCancelParams{Tenant: p.Tenant(), ID: j.ID, Reason: in.Reason, At: s.now()})
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.New(fault.JobNotFound, "no such cancellable job")
	}
	if err != nil {
		return nil, fault.From(err, msgCancelFailed)
	}
	s.changes.notify()
	out := &CancelResult{SchemaVersion: SchemaVersion, JobID: j.ID, Status: string(res.Job.State), Decision: res.Decision}
	if t := res.Job.CancelRequestedAt; !t.IsZero() {
		out.CancellationRequestedAt = &t
	}
	switch res.Decision {
	case store.CancelledBeforeStart:
		out.UpstreamCancellation = UpstreamNotNeeded
		s.met.JobFinished(string(j.Kind), string(store.Cancelled), string(store.CancelledBeforeStart))
	case store.CancelRequested:
		out.UpstreamCancellation = UpstreamRequested
		s.signalCancel(p.Tenant(), j.ID)
	default:
		out.UpstreamCancellation = UpstreamAlreadyTerminal
	}
	return out, nil
}

// signalCancel stops the job's run if it runs in this process. A run in
// another process sees the request on its next store poll.
func (s *Service) signalCancel(tenant, id string) {
	s.mu.Lock()
	stop := s.running[runKey(tenant, id)]
	s.mu.Unlock()
	if stop != nil {
		stop(errCancelRequested)
	}
}
