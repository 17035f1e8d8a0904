package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/bastion-mcp/bastion/enginehttp"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/internal/clip"
)

// §14's client rules: each request bounded by RequestTimeout; 429 and 503
// retried up to maxRetries times, waiting Retry-After seconds (capped) or
// else min(250ms·2^attempt, 2s); a fresh timestamp and signature each time.
const (
	maxRetries      = 2
	maxRetryAfter   = 30 * time.Second
	maxResponseBody = 16 << 20 // a completed job read carries the whole result
)

// peer is one engine of the pool. Its URL goes to logs only: a caller sees
// "engine N", never an internal address.
type peer struct {
	n      int    // 1-based, for messages
	base   string // scheme://host[:port][/path], no trailing slash
	origin string // scheme://host[:port], where its artifacts must live

	mu        sync.Mutex // guards inFlight and downUntil; never held across I/O
	inFlight  int
	downUntil time.Time
}

func (p *peer) String() string { return "engine " + strconv.Itoa(p.n) }

// signer signs requests as one installation. Timestamps only go up: two
// bodiless requests signed in one millisecond would carry the same
// signature, which the server refuses as a replay.
type signer struct {
	installation string
	secret       []byte
	now          func() time.Time

	mu   sync.Mutex
	last int64
}

func (s *signer) sign(h http.Header, body []byte) {
	s.mu.Lock()
	s.last = max(s.now().UnixMilli(), s.last+1)
	ts := strconv.FormatInt(s.last, 10)
	s.mu.Unlock()
	h.Set("Content-Type", "application/json")
	h.Set(enginehttp.HeaderInstallation, s.installation)
	h.Set(enginehttp.HeaderTimestamp, ts)
	h.Set(enginehttp.HeaderSignature, enginehttp.Sign(s.secret, ts, s.installation, body))
}

// errDown marks a failure of the engine itself (unreachable, a 5xx, a
// response that is not the protocol's): the job may go to another engine.
type errDown struct {
	p   *peer
	err error
}

func (e *errDown) Error() string { return e.p.String() + ": " + e.err.Error() }
func (e *errDown) Unwrap() error { return e.err }

// call sends one signed request to p and decodes a JSON answer into out,
// retrying 429 and 503 as §14 says. It returns the status, or an error: a
// *fault.Error for a refusal the caller cannot fix by moving engines, an
// *errDown for a failing engine, or ctx's error.
func (e *Engine) call(ctx context.Context, p *peer, method, path string, body []byte, out any) (int, http.Header, error) {
	for attempt := 0; ; attempt++ {
		st, hdr, raw, err := e.once(ctx, p, method, path, body)
		if err != nil {
			if ctx.Err() != nil {
				return 0, nil, ctx.Err()
			}
			return 0, nil, &errDown{p, err}
		}
		if (st == http.StatusTooManyRequests || st == http.StatusServiceUnavailable) && attempt < maxRetries {
			if err := sleep(ctx, retryDelay(hdr, attempt)); err != nil {
				return 0, nil, err
			}
			continue
		}
		switch {
		case st == http.StatusUnauthorized:
			return st, hdr, e.refused(p, hdr)
		case st == http.StatusTooManyRequests || st == http.StatusServiceUnavailable || st >= 500:
			return st, hdr, &errDown{p, fmt.Errorf("%s %s: status %d", method, path, st)}
		}
		if out != nil && len(raw) > 0 {
			if err := json.Unmarshal(raw, out); err != nil {
				return st, hdr, &errDown{p, fmt.Errorf("%s %s: status %d with a body that is not JSON: %w", method, path, st, err)}
			}
		}
		return st, hdr, nil
	}
}

// once is one attempt, signed afresh, bounded by the request timeout.
func (e *Engine) once(ctx context.Context, p *peer, method, path string, body []byte) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, e.o.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	signed := body
	if method != http.MethodPost {
		signed = nil // §14: GET and DELETE sign ""
		req.Body, req.ContentLength = http.NoBody, 0
	}
	e.signer.sign(req.Header, signed)
	res, err := e.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxResponseBody+1))
	if err != nil {
		return 0, nil, nil, err
	}
	if len(raw) > maxResponseBody {
		return 0, nil, nil, fmt.Errorf("%s %s: the response is larger than %d bytes", method, path, maxResponseBody)
	}
	return res.StatusCode, res.Header, raw, nil
}

// refused is the typed error for a 401. The engine answers every refusal
// alike, so the client tells a skewed clock (the answer's Date header
// more than enginehttp.MaxSkew from this host's clock) from the rest
// (wrong secret, unknown installation).
func (e *Engine) refused(p *peer, hdr http.Header) error {
	if d, err := http.ParseTime(hdr.Get("Date")); err == nil {
		if skew := e.o.Now().Sub(d); skew > enginehttp.MaxSkew || skew < -enginehttp.MaxSkew {
			return &fault.Error{Code: fault.UpstreamUnavailable, NextAction: fault.ContactSupport, Message: fmt.Sprintf(
				"%s refused the request: this server's clock is %s off the engine's, outside the %s window the signature allows; fix the clocks (NTP)",
				p, skew.Round(time.Second), enginehttp.MaxSkew)}
		}
	}
	return &fault.Error{Code: fault.UpstreamUnavailable, NextAction: fault.ContactSupport, Message: fmt.Sprintf(
		"%s refused bastion's signature: the engine secret or installation id does not match the engine's secrets file", p)}
}

