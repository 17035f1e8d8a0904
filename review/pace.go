package review

import (
	"context"
	"sync"
	"time"

	"github.com/bastion-mcp/bastion/store"
)

// poll_after_ms is an estimate of when a job is next worth asking about,
// from what this process has measured: how long a capture (route ×
// viewport) and a whole job take here, how many of the tenant's jobs are
// queued ahead, and how far a running review has got. Until a job has run in
// this process, it is Options.PollAfter. The estimate only ever shortens or
// lengthens polling; nothing depends on it being right.
const (
	minPollAfter = 250 * time.Millisecond
	maxPollAfter = 10 * time.Second
)

// pace holds moving averages of this process's job and capture durations.
type pace struct {
	mu         sync.Mutex
	job        time.Duration // guarded by mu; zero until a job has run
	perCapture time.Duration // guarded by mu
}

// paceWeight is how much each new job moves the averages: recent jobs
// dominate after a handful, so a change of machine load shows quickly.
const paceWeight = 0.3

// observe records one finished review of captures captures that took d.
func (p *pace) observe(d time.Duration, captures int) {
	if d <= 0 || captures <= 0 {
		return
	}
	per := d / time.Duration(captures)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.job == 0 {
		p.job, p.perCapture = d, per
		return
	}
	p.job += time.Duration(paceWeight * float64(d-p.job))
	p.perCapture += time.Duration(paceWeight * float64(per-p.perCapture))
}

func (p *pace) read() (job, perCapture time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.job, p.perCapture
}

// pollAfter estimates when j is next worth reading.
func (s *Service) pollAfter(ctx context.Context, j *store.Job) time.Duration {
	job, perCapture := s.pace.read()
	if job == 0 || j.State.Terminal() {
		return s.opts.PollAfter
	}
	var est time.Duration
	switch j.State {
	case store.Queued:
		ahead, err := s.store.JobsAhead(ctx, j)
		if err != nil {
			return s.opts.PollAfter
		}
		// It starts once the jobs ahead of it have been taken by the
		// workers; with fewer ahead than workers that is the next fetch.
		rounds := ahead / s.opts.Workers
		est = time.Duration(rounds)*job + s.opts.FetchPollInterval
	default:
		est = perCapture // judging and finalizing: about one capture's time
		if _, pr := decodeStage(j.Stage); pr != nil {
			est = time.Duration(pr.Total-pr.Done) * perCapture
		}
	}
	return min(max(est, minPollAfter), maxPollAfter)
}
