package review

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/store"
)

// A running review's stage is stored in the job row, so every replica and
// every poll sees it: "capturing D/T" while its T captures (route ×
// viewport) run, D of them done, then "judging"; the store writes
// "finalizing" as it completes the job. Clients see the stage name and, while
// capturing, the counts as job.progress.

// Progress is how many of a review's captures are done.
type Progress struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

// encodeStage is p as the job row's stage.
func encodeStage(p engine.Progress) string {
	if p.Stage == engine.StageCapturing {
		return fmt.Sprintf("%s %d/%d", p.Stage, p.Done, p.Total)
	}
	return p.Stage
}

// decodeStage splits a stored stage into its name and capture counts (nil
// unless capturing). A stage this version did not write is returned whole.
func decodeStage(s string) (string, *Progress) {
	name, counts, ok := strings.Cut(s, " ")
	if !ok || name != engine.StageCapturing {
		return s, nil
	}
	d, t, ok := strings.Cut(counts, "/")
	done, err1 := strconv.Atoi(d)
	total, err2 := strconv.Atoi(t)
	if !ok || err1 != nil || err2 != nil || done < 0 || total < done {
		return s, nil
	}
	return name, &Progress{Done: done, Total: total}
}

// stageWriter stores a running job's progress as the engine reports it.
// The engine's calls only record the furthest report and wake the writer,
// so a slow database never holds up a capture; the writer stores the latest
// report it has not stored yet, coalescing any that came in between.
type stageWriter struct {
	s          *Service
	tenant, id string
	wake       chan struct{} // capacity 1
	done       chan struct{} // closed when the writer returns

	mu     sync.Mutex
	latest engine.Progress // guarded by mu
}

// startStageWriter runs a writer for j until ctx ends; stop waits for it.
func (s *Service) startStageWriter(ctx context.Context, j *store.Job) (w *stageWriter, stop func()) {
	w = &stageWriter{s: s, tenant: j.Tenant, id: j.ID, wake: make(chan struct{}, 1), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(ctx)
	go w.run(ctx)
	return w, func() { cancel(); <-w.done }
}

// report implements engine.Request.Progress.
func (w *stageWriter) report(p engine.Progress) {
	w.mu.Lock()
	if further(p, w.latest) {
		w.latest = p
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// further reports whether a is past b: a later stage, or more captures done.
func further(a, b engine.Progress) bool {
	rank := func(s string) int {
		switch s {
		case engine.StageCapturing:
			return 1
		case engine.StageJudging:
			return 2
		}
		return 0
	}
	if ra, rb := rank(a.Stage), rank(b.Stage); ra != rb {
		return ra > rb
	}
	return a.Done > b.Done
}

func (w *stageWriter) run(ctx context.Context) {
	defer close(w.done)
	stored := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
		w.mu.Lock()
		stage := encodeStage(w.latest)
		w.mu.Unlock()
		if stage == stored {
			continue
		}
		_, err := w.s.store.JobSetStage(ctx, &store.JobSetStageParams{Tenant: w.tenant, ID: w.id, Stage: stage, At: w.s.now()})
		if err != nil {
			if ctx.Err() == nil {
				w.s.log.Warn("review: stage not stored", "job", w.id, "err", err)
			}
			continue
		}
		stored = stage
		w.s.changes.notify()
	}
}
