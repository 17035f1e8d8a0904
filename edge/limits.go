package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bastion-mcp/bastion/principal"
)

// rejection is a counted reason for refusing a request; its string is the
// reason label of bastion_edge_rejections_total.
type rejection string

const (
	reasonDisabled       rejection = "mcp_disabled"
	reasonAgentAccess    rejection = "agent_access_off"
	reasonForwarded      rejection = "forwarded_rejected"
	reasonHost           rejection = "host_not_allowed"
	reasonOrigin         rejection = "origin_not_allowed"
	reasonNoPrincipal    rejection = "unauthenticated"
	reasonAuth           rejection = "auth_refused"  // Authenticate answered (401, 403, 400, 503) instead of passing the request on
	reasonNotPermitted   rejection = "not_permitted" // Permit refused the request (e.g. a method's scope policy)
	reasonMediaType      rejection = "unsupported_media_type"
	reasonTooLargeDecl   rejection = "body_too_large_declared"
	reasonTooLargeStream rejection = "body_too_large_streamed"
	reasonBodyTimeout    rejection = "body_timeout"
	reasonBodyRead       rejection = "body_read_failed"
	reasonInvalidJSON    rejection = "invalid_json"
	reasonInFlight       rejection = "in_flight_saturated"
	reasonGlobal         rejection = "global_saturated"
	reasonUnknownSession rejection = "unknown_session"
	reasonSessionOwner   rejection = "session_owner_mismatch"
	reasonDraining       rejection = "draining"
	reasonInternal       rejection = "internal_error"
)

// allReasons lists every reason so each counter exists (at zero) from start.
var allReasons = []rejection{
	reasonDisabled, reasonAgentAccess, reasonForwarded, reasonHost, reasonOrigin,
	reasonNoPrincipal, reasonAuth, reasonNotPermitted, reasonMediaType, reasonTooLargeDecl, reasonTooLargeStream,
	reasonBodyTimeout, reasonBodyRead, reasonInvalidJSON, reasonInFlight, reasonGlobal,
	reasonUnknownSession, reasonSessionOwner, reasonDraining, reasonInternal,
}

// parseError is the JSON-RPC parse error; it never echoes the input.
var parseError = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)

// reject counts reason, reports it to Options.Rejected, and writes its
// response. The observer runs before the response is written, so a client
// that has its refusal can rely on the refusal being recorded.
func (e *Edge) reject(w http.ResponseWriter, r *http.Request, reason rejection) {
	status, body := reason.response()
	e.count(r, status, reason)
	noteRejection(w, reason)
	h := w.Header()
	switch reason {
	case reasonMediaType, reasonTooLargeDecl, reasonTooLargeStream, reasonBodyTimeout, reasonBodyRead:
		h.Set("Connection", "close")
	case reasonInFlight, reasonGlobal:
		h.Set("Retry-After", "1")
	case reasonDraining:
		h.Set("Retry-After", "1")
		h.Set("Connection", "close")
	}
	if reason == reasonInvalidJSON {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(parseError)
		return
	}
	writeJSON(w, status, body)
}

// count counts reason and reports it to the observer, if any.
func (e *Edge) count(r *http.Request, status int, reason rejection) {
	e.metrics.rejections.WithLabelValues(string(reason)).Inc()
	if e.opts.Rejected != nil {
		e.opts.Rejected(r.Context(), r, status, string(reason))
	}
}

// response is the status and JSON body the edge answers reason with. The
// body is fixed per reason: input is never echoed.
func (reason rejection) response() (int, map[string]any) {
	switch reason {
	case reasonDisabled, reasonAgentAccess:
		return http.StatusNotFound, map[string]any{"error": "not_found"}
	case reasonForwarded:
		return http.StatusForbidden, map[string]any{"error": "forbidden", "error_description": "forwarded requests are not accepted"}
	case reasonHost:
		return http.StatusForbidden, map[string]any{"error": "forbidden", "error_description": "host not allowed"}
	case reasonOrigin:
		return http.StatusForbidden, map[string]any{"error": "forbidden", "error_description": "origin not allowed"}
	case reasonNotPermitted:
		return http.StatusForbidden, map[string]any{"error": "forbidden"}
	case reasonNoPrincipal:
		return http.StatusUnauthorized, map[string]any{"error": "unauthorized", "error_description": "a valid bearer access token is required"}
	case reasonMediaType:
		return http.StatusUnsupportedMediaType, map[string]any{"error": "unsupported_media_type", "error_description": "POST requires application/json"}
	case reasonTooLargeDecl, reasonTooLargeStream:
		return http.StatusRequestEntityTooLarge, map[string]any{"error": "payload_too_large"}
	case reasonBodyTimeout:
		return http.StatusRequestTimeout, map[string]any{"error": "request_timeout"}
	case reasonBodyRead:
		return http.StatusBadRequest, map[string]any{"error": "bad_request"}
	case reasonInvalidJSON:
		return http.StatusBadRequest, nil // parseError
	case reasonInFlight:
		return http.StatusTooManyRequests, map[string]any{"error": "too_many_requests", "error_description": "too many in-flight requests"}
	case reasonGlobal:
		return http.StatusServiceUnavailable, map[string]any{"error": "server_busy", "error_description": "too many in-flight requests"}
	case reasonDraining:
		return http.StatusServiceUnavailable, map[string]any{"error": "unavailable", "error_description": "server is shutting down"}
	case reasonUnknownSession, reasonSessionOwner:
		return http.StatusNotFound, map[string]any{"error": "unknown_session"}
	}
	return http.StatusInternalServerError, map[string]any{"error": "internal_error"}
}

