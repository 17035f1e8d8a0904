package reviewmcp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/review/reviewtest"
	"github.com/bastion-mcp/bastion/reviewmcp"
)

// TestGetWaitsWithProgress calls design_review_get with wait_ms and a
// progress token on a running review held at its gate, through a real
// go-sdk client: the client is told the stage (capturing 2 of 3) as
// notifications/progress on its token while the call waits, and the call
// answers with the completed job once the run is let go.
func TestGetWaitsWithProgress(t *testing.T) {
	t.Parallel()
	gate, started := make(chan struct{}), make(chan string, 1)
	eng := &reviewtest.Engine{Result: reviewtest.SampleResult(), Gate: gate, Started: started, Steps: []engine.Progress{
		{Stage: engine.StageCapturing, Total: 3},
		{Stage: engine.StageCapturing, Done: 2, Total: 3},
	}}
	h := newHarness(t, eng, "", true)
	notes := make(chan *mcp.ProgressNotificationParams, 16)
	c := h.connect(t, h.Principal, clientOpts{progress: func(r *mcp.ProgressNotificationClientRequest) { notes <- r.Params }})
	var sub submitOut
	decodeInto(t, c.call(reviewmcp.ToolReview, map[string]any{"url": "https://preview.example.com/pricing", "client_request_id": "progress-0001"}), &sub)
	<-started
	// The stage writer stores "capturing 2/3" soon after the run starts;
	// wait for it so the first notification has something to say.
	for {
		var out struct {
			Job struct {
				Progress *struct{ Done int } `json:"progress"`
			} `json:"job"`
		}
		decodeInto(t, c.call(reviewmcp.ToolGet, map[string]any{"job_id": sub.Job.JobID, "view": "status", "wait_ms": 200}), &out)
		if out.Job.Progress != nil && out.Job.Progress.Done == 2 {
			break
		}
	}

	answer := make(chan *mcp.CallToolResult, 1)
	go func() {
		p := &mcp.CallToolParams{Name: reviewmcp.ToolGet, Arguments: map[string]any{"job_id": sub.Job.JobID, "view": "status", "wait_ms": 25000}}
		p.SetProgressToken("tok-wait-1")
		res, err := c.cs.CallTool(context.Background(), p)
		if err != nil {
			t.Error(err)
		}
		answer <- res
	}()
	select {
	case n := <-notes:
		if n.ProgressToken != "tok-wait-1" || n.Progress != 3 || n.Total != 6 || !strings.Contains(n.Message, "capturing: 2 of 3 captures") {
			t.Errorf("progress = %+v, want token tok-wait-1, 3 of 6, capturing 2 of 3", n)
		}
	case res := <-answer:
		t.Fatalf("answered before telling any progress, with the run still held: %s", mustJSON(res.StructuredContent))
	}
	close(gate)
	res := <-answer
	if res == nil {
		t.Fatal("no answer")
	}
	var out struct{ Job jobOut }
	decodeInto(t, res, &out)
	if out.Job.Status != "completed" {
		t.Errorf("waiting get answered %+v, want the completed job", out.Job)
	}
}
