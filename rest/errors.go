package rest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"

	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
)

// Codes only the HTTP transport produces: refusals about the request's
// shape that no Service can see. They share the envelope (and the status
// table) with the fault package's codes.
const (
	CodeNotFound             fault.Code = "NOT_FOUND"              // no such route
	CodeMethodNotAllowed     fault.Code = "METHOD_NOT_ALLOWED"     // the route exists for other methods
	CodeUnsupportedMediaType fault.Code = "UNSUPPORTED_MEDIA_TYPE" // a body that is not application/json
	CodeRequestTooLarge      fault.Code = "REQUEST_TOO_LARGE"      // a body over Options.MaxBodyBytes
)

// correlationHeader carries the request's correlation id on every answer;
// the error envelope repeats it.
const correlationHeader = "X-Correlation-Id"

// statusFor is the one table from fault code to HTTP status. ok is false for
// a code the table does not know (it is then answered as 500). Choices a
// reader might question:
//   - REVIEW_NOT_READY is 409 (the job's state conflicts with the request),
//     not 425, which RFC 8470 reserves for TLS early data.
//   - Target refusals (URL_NOT_ALLOWED, DNS_TARGET_PROHIBITED,
//     DNS_RESOLUTION_FAILED, DOMAIN_UNVERIFIED, REDIRECT_NOT_ALLOWED,
//     TARGET_UNCHANGED) are 422: the request is well-formed but its target
//     is refused. DNS_RESOLUTION_FAILED stays retriable in the body.
//   - RECHECK_LIMIT_REACHED joins RATE_LIMITED and BUDGET_EXHAUSTED at 429.
//   - A job's own failure codes (CAPTURE_FAILED, JUDGMENT_FAILED) reach a
//     client inside job.error; should one ever be returned for a request,
//     it is 502, as is an unavailable upstream.
func statusFor(c fault.Code) (status int, ok bool) {
	switch c {
	case fault.InvalidArgument:
		return http.StatusBadRequest, true
	case fault.AuthRequired:
		return http.StatusUnauthorized, true
	case fault.InsufficientScope:
		return http.StatusForbidden, true
	case fault.JobNotFound, fault.FindingNotFound, CodeNotFound:
		return http.StatusNotFound, true
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed, true
	case fault.IdempotencyConflict, fault.ReviewNotReady:
		return http.StatusConflict, true
	case fault.JobExpired:
		return http.StatusGone, true
	case CodeRequestTooLarge:
		return http.StatusRequestEntityTooLarge, true
	case CodeUnsupportedMediaType:
		return http.StatusUnsupportedMediaType, true
	case fault.URLNotAllowed, fault.DNSTargetProhibited, fault.DNSResolutionFailed, fault.DomainUnverified,
		fault.RedirectNotAllowed, fault.TargetUnchanged, fault.ResponseTooLarge:
		return http.StatusUnprocessableEntity, true
	case fault.RateLimited, fault.BudgetExhausted, fault.RecheckLimitReached:
		return http.StatusTooManyRequests, true
	case fault.CaptureFailed, fault.JudgmentFailed, fault.UpstreamUnavailable:
		return http.StatusBadGateway, true
	case fault.Unavailable:
		return http.StatusServiceUnavailable, true
	case fault.InternalError:
		return http.StatusInternalServerError, true
	}
	return http.StatusInternalServerError, false
}

// envelope is every error answer's body.
type envelope struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code          fault.Code       `json:"code"`
	Message       string           `json:"message"`
	Retriable     bool             `json:"retriable"`
	NextAction    fault.NextAction `json:"next_action"`
	RetryAfterMS  int64            `json:"retry_after_ms,omitempty"`
	CorrelationID string           `json:"correlation_id"`
}

func errNoPrincipal() *fault.Error {
	return fault.New(fault.AuthRequired, "a valid bearer token is required")
}