// heldResponse holds what an authenticator writes until the edge knows
// whether it refused the request: a refusal is counted and reported before
// the client sees it, like the edge's own. Refusals are a challenge of a
// few hundred bytes; past maxHeld the rest is dropped rather than buffered.
type heldResponse struct {
	header http.Header
	status int
	body   []byte
}

const maxHeld = 64 << 10

func (h *heldResponse) Header() http.Header { return h.header }

func (h *heldResponse) WriteHeader(code int) {
	if h.status == 0 {
		h.status = code
	}
}

func (h *heldResponse) Write(b []byte) (int, error) {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	if room := maxHeld - len(h.body); room > 0 {
		h.body = append(h.body, b[:min(len(b), room)]...)
	}
	return len(b), nil
}

// flush sends the held response to w (whose Header is h.header).
func (h *heldResponse) flush(w http.ResponseWriter) {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	w.WriteHeader(h.status)
	_, _ = w.Write(h.body)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"internal_error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }

// jsonMediaType reports the base media type if it is application/json or an
// application/*+json type.
func jsonMediaType(ct string) (string, bool) {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", false
	}
	if mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
		return mt, true
	}
	return "", false
}

// readBody reads the whole POST body within the size and time limits and
// checks it is UTF-8 JSON. It replaces r.Body with the bytes read.
func (e *Edge) readBody(w http.ResponseWriter, r *http.Request) ([]byte, rejection) {
	max := e.opts.MaxBodyBytes
	if r.ContentLength > max {
		return nil, reasonTooLargeDecl
	}
	// On a real connection the read deadline makes a stalled read return, so
	// the body is read on this goroutine. Where deadlines are unsupported (an
	// in-process ResponseWriter) a reader goroutine and a timer answer on
	// time instead; that costs a goroutine, a channel and a timer per
	// request, so it is only the fallback.
	type result struct {
		b   []byte
		err error
	}
	var res result
	body := r.Body
	if http.NewResponseController(w).SetReadDeadline(time.Now().Add(e.opts.BodyTimeout)) == nil {
		res.b, res.err = io.ReadAll(io.LimitReader(body, max+1))
	} else {
		done := make(chan result, 1)
		go func() {
			b, err := io.ReadAll(io.LimitReader(body, max+1))
			done <- result{b, err}
		}()
		t := time.NewTimer(e.opts.BodyTimeout)
		defer t.Stop()
		select {
		case res = <-done:
		case <-t.C:
			_ = body.Close()
			return nil, reasonBodyTimeout
		}
	}
	if res.err != nil {
		if isTimeout(res.err) {
			return nil, reasonBodyTimeout
		}
		return nil, reasonBodyRead
	}
	if int64(len(res.b)) > max {
		return nil, reasonTooLargeStream
	}
	if !utf8.Valid(res.b) || !json.Valid(res.b) {
		return nil, reasonInvalidJSON
	}
	// The SDK reads the body once and nothing writes to res.b: no copy.
	r.Body = io.NopCloser(bytes.NewReader(res.b))
	r.ContentLength = int64(len(res.b))
	return res.b, ""
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// inflight counts calls (every method but GET) per principal and overall,
// and every request for draining. A GET is a standalone SSE stream: it lives
// as long as its session, so counting it against the call limits would let a
// client's idle streams starve its calls; streams are bounded by sessions
// (one per session, closed with it after SessionTimeout idle) instead.
type inflight struct {
	perPrincipal, global int                           // fixed at init
	limitFor             func(principal.Principal) int // Options.InFlightLimit, or nil

	mu     sync.Mutex
	byKey  map[string]int // calls in flight per principal
	total  int            // all requests in flight, streams included
	calls  int            // calls in flight
	change chan struct{}  // closed and replaced whenever total or calls drops
}

func (f *inflight) init(perPrincipal, global int, limitFor func(principal.Principal) int) {
	f.perPrincipal, f.global, f.limitFor = perPrincipal, global, limitFor
	f.byKey = make(map[string]int)
	f.change = make(chan struct{})
}

func key(p principal.Principal) string { return p.Tenant() + "\x00" + p.ID() }

// limit is p's bound on calls in flight.
func (f *inflight) limit(p principal.Principal) int {
	if f.limitFor != nil {
		if n := f.limitFor(p); n > 0 {
			return min(n, MaxInFlightPerPrincipalCap)
		}
	}
	return f.perPrincipal
}

func (f *inflight) acquire(p principal.Principal, call bool) (release func(), reason rejection) {
	k := key(p)
	limit := f.perPrincipal
	if call {
		limit = f.limit(p) // outside mu: the callback is the caller's code
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if call {
		if f.byKey[k] >= limit {
			return nil, reasonInFlight
		}
		if f.calls >= f.global {
			return nil, reasonGlobal
		}
		f.byKey[k]++
		f.calls++
	}
	f.total++
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if call {
				if f.byKey[k]--; f.byKey[k] == 0 {
					delete(f.byKey, k)
				}
				f.calls--
			}
			f.total--
			close(f.change)
			f.change = make(chan struct{})
		})
	}, ""
}

func (f *inflight) snapshot() (total, calls int, change <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.total, f.calls, f.change
}

func (f *inflight) waitCalls(ctx context.Context) error {
	return f.wait(ctx, func(_, calls int) bool { return calls == 0 })
}

func (f *inflight) waitAll(ctx context.Context) error {
	return f.wait(ctx, func(total, _ int) bool { return total == 0 })
}

func (f *inflight) wait(ctx context.Context, done func(total, calls int) bool) error {
	for {
		total, calls, change := f.snapshot()
		if done(total, calls) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-change:
		}
	}
}
