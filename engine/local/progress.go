package local

import (
	"sync/atomic"

	"github.com/bastion-mcp/bastion/engine"
)

// startProgress reports capturing 0 of len(jobs) to fn, has each job report
// its end, and returns the report of a later stage. A nil fn reports nothing.
func startProgress(fn func(engine.Progress), jobs []*shot) func(stage string) {
	if fn == nil {
		return func(string) {}
	}
	total := len(jobs)
	var done atomic.Int32
	for _, j := range jobs {
		j.done = func() { fn(engine.Progress{Stage: engine.StageCapturing, Done: int(done.Add(1)), Total: total}) }
	}
	fn(engine.Progress{Stage: engine.StageCapturing, Total: total})
	return func(stage string) { fn(engine.Progress{Stage: stage, Done: int(done.Load()), Total: total}) }
}