// fail renders err as the envelope. scope is the route's scope, named in a
// 403's step-up challenge.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, scope principal.Scope, cid string, err error) {
	fe := fault.From(err, "the request failed")
	status, known := statusFor(fe.Code)
	hdr := w.Header()
	switch fe.Code {
	case fault.AuthRequired:
		h.challenge(hdr, auth.ErrNoToken)
	case fault.InsufficientScope:
		h.challenge(hdr, &auth.InsufficientScopeError{Required: []principal.Scope{scope}})
	}
	if fe.RetryAfter > 0 {
		hdr.Set("Retry-After", strconv.FormatInt(int64(math.Ceil(fe.RetryAfter.Seconds())), 10))
	}
	level := slog.LevelInfo
	if status >= 500 || !known {
		level = slog.LevelError
	}
	attrs := []slog.Attr{
		slog.String("correlation_id", cid), slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.Int("status", status), slog.String("code", string(fe.Code)),
	}
	if cause := errors.Unwrap(fe); cause != nil {
		attrs = append(attrs, slog.String("cause", cause.Error()))
	}
	h.log.LogAttrs(r.Context(), level, "rest: request failed", attrs...)
	body := envelope{Error: errorBody{
		Code: fe.Code, Message: fe.Message, Retriable: fe.Retriable, NextAction: fe.NextAction, CorrelationID: cid,
	}}
	if fe.RetryAfter > 0 {
		body.Error.RetryAfterMS = max(1, fe.RetryAfter.Milliseconds())
	}
	writeJSON(w, status, body)
}

// challenge sets the RFC 6750 WWW-Authenticate header auth.Challenge would
// send for err; the body stays the envelope.
func (h *handler) challenge(dst http.Header, err error) {
	rec := headerRecorder{h: http.Header{}}
	auth.Challenge(&rec, h.opts.MetadataURL, err)
	if v := rec.h.Get("WWW-Authenticate"); v != "" {
		dst.Set("WWW-Authenticate", v)
	}
}

// unrouted answers a request no route matches with the status the mux would
// have given it (404, or 405 with Allow; a path-cleaning redirect passes
// through unchanged).
func (h *handler) unrouted(w http.ResponseWriter, r *http.Request) {
	hd, _ := h.mux.Handler(r)
	rec := headerRecorder{h: http.Header{}}
	hd.ServeHTTP(&rec, r)
	cid := newCorrelationID()
	w.Header().Set(correlationHeader, cid)
	switch rec.status {
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", rec.h.Get("Allow"))
		h.fail(w, r, "", cid, fault.New(CodeMethodNotAllowed, "%s is not allowed on this path", r.Method).WithNext(fault.None))
	case http.StatusMovedPermanently, http.StatusPermanentRedirect:
		w.Header().Set("Location", rec.h.Get("Location"))
		w.WriteHeader(rec.status)
	default:
		h.fail(w, r, "", cid, fault.New(CodeNotFound, "no such API route").WithNext(fault.None))
	}
}

// headerRecorder keeps what a handler writes to the header and status and
// discards the body.
type headerRecorder struct {
	h      http.Header
	status int
}

func (rec *headerRecorder) Header() http.Header { return rec.h }

func (rec *headerRecorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
}

func (rec *headerRecorder) Write(b []byte) (int, error) {
	rec.WriteHeader(http.StatusOK)
	return len(b), nil
}

// writeJSON writes v as the answer. A nil v writes no body (204).
func writeJSON(w http.ResponseWriter, status int, v any) {
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	if v == nil {
		w.WriteHeader(status)
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		// Only a bug reaches here (every answer is plain data); answer
		// with a fixed envelope rather than half a body.
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"INTERNAL_ERROR","message":"the answer could not be encoded","retriable":true,"next_action":"wait","correlation_id":` +
			strconv.Quote(hdr.Get(correlationHeader)) + `}}`)
	}
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// newCorrelationID returns "req_" and 16 random hex digits.
func newCorrelationID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "req_" + hex.EncodeToString(b[:])
}

// StatusFor is the HTTP status of fault code c, from the one table
// (statusFor): 500 for a code it does not know. Other HTTP adapters over
// review.Service (the engine job API) answer with it, so a code has one
// status everywhere.
func StatusFor(c fault.Code) int {
	st, _ := statusFor(c)
	return st
}
