package upstream

import (
	"context"
	"net/http"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/fault"
)

// httpDialer checks the URL once and returns the per-session dialer. Every
// connection of the upstream is dialed by the egress guard.
func (c *Conn) httpDialer() (func(context.Context) (mcp.Transport, error), error) {
	if c.deps.Guard == nil {
		return nil, fault.New(fault.InvalidArgument, "upstream %s: an HTTP upstream needs the egress guard", c.spec.Name)
	}
	u, err := url.Parse(c.spec.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, fault.New(fault.InvalidArgument, "upstream %s needs an http(s) URL without credentials", c.spec.Name)
	}
	return func(context.Context) (mcp.Transport, error) {
		headers, err := c.resolve("header", c.spec.Headers)
		if err != nil {
			return nil, err
		}
		hc := c.deps.Guard.HTTPClient(egress.ClientOptions{
			MaxBytes: c.spec.MaxResponseBytes,
			// Bounds the wait for response headers; a Streamable HTTP
			// server may hold them until a slow tool answers.
			Timeout:      c.spec.Timeout + c.spec.ConnectTimeout,
			MaxRedirects: -1, // an MCP endpoint does not move; a redirect is refused
		})
		// Event streams live as long as the session; each call is bounded
		// by its own context instead.
		hc.Timeout = 0
		hc.Transport = &headerTransport{base: hc.Transport, headers: headers, origin: origin(u)}
		if c.spec.Kind == SSE {
			return detached{&mcp.SSEClientTransport{Endpoint: c.spec.URL, HTTPClient: hc}}, nil
		}
		return detached{&mcp.StreamableClientTransport{Endpoint: c.spec.URL, HTTPClient: hc}}, nil
	}, nil
}

// headerTransport sets the upstream's configured headers on every request.
// Requests are built by the SDK client from configuration alone, so nothing
// a downstream client sent (its token, its cookies) can reach the upstream;
// the configured headers overwrite any value of the same name. A request to
// another origin (a legacy SSE endpoint event naming some other host) is
// refused, so the credentials never leave the configured origin.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	origin  string
}

func origin(u *url.URL) string { return u.Scheme + "://" + u.Host }

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if origin(req.URL) != t.origin {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fault.New(fault.URLNotAllowed, "the upstream asked to be reached at another origin")
	}
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(req)
}

// detached connects a transport whose connection outlives the context of
// Connect (the legacy SSE client holds its event stream on that context):
// the context bounds the connecting only, and the stream lives until the
// connection is closed.
type detached struct{ mcp.Transport }

func (d detached) Connect(ctx context.Context) (mcp.Connection, error) {
	inner, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	conn, err := d.Transport.Connect(inner)
	if !stop() && err == nil { // ctx ended while connecting
		conn.Close()
		err = ctx.Err()
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return &cancelOnClose{Connection: conn, cancel: cancel}, nil
}

type cancelOnClose struct {
	mcp.Connection
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}
