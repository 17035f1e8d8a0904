package rest

import (
	"net/url"
	"strconv"
	"time"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/store"
)

// idempotencyHeader names the request's idempotency key as a header; it
// and the body's client_request_id are one value, so they must agree.
const idempotencyHeader = "Idempotency-Key"

// idempotencyKey merges the Idempotency-Key header into body's key.
func idempotencyKey(c *call, body string) (string, error) {
	hs := c.r.Header.Values(idempotencyHeader)
	switch {
	case len(hs) > 1:
		return "", fault.New(fault.InvalidArgument, "send at most one %s header", idempotencyHeader)
	case len(hs) == 0:
		return body, nil
	case body != "" && body != hs[0]:
		return "", fault.New(fault.InvalidArgument, "the %s header and client_request_id differ", idempotencyHeader)
	}
	return hs[0], nil
}

// submit is POST /reviews.
func (h *handler) submit(c *call) (any, error) {
	var in review.SubmitParams
	if err := decodeJSON(c.body, &in); err != nil {
		return nil, err
	}
	key, err := idempotencyKey(c, in.ClientRequestID)
	if err != nil {
		return nil, err
	}
	in.ClientRequestID = key
	out, err := h.svc.Submit(c.r.Context(), c.p, &in)
	if err != nil {
		return nil, err
	}
	c.w.Header().Set("Location", Prefix+"/reviews/"+url.PathEscape(out.Job.JobID))
	return out, nil
}

// get is GET /reviews/{job_id}?view=.
func (h *handler) get(c *call) (any, error) {
	if err := decodeJSON(c.body, &struct{}{}); err != nil {
		return nil, err
	}
	q := c.r.URL.Query()
	for k, vs := range q {
		if k != "view" && k != "wait" {
			return nil, fault.New(fault.InvalidArgument, "unknown query parameter %q", echo(k))
		}
		if len(vs) > 1 {
			return nil, fault.New(fault.InvalidArgument, "%s: give it at most once", k)
		}
	}
	wait, err := waitParam(q.Get("wait"))
	if err != nil {
		return nil, err
	}
	in := &review.GetParams{JobID: c.r.PathValue("job_id"), View: review.View(q.Get("view")), WaitMS: wait}
	out, err := h.svc.Get(c.r.Context(), c.p, in)
	if err != nil {
		return nil, err
	}
	return getOf(out, in.View), nil
}

// waitParam reads ?wait=: a duration ("20s", "500ms") or a bare number of
// milliseconds, as the MCP tool's wait_ms. Bounds are review.Get's.
func waitParam(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fault.New(fault.InvalidArgument, "wait: give a duration such as 20s or a number of milliseconds")
	}
	return d.Milliseconds(), nil
}

// recheckBody is POST /reviews/{review_id}/recheck's body: RecheckParams
// without the review id, which the path names.
type recheckBody struct {
	FindingIDs       []string `json:"finding_ids"`
	URL              string   `json:"url,omitempty"`
	ExpectedRevision string   `json:"expected_revision,omitempty"`
	ClientRequestID  string   `json:"client_request_id,omitempty"`
}

// recheck is POST /reviews/{review_id}/recheck.
func (h *handler) recheck(c *call) (any, error) {
	var in recheckBody
	if err := decodeJSON(c.body, &in); err != nil {
		return nil, err
	}
	key, err := idempotencyKey(c, in.ClientRequestID)
	if err != nil {
		return nil, err
	}
	out, err := h.svc.Recheck(c.r.Context(), c.p, &review.RecheckParams{
		ReviewID: c.r.PathValue("review_id"), FindingIDs: in.FindingIDs, URL: in.URL,
		ExpectedRevision: in.ExpectedRevision, ClientRequestID: key,
	})
	if err != nil {
		return nil, err
	}
	c.w.Header().Set("Location", Prefix+"/reviews/"+url.PathEscape(out.Job.JobID))
	return recheckResponseOf(out), nil
}

// cancelBody is POST /reviews/{job_id}/cancel's optional body.
type cancelBody struct {
	Reason string `json:"reason,omitempty"`
}

// cancel is POST /reviews/{job_id}/cancel.
func (h *handler) cancel(c *call) (any, error) {
	var in cancelBody
	if err := decodeJSON(c.body, &in); err != nil {
		return nil, err
	}
	return h.svc.Cancel(c.r.Context(), c.p, &review.CancelParams{JobID: c.r.PathValue("job_id"), Reason: in.Reason})
}

// panelBody is POST /reviews/{job_id}/panel-action's body.
type panelBody struct {
	Action    review.PanelActionKind `json:"action"`
	FindingID string                 `json:"finding_id,omitempty"`
}

// panelAction is POST /reviews/{job_id}/panel-action.
func (h *handler) panelAction(c *call) (any, error) {
	var in panelBody
	if err := decodeJSON(c.body, &in); err != nil {
		return nil, err
	}
	return h.svc.PanelAction(c.r.Context(), c.p, &review.PanelActionParams{JobID: c.r.PathValue("job_id"), Action: in.Action, FindingID: in.FindingID})
}

// feedbackBody is POST /reviews/{review_id}/feedback's body.
type feedbackBody struct {
	FindingID string        `json:"finding_id"`
	Verdict   store.Verdict `json:"verdict"`
	Reason    string        `json:"reason,omitempty"`
}

// feedback is POST /reviews/{review_id}/feedback.
func (h *handler) feedback(c *call) (any, error) {
	var in feedbackBody
	if err := decodeJSON(c.body, &in); err != nil {
		return nil, err
	}
	return h.svc.RecordFeedback(c.r.Context(), c.p, &review.FeedbackParams{ReviewID: c.r.PathValue("review_id"),
		FindingID: in.FindingID, Verdict: in.Verdict, Reason: in.Reason})
}
