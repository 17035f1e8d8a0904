package enginehttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/rest"
	"github.com/bastion-mcp/bastion/review"
)

// Service is the part of review.Service the job API adapts.
type Service interface {
	Submit(ctx context.Context, p principal.Principal, in *review.SubmitParams) (*review.SubmitResult, error)
	Get(ctx context.Context, p principal.Principal, in *review.GetParams) (*review.GetResult, error)
	Cancel(ctx context.Context, p principal.Principal, in *review.CancelParams) (*review.CancelResult, error)
}

// DefaultMaxBodyBytes bounds a POST /jobs body.
const DefaultMaxBodyBytes = 64 << 10

// principalID is every installation's principal id; its tenant is the
// installation id, so its jobs are its own (review.Service scopes jobs by
// tenant and principal) and its verified hosts are the tenant's.
const principalID = "engine-installation"

// Options configures NewHandler.
type Options struct {
	// Secrets returns the installations' secrets in force (required).
	Secrets func() *Secrets
	// Now is the clock for the skew window; nil means time.Now.
	Now func() time.Time
	// MaxBodyBytes bounds a request body; zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Ready are /readyz's checks; nil means always ready.
	Ready []func(context.Context) error
	// BaseURL is the server's own base URL (no trailing slash), where
	// artifact URLs point.
	BaseURL string
	// ArtifactTTL is how long an artifact URL works; zero means
	// DefaultArtifactTTL.
	ArtifactTTL time.Duration
	// Logger receives refusals (with their reason) and internal errors.
	Logger *slog.Logger
}

type handler struct {
	svc Service
	v   *Verifier
	o   Options
	log *slog.Logger
}

// NewHandler serves the job API over svc.
func NewHandler(svc Service, o Options) http.Handler {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.ArtifactTTL <= 0 {
		o.ArtifactTTL = DefaultArtifactTTL
	}
	h := &handler{svc: svc, v: &Verifier{Secrets: o.Secrets, Now: o.Now}, o: o, log: o.Logger}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /jobs", h.signed(h.submit))
	mux.HandleFunc("GET /jobs/{id}", h.signed(h.get))
	mux.HandleFunc("DELETE /jobs/{id}", h.signed(h.cancel))
	mux.HandleFunc("GET /readyz", h.readyz)
	mux.HandleFunc("GET /artifacts/{inst}/{job}/{evidence}", h.artifact)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not_found"})
	})
	return mux
}

// signed verifies the request's signature before next runs as the
// installation's principal. Every refusal but an oversized body is the same
// 401, so a caller learns nothing of why.
func (h *handler) signed(next func(http.ResponseWriter, *http.Request, principal.Principal, []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := ParseHeaders(r.Header)
		if err != nil {
			h.refuse(w, r, err)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.o.MaxBodyBytes))
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			writeJSON(w, http.StatusRequestEntityTooLarge, errBody(fault.New(fault.InvalidArgument, "the body is larger than %d bytes", h.o.MaxBodyBytes), "request_too_large"))
			return
		case err != nil:
			h.refuse(w, r, ErrUnsigned)
			return
		case r.Method != http.MethodPost && len(body) > 0:
			// §14 signs "" for GET and DELETE: a body would go unsigned.
			h.refuse(w, r, ErrUnsigned)
			return
		}
		inst, err := h.v.Verify(s, body)
		if errors.Is(err, ErrReplayFull) {
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "unavailable"})
			return
		}
		if err != nil {
			h.refuse(w, r, err)
			return
		}
		p, err := principal.New(inst, principalID, principal.ReviewsRead, principal.ReviewsWrite, principal.ReviewsCancel)
		if err != nil { // cannot happen: a valid installation id is a valid tenant
			h.refuse(w, r, err)
			return
		}
		next(w, r, p, body)
	}
}

func (h *handler) refuse(w http.ResponseWriter, r *http.Request, why error) {
	h.log.Info("enginehttp: request refused", "method", r.Method, "path", r.URL.Path, "reason", why.Error())
	writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized"})
}

// submitBody is POST /jobs's body (§14).
type submitBody struct {
	IdempotencyKey string       `json:"idempotencyKey"`
	Depth          string       `json:"depth"`
	Request        *wireRequest `json:"request"`
}

// wireRequest is the client's normalized review request.
type wireRequest struct {
	URL              string   `json:"url"`
	Routes           []string `json:"routes"`
	Viewports        []string `json:"viewports"`
	Depth            string   `json:"depth"`
	ExpectedRevision *string  `json:"expected_revision"`
	ResponseMode     string   `json:"response_mode"`
}

func (h *handler) submit(w http.ResponseWriter, r *http.Request, p principal.Principal, body []byte) {
	var in submitBody
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&in); err != nil || dec.More() || in.Request == nil {
		h.fail(w, fault.New(fault.InvalidArgument, "the body must be a JSON object {idempotencyKey, depth, request}"))
		return
	}
	rq := in.Request
	depth := in.Depth
	if depth == "" {
		depth = rq.Depth
	} else if rq.Depth != "" && rq.Depth != depth {
		h.fail(w, fault.New(fault.InvalidArgument, "depth: the body's and the request's differ"))
		return
	}
	params := &review.SubmitParams{
		URL: rq.URL, Routes: rq.Routes, Viewports: rq.Viewports, Depth: depth,
		ResponseMode: rq.ResponseMode, ClientRequestID: in.IdempotencyKey,
	}
	if rq.ExpectedRevision != nil {
		params.ExpectedRevision = *rq.ExpectedRevision
	}
	res, err := h.svc.Submit(r.Context(), p, params)
	if err != nil {
		h.fail(w, err)
		return
	}
	status := http.StatusAccepted
	if res.Job.Reused {
		status = http.StatusConflict // §14: a replayed key with the same request
	}
	writeJSON(w, status, map[string]string{"jobId": res.Job.JobID})
}

