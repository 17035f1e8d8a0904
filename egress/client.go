package egress

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/bastion-mcp/bastion/fault"
)

// ClientOptions bound a guarded HTTP client. The zero value means defaults.
type ClientOptions struct {
	// MaxBytes caps a response body; reading past it fails with
	// RESPONSE_TOO_LARGE. Zero means 1 MiB.
	MaxBytes int64
	// Timeout caps a whole exchange, redirects and body included. Zero means 10s.
	Timeout time.Duration
	// MaxRedirects is how many redirects are followed, at most 5. Zero means
	// 5; negative means none.
	MaxRedirects int
}

const (
	defaultMaxBytes     = 1 << 20
	defaultTimeout      = 10 * time.Second
	defaultMaxRedirects = 5
)

// HTTPClient returns an http.Client whose every request, the first and each
// redirect hop, passes Check (scheme, userinfo, host, port, address), whose
// connections are dialed by DialContext to the address Check pinned, which
// never uses a proxy from the environment, and whose response bodies are
// capped in size and time.
func (g *Guard) HTTPClient(o ClientOptions) *http.Client {
	if o.MaxBytes <= 0 {
		o.MaxBytes = defaultMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	switch {
	case o.MaxRedirects == 0 || o.MaxRedirects > defaultMaxRedirects:
		o.MaxRedirects = defaultMaxRedirects
	case o.MaxRedirects < 0:
		o.MaxRedirects = 0
	}
	base := &http.Transport{
		Proxy:             nil, // never HTTP_PROXY and friends
		DialContext:       g.DialContext,
		ForceAttemptHTTP2: true,
		MaxIdleConns:      32,
		// An HTTP upstream is one host taking many concurrent calls; at
		// Go's default of 2 idle connections per host most would be closed
		// after each response and dialed (and checked) again.
		MaxIdleConnsPerHost:    16,
		IdleConnTimeout:        60 * time.Second,
		TLSHandshakeTimeout:    o.Timeout,
		ResponseHeaderTimeout:  o.Timeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	maxRedirects := o.MaxRedirects
	return &http.Client{
		Transport: &guardedTransport{guard: g, base: base, maxBytes: o.MaxBytes},
		Timeout:   o.Timeout,
		CheckRedirect: func(_ *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fault.New(fault.RedirectNotAllowed, "more than %d redirects", maxRedirects)
			}
			return nil // the transport checks the hop itself
		},
	}
}

// guardedTransport checks every request's URL and hands the pinned Target to
// DialContext through the request context.
type guardedTransport struct {
	guard    *Guard
	base     http.RoundTripper
	maxBytes int64
}

func (t *guardedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	target, err := t.guard.Check(req.Context(), req.URL.String())
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	req = req.WithContext(context.WithValue(req.Context(), pinKey{}, target))
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > t.maxBytes {
		resp.Body.Close()
		return nil, fault.New(fault.ResponseTooLarge, "the response is larger than %d bytes", t.maxBytes)
	}
	resp.Body = &cappedBody{rc: resp.Body, left: t.maxBytes, limit: t.maxBytes}
	return resp, nil
}

// cappedBody fails with RESPONSE_TOO_LARGE once more than its budget is read.
type cappedBody struct {
	rc    io.ReadCloser
	left  int64 // bytes still allowed; -1 once the cap is exceeded
	limit int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errTooLarge(b.limit)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte past the cap tells "too large" from "exactly full"
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n - int(-b.left), errTooLarge(b.limit)
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

func errTooLarge(limit int64) error {
	return fault.New(fault.ResponseTooLarge, "the response is larger than %d bytes", limit)
}
