// Package rest is bastion's REST API: JSON over HTTP under /api/v1, a thin
// adapter over the same review.Service the MCP tools use, plus a tenant's
// verified-targets registry. api/openapi.json documents every route and
// every member of every answer, and tests hold the routes, the Go wire types
// and real answers to it. Reviews and rechecks go out in wire.go's types,
// named as the MCP tools name them, never as the stored row does.
//
// Invariants:
//   - The handler holds no store handle and decides no authorization. Review
//     routes pass the caller's Principal to Service, which checks tenant,
//     ownership and scope; target routes pass it to Targets
//     (review.Targets, the one place target scopes are checked).
//   - The Principal comes only from the request context, put there by
//     auth.Middleware; no header (X-Forwarded-User, X-Tenant-Id, a second
//     Authorization…) is ever read for identity. A request without one is
//     401 before its body is read.
//   - Requests are JSON only (415 otherwise), at most Options.MaxBodyBytes
//     (413), decoded strictly: an unknown or repeated field is a 400
//     INVALID_ARGUMENT naming it, and the job, review and host a request
//     acts on come from the path, never the body.
//   - Every error is one envelope, {"error": {code, message, retriable,
//     next_action, retry_after_ms?, correlation_id}}, whose HTTP status is
//     chosen from its fault code by one table (statusFor). Messages are the
//     fault's client-safe ones; causes go to the log under the correlation
//     id.
//
// Evidence crops travel inline: GET /reviews/{job_id}?view=evidence returns
// each crop's bytes base64-encoded in "evidence", so a client needs no second
// authenticated fetch and there is no URL that serves page-derived bytes as a
// renderable image.
package rest

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/targets"
)

// Prefix is the path every route lives under.
const Prefix = "/api/v1"

// DefaultMaxBodyBytes caps a request body when Options.MaxBodyBytes is zero.
const DefaultMaxBodyBytes = 64 << 10

// Service is the review service as the REST API uses it; *review.Service
// implements it. Each method enforces tenant, ownership and scope itself.
type Service interface {
	Submit(ctx context.Context, p principal.Principal, in *review.SubmitParams) (*review.SubmitResult, error)
	Get(ctx context.Context, p principal.Principal, in *review.GetParams) (*review.GetResult, error)
	Recheck(ctx context.Context, p principal.Principal, in *review.RecheckParams) (*review.RecheckResult, error)
	Cancel(ctx context.Context, p principal.Principal, in *review.CancelParams) (*review.CancelResult, error)
	PanelAction(ctx context.Context, p principal.Principal, in *review.PanelActionParams) (*review.PanelActionResult, error)
	RecordFeedback(ctx context.Context, p principal.Principal, in *review.FeedbackParams) (*review.FeedbackResult, error)
}

// Targets is a principal-scoped view of the verified-targets registry: each
// method authorizes p (tenant and scope) before acting, as Service does for
// reviews. *review.Targets implements it.
type Targets interface {
	Add(ctx context.Context, p principal.Principal, host string) (targets.Challenge, error)
	Verify(ctx context.Context, p principal.Principal, host string) (targets.Target, error)
	List(ctx context.Context, p principal.Principal) ([]targets.Target, error)
	Remove(ctx context.Context, p principal.Principal, host string) error
}

// Options configures the handler. The zero value of each field means its
// default.
type Options struct {
	// MetadataURL is this resource's RFC 9728 metadata URL (see
	// auth.MetadataURL), named in the WWW-Authenticate challenge of 401 and
	// 403 answers. Empty omits resource_metadata.
	MetadataURL string
	// MaxBodyBytes caps a request body. Default DefaultMaxBodyBytes (64 KiB).
	MaxBodyBytes int64
	// Logger receives one line per failed request, with the fault's cause,
	// under the correlation id. Nil discards.
	Logger *slog.Logger
	// Now tells the time, to say whether a listed target's proof holds. Nil
	// means time.Now.
	Now func() time.Time
}