// retryDelay is how long to wait before retry attempt+1.
func retryDelay(h http.Header, attempt int) time.Duration {
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s >= 0 {
		return min(time.Duration(s)*time.Second, maxRetryAfter)
	}
	return min(250*time.Millisecond<<attempt, 2*time.Second)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// submitBody is POST /jobs's body (§14).
type submitBody struct {
	IdempotencyKey string      `json:"idempotencyKey"`
	Depth          string      `json:"depth"`
	Request        wireRequest `json:"request"`
}

type wireRequest struct {
	URL       string   `json:"url"`
	Routes    []string `json:"routes"`
	Viewports []string `json:"viewports"`
	Depth     string   `json:"depth"`
}

// jobRead is GET /jobs/{id}'s body.
type jobRead struct {
	JobID     string                   `json:"jobId"`
	State     string                   `json:"state"`
	Result    *enginehttp.EngineResult `json:"result"`
	Error     string                   `json:"error"`
	ErrorCode string                   `json:"errorCode"`
	// Code and Message are an error answer's fields.
	Code    fault.Code `json:"code"`
	Message string     `json:"message"`
}

// submit posts the job and returns its id. A 409 with a jobId is the same
// job (a retried submit whose first answer was lost).
func (e *Engine) submit(ctx context.Context, p *peer, b *submitBody) (string, error) {
	raw, err := json.Marshal(b)
	if err != nil {
		return "", err
	}
	var out jobRead
	st, _, err := e.call(ctx, p, http.MethodPost, "/jobs", raw, &out)
	switch {
	case err != nil:
		return "", err
	case (st == http.StatusAccepted || st == http.StatusConflict) && out.JobID != "":
		return out.JobID, nil
	case st >= 400 && st < 500:
		return "", rejected(p, st, &out)
	}
	return "", &errDown{p, fmt.Errorf("POST /jobs: status %d without a jobId", st)}
}

// poll reads the job once.
func (e *Engine) poll(ctx context.Context, p *peer, id string) (*jobRead, error) {
	var out jobRead
	st, hdr, err := e.call(ctx, p, http.MethodGet, "/jobs/"+url.PathEscape(id), nil, &out)
	switch {
	case err != nil:
		return nil, err
	case st == http.StatusNotFound:
		// The job is gone from the engine that took it (a fresh store):
		// it may run again elsewhere.
		return nil, &errDown{p, errors.New("the job is no longer known to the engine")}
	case st != http.StatusOK:
		return nil, rejected(p, st, &out)
	case hdr.Get(enginehttp.HeaderSchemaVersion) != enginehttp.SchemaVersion:
		// §14: fail closed on a schema this client does not speak.
		return nil, fault.New(fault.UpstreamUnavailable, "%s answers schema version %q; bastion speaks %s", p, clip.String(hdr.Get(enginehttp.HeaderSchemaVersion), maxEngineText), enginehttp.SchemaVersion).WithNext(fault.ContactSupport)
	}
	return &out, nil
}

// cancel asks the engine to stop the job, best effort: ctx has usually
// ended, so it runs on a context of its own.
func (e *Engine) cancel(ctx context.Context, p *peer, id string) {
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), e.o.RequestTimeout)
	defer stop()
	if _, _, err := e.call(ctx, p, http.MethodDelete, "/jobs/"+url.PathEscape(id), nil, nil); err != nil {
		e.log.Warn("remote: cancelling a job failed", "engine", p.base, "job", id, "err", err)
	}
}

// abandon cancels a job whose submission the caller's context cut short.
// The engine may have taken the job before the answer naming it arrived,
// so the id is learnt by submitting again under the same idempotency key
// (§14: a replay answers 409 with the job's id) and that job is DELETEd;
// without this an engine would run a review nobody waits for.
func (e *Engine) abandon(ctx context.Context, p *peer, b *submitBody) {
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), e.o.RequestTimeout)
	defer stop()
	id, err := e.submit(ctx, p, b)
	if err != nil {
		e.log.Warn("remote: finding a cancelled submission's job failed", "engine", p.base, "err", err)
		return
	}
	e.cancel(ctx, p, id)
}

// rejected is the typed error for a 4xx answer to a well-signed request:
// the engine's own fault code when it sent one (its message is about the
// request, not about the engine's insides), else INVALID_ARGUMENT.
func rejected(p *peer, st int, out *jobRead) error {
	if out.Code != "" {
		return fault.New(engineCode(out.Code, fault.InvalidArgument), "%s: %s", p, clip.String(out.Message, maxEngineText))
	}
	return fault.New(fault.InvalidArgument, "%s refused the request (status %d)", p, st)
}

// maxEngineText bounds a string an engine sent before a caller sees it.
const maxEngineText = 300
