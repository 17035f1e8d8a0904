package reviewmcp

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/store"
)

// progressReporter returns what tells a waiting design_review_get's client
// where its job is, as notifications/progress on the request's progress
// token, or nil when the client sent none. The progress value is the job's
// place on one scale (queued, each capture, judging, finalizing), so it only
// grows, as the protocol asks; a report that would not grow it is dropped.
func progressReporter(ctx context.Context, req *mcp.CallToolRequest) func(review.Job) {
	if req == nil || req.Session == nil || req.Params == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	last, captures := -1.0, 0
	return func(j review.Job) {
		if j.Progress != nil {
			captures = j.Progress.Total
		}
		at, total := jobProgress(j, captures)
		if at <= last {
			return
		}
		last = at
		// A client that has gone away only loses a notification; the
		// answer to the call itself still follows.
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token, Progress: at, Total: total, Message: progressMessage(j),
		})
	}
}

// jobProgress places j on a scale of captures+3 steps: 0 queued, 1 started,
// one more per capture done, then judging and finalizing. Total is 0
// (unknown) while the number of captures is (a recheck does not count them).
func jobProgress(j review.Job, captures int) (at, total float64) {
	if captures > 0 {
		total = float64(captures + 3)
	}
	switch {
	case j.Status == string(store.Queued):
		return 0, total
	case j.Progress != nil:
		return float64(1 + j.Progress.Done), total
	case j.Stage == engine.StageJudging:
		return float64(captures + 2), total
	case j.Stage == store.StageFinalizing:
		return float64(captures + 3), total
	}
	return 1, total
}

func progressMessage(j review.Job) string {
	switch {
	case j.Progress != nil:
		return fmt.Sprintf("%s %s: %d of %d captures", j.Status, j.Stage, j.Progress.Done, j.Progress.Total)
	case j.Stage != "":
		return j.Status + " " + j.Stage
	}
	return j.Status
}