// handler serves the routes. It is safe for concurrent use: every field is
// fixed at creation.
type handler struct {
	svc  Service
	tg   Targets // or nil: target routes answer UNAVAILABLE
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux
}

// NewHandler returns the REST API handler. It expects auth.Middleware (or
// another authenticator that calls principal.NewContext) in front of it;
// without a principal in the context every route answers 401. svc is
// required; tg nil leaves the target routes answering 503 UNAVAILABLE.
func NewHandler(svc Service, tg Targets, o Options) http.Handler {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	h := &handler{svc: svc, tg: tg, opts: o, log: o.Logger, mux: http.NewServeMux()}
	if h.log == nil {
		h.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for _, rt := range routes() {
		h.mux.Handle(rt.method+" "+rt.pattern, h.serve(rt))
	}
	return h
}

// route is one operation. The table (routes) is the one list the mux, the
// OpenAPI test and the step-up challenges read.
type route struct {
	method  string
	pattern string // ServeMux path pattern, Prefix included
	// scope is the scope the operation needs. The Service (or Targets)
	// decides; the handler only names it in a 403's step-up challenge.
	scope   principal.Scope
	success int  // the status of a successful answer
	body    bool // a JSON body is required (else optional and may be empty)
	handle  func(h *handler, c *call) (any, error)
}

// call is one request on its way through a route.
type call struct {
	w    http.ResponseWriter
	r    *http.Request
	p    principal.Principal // valid
	body []byte              // the whole body, checked to be JSON if non-empty
}

// routes returns the route table.
func routes() []route {
	return []route{
		{http.MethodPost, Prefix + "/reviews", principal.ReviewsWrite, http.StatusAccepted, true, (*handler).submit},
		{http.MethodGet, Prefix + "/reviews/{job_id}", principal.ReviewsRead, http.StatusOK, false, (*handler).get},
		{http.MethodPost, Prefix + "/reviews/{review_id}/recheck", principal.ReviewsWrite, http.StatusAccepted, true, (*handler).recheck},
		{http.MethodPost, Prefix + "/reviews/{job_id}/cancel", principal.ReviewsCancel, http.StatusOK, false, (*handler).cancel},
		{http.MethodPost, Prefix + "/reviews/{job_id}/panel-action", principal.ReviewsRead, http.StatusOK, true, (*handler).panelAction},
		{http.MethodPost, Prefix + "/reviews/{review_id}/feedback", principal.ReviewsWrite, http.StatusOK, true, (*handler).feedback},
		{http.MethodGet, Prefix + "/targets", principal.ReviewsRead, http.StatusOK, false, (*handler).listTargets},
		{http.MethodPost, Prefix + "/targets", principal.TargetsWrite, http.StatusOK, true, (*handler).addTarget},
		{http.MethodPost, Prefix + "/targets/{host}/verify", principal.TargetsWrite, http.StatusOK, false, (*handler).verifyTarget},
		{http.MethodDelete, Prefix + "/targets/{host}", principal.TargetsWrite, http.StatusNoContent, false, (*handler).removeTarget},
	}
}

// ServeHTTP routes r. A request no route matches gets the error envelope
// with the mux's own verdict: 404, or 405 with Allow.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := h.mux.Handler(r); pattern == "" {
		h.unrouted(w, r)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// serve adapts one route: authentication presence, body cap, the operation,
// then the success or error rendering.
func (h *handler) serve(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cid := newCorrelationID()
		w.Header().Set(correlationHeader, cid)
		p, ok := principal.FromContext(r.Context())
		if !ok {
			h.fail(w, r, rt.scope, cid, errNoPrincipal())
			return
		}
		body, err := readBody(w, r, h.opts.MaxBodyBytes, rt.body)
		if err != nil {
			h.fail(w, r, rt.scope, cid, err)
			return
		}
		out, err := rt.handle(h, &call{w: w, r: r, p: p, body: body})
		if err != nil {
			h.fail(w, r, rt.scope, cid, err)
			return
		}
		writeJSON(w, rt.success, out)
	})
}
