package review

import (
	"context"
	"sync"
	"time"

	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/store"
)

// MaxWait bounds GetParams.WaitMS: long enough that an agent polls a review
// a few times instead of dozens, short enough to stay under the usual 30 s
// idle timeouts of proxies between a client and the server.
const MaxWait = 25 * time.Second

// jobChanges wakes the Gets waiting in this process whenever this process
// changes a job (starts it, stores its stage, settles or cancels it). It is
// one broadcast for every job: waiters are few and a wake costs one primary
// key read, which is cheaper than keeping a registry per job. A change made
// by another replica is seen by the waiter's periodic re-read instead.
type jobChanges struct {
	mu sync.Mutex
	ch chan struct{} // closed and replaced on each change
}

func newJobChanges() *jobChanges { return &jobChanges{ch: make(chan struct{})} }

// next returns a channel closed by the next change after this call.
func (c *jobChanges) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ch
}

// notify wakes everyone waiting on next.
func (c *jobChanges) notify() {
	c.mu.Lock()
	close(c.ch)
	c.ch = make(chan struct{})
	c.mu.Unlock()
}

// await holds a Get until j's state differs from the one it was read in, the
// wait ends or ctx does, and returns the job as last read. On each change of
// stage meanwhile it tells in.OnProgress, once at the start too, so a client
// that asked for progress sees where the job is while it waits. Expiry and a
// failing store end the wait with their typed error, as a plain Get would.
func (s *Service) await(ctx context.Context, p principal.Principal, j *store.Job, in *GetParams) (*store.Job, error) {
	wait := time.NewTimer(time.Duration(in.WaitMS) * time.Millisecond)
	defer wait.Stop()
	poll := time.NewTicker(s.opts.WaitPollInterval)
	defer poll.Stop()
	state, stage := j.State, j.Stage
	if in.OnProgress != nil {
		in.OnProgress(s.jobView(ctx, j, false))
	}
	for {
		// Take the channel before reading, so a change between the read
		// and the select still wakes this loop.
		changed := s.changes.next()
		cur, err := s.lookup(ctx, p, j.ID, "no job with id "+j.ID, msgGetFailed)
		if err != nil {
			if ctx.Err() != nil {
				return j, nil
			}
			return nil, err
		}
		j = cur
		if j.State != state {
			return j, nil
		}
		if j.Stage != stage {
			stage = j.Stage
			if in.OnProgress != nil {
				in.OnProgress(s.jobView(ctx, j, false))
			}
		}
		select {
		case <-ctx.Done():
			return j, nil // the client has gone or given up: answer what is known
		case <-wait.C:
			return j, nil
		case <-changed:
		case <-poll.C:
		}
	}
}