// jobRead is GET /jobs/{id}'s body.
type jobRead struct {
	JobID     string        `json:"jobId"`
	State     string        `json:"state"` // pending|running|cancelling|completed|failed
	Result    *EngineResult `json:"result,omitempty"`
	Error     string        `json:"error,omitempty"`     // a failed job's reason
	ErrorCode string        `json:"errorCode,omitempty"` // its fault code; CANCELLED for a cancelled job
}

func (h *handler) get(w http.ResponseWriter, r *http.Request, p principal.Principal, _ []byte) {
	g, err := h.svc.Get(r.Context(), p, &review.GetParams{JobID: r.PathValue("id"), View: review.ViewSummary})
	if err != nil {
		h.fail(w, err)
		return
	}
	out := jobRead{JobID: g.Job.JobID, State: stateOf(g.Job)}
	switch {
	case g.Job.Status == "cancelled":
		out.Error, out.ErrorCode = "the job was cancelled", "CANCELLED"
	case g.Job.Error != nil:
		out.Error, out.ErrorCode = g.Job.Error.Message, g.Job.Error.Code
	case out.State == "failed":
		out.Error, out.ErrorCode = "the job failed", string(fault.InternalError)
	}
	if out.State == "completed" {
		if g.Review == nil { // a recheck job: not submitted through this API
			h.fail(w, fault.New(fault.JobNotFound, "no such job"))
			return
		}
		out.Result = ResultOf(g.Job, g.Review)
		exp := h.now().Add(h.o.ArtifactTTL)
		if g.Job.ExpiresAt.Before(exp) {
			exp = g.Job.ExpiresAt
		}
		for _, f := range out.Result.Findings {
			if f.ScreenshotID != nil {
				if u := h.artifactURL(p.Tenant(), g.Job.JobID, *f.ScreenshotID, exp); u != "" {
					out.Result.Artifacts.AnnotatedScreenshots = append(out.Result.Artifacts.AnnotatedScreenshots, Screenshot{FindingID: f.ID, URL: u})
				}
			}
		}
		out.Result.Artifacts.PageOverviews = h.overviews(p.Tenant(), g.Job.JobID, g.Review.Overviews, exp)
	}
	w.Header().Set(HeaderSchemaVersion, SchemaVersion)
	writeJSON(w, http.StatusOK, out)
}

// overviews are a result's page overviews under signed artifact URLs.
func (h *handler) overviews(inst, job string, ovs []design.Overview, exp time.Time) []PageOverview {
	var out []PageOverview
	for _, o := range ovs {
		u := h.artifactURL(inst, job, o.EvidenceID, exp)
		if u == "" || o.EvidenceID == "" {
			continue
		}
		po := PageOverview{Route: o.Route, Viewport: o.Viewport, URL: u, Scale: o.Scale, Width: o.Width, Height: o.Height, Marks: []OverviewMark{}}
		for _, m := range o.Marks {
			po.Marks = append(po.Marks, OverviewMark{N: m.N, FindingID: m.FindingID, X: m.Box.X, Y: m.Box.Y, Width: m.Box.W, Height: m.Box.H})
		}
		out = append(out, po)
	}
	return out
}

// stateOf maps a review job's status onto §14's states. A cancelled job is
// failed (the API has no cancelled state), with errorCode CANCELLED.
func stateOf(j review.Job) string {
	switch j.Status {
	case "queued":
		return "pending"
	case "running":
		if j.Stage == "cancelling" {
			return "cancelling"
		}
		return "running"
	case "completed":
		return "completed"
	}
	return "failed"
}

func (h *handler) cancel(w http.ResponseWriter, r *http.Request, p principal.Principal, _ []byte) {
	res, err := h.svc.Cancel(r.Context(), p, &review.CancelParams{JobID: r.PathValue("id"), Reason: "cancelled through the engine job API"})
	if err != nil {
		h.fail(w, err)
		return
	}
	accepted := res.UpstreamCancellation != review.UpstreamAlreadyTerminal
	writeJSON(w, http.StatusOK, map[string]any{"cancelling": accepted, "state": stateOf(review.Job{Status: res.Status})})
}

func (h *handler) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	for _, check := range h.o.Ready {
		if err := check(ctx); err != nil {
			h.log.Warn("enginehttp: not ready", "err", err)
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// fail answers a Service error with its status from rest's one table and
// the §14 body: "error" is the lower-case code (idempotency_conflict for a
// key reused with a different request), with the fault's fields beside it.
func (h *handler) fail(w http.ResponseWriter, err error) {
	e, ok := fault.As(err)
	if !ok || e.Code == fault.InternalError {
		h.log.Error("enginehttp: internal error", "err", err)
		e = fault.New(fault.InternalError, "the request could not be completed")
	}
	writeJSON(w, rest.StatusFor(e.Code), errBody(e, strings.ToLower(string(e.Code))))
}

func errBody(e *fault.Error, short string) map[string]any {
	return map[string]any{"error": short, "code": e.Code, "message": e.Message, "retriable": e.Retriable, "next_action": e.NextAction}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
