package upstream

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/fault"
)

// hopContext carries a request from the gateway's client side to an
// upstream: the caller's deadline, cancellation and Downstream, and none of
// its other values. The SDK keeps per-request state in context values (the
// protocol version of the request being served, which its HTTP client
// would then send upstream); state of the client's hop must not leak into
// the upstream's.
type hopContext struct{ context.Context }

func (h hopContext) Value(key any) any {
	if key == (downstreamKey{}) {
		return h.Context.Value(key)
	}
	return nil
}

// AfterFunc lets contexts derived from h follow its cancellation without a
// goroutine each (see context.AfterFunc).
func (h hopContext) AfterFunc(f func()) func() bool { return context.AfterFunc(h.Context, f) }

// do runs one request on the live session under the per-call deadline
// (the caller's context may be shorter),
// recording it as in flight for the ctx's Downstream.
func (c *Conn) do(ctx context.Context, what string, fn func(ctx context.Context, s *mcp.ClientSession) error) error {
	ctx = hopContext{ctx}
	// Waiting for a (re)starting session is bounded like a start, not by
	// the call's own budget: a replaced Wasm instance or a restarted child
	// must not make the next call time out before it is sent.
	sess := c.live()
	if sess == nil {
		sctx, scancel := context.WithTimeout(ctx, c.spec.ConnectTimeout)
		var err error
		sess, err = c.Session(sctx)
		scancel()
		if err != nil {
			return err
		}
	}
	// The gateway's call path already bounds ctx by this same deadline: a
	// second timer per call would change nothing.
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > c.spec.Timeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.spec.Timeout)
		defer cancel()
	}
	d, _ := DownstreamFrom(ctx)
	untrack := c.track(sess, d)
	sent, release := ctx, func(bool) {}
	if c.spec.Kind == HTTP || c.spec.Kind == SSE {
		sent, release = untilAnswered(ctx)
	}
	err := fn(sent, sess)
	release(err == nil)
	if err == nil {
		// Still in flight for routing: the log messages and progress
		// sent before the answer reach the caller's client before it.
		c.fence.wait(ctx)
	}
	untrack()
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return err // the upstream's own answer
	}
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		if c.spec.Kind == Wasm {
			// The guest may be spinning: its instance is never reused.
			c.retire(sess)
			c.log.LogAttrs(ctx, slog.LevelWarn, "wasm instance overran a call deadline; replaced", slog.String("op", what))
		}
		return c.timedOut(what, err)
	case ctx.Err() != nil:
		return ctx.Err() // the caller cancelled
	}
	c.log.LogAttrs(ctx, slog.LevelWarn, "upstream session failed during a call", slog.String("op", what), slog.String("err", err.Error()))
	// The session is gone: retire it now, so calls that follow wait for
	// its replacement instead of racing the supervisor to the dead one.
	c.retire(sess)
	cause := errors.Join(ErrLost, err)
	if c.spec.Kind == Wasm {
		cause = errors.Join(ErrTrapped, err)
	}
	return fault.Wrap(cause, fault.UpstreamUnavailable, "upstream %s failed during %s", c.spec.Name, what).WithNext(fault.Wait)
}

// drainGrace is how long a request's context outlives its answer, so the
// transport can read the rest of the response (an SSE stream's end) and
// keep the connection; a server that holds the stream open longer has it
// cut then, as the call's own end would have cut it before.
const drainGrace = 5 * time.Second

// untilAnswered returns the context an HTTP request is sent under: it ends
// with ctx while the request waits for its answer, but not when the caller
// ends ctx after the answer came. Ending it then would abort the HTTP
// response still being drained and close its connection (Go's transport
// cannot pool a connection whose body was cut), so every call would risk a
// new dial. release(answered) detaches it on an answer, else ends it at
// once. Only HTTP and SSE upstreams need it: a pipe, a child's stdio or a
// Wasm instance has no response body to drain, and the context and timer it
// keeps for drainGrace would only be garbage held per call.
func untilAnswered(ctx context.Context) (context.Context, func(answered bool)) {
	sent, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return sent, func(answered bool) {
		if answered && stop() {
			time.AfterFunc(drainGrace, func() { cancel(nil) })
			return
		}
		cancel(nil)
	}
}

// Tools lists all of the upstream's tools, every page.
func (c *Conn) Tools(ctx context.Context) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	err := c.do(ctx, "tools/list", func(ctx context.Context, s *mcp.ClientSession) error {
		out = out[:0]
		for t, err := range s.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return nil
	})
	return out, err
}

// CallTool calls a tool. A progress token in p is replaced by one unique to
// this Conn, and the upstream's progress is relayed to the ctx's Downstream
// under the caller's token. p is not modified.
func (c *Conn) CallTool(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	if p == nil {
		return nil, fault.New(fault.InvalidArgument, "a tool call needs params")
	}
	if c.spec.Call != nil {
		return c.callDirect(ctx, p)
	}
	if tok := p.GetProgressToken(); tok != nil {
		q := *p
		q.Meta = maps.Clone(p.Meta)
		if d, ok := DownstreamFrom(ctx); ok {
			ours := "bastion-" + strconv.FormatUint(c.nextTok.Add(1), 10)
			q.SetProgressToken(ours)
			c.mu.Lock()
			c.prog[ours] = progressRoute{d: d, token: tok}
			c.mu.Unlock()
			// Notifications are handled concurrently with the response, so
			// the route outlives the call briefly: progress the upstream sent
			// before its answer is still relayed.
			defer time.AfterFunc(progressGrace, func() {
				c.mu.Lock()
				delete(c.prog, ours)
				c.mu.Unlock()
			})
		} else {
			delete(q.Meta, "progressToken") // nowhere to relay it
		}
		p = &q
	}
	var res *mcp.CallToolResult
	err := c.do(ctx, "tools/call "+p.Name, func(ctx context.Context, s *mcp.ClientSession) (err error) {
		res, err = s.CallTool(ctx, p)
		return err
	})
	return res, err
}

func (c *Conn) closedErr() error {
	return fault.Wrap(ErrClosed, fault.UpstreamUnavailable, "upstream %s is closed", c.spec.Name)
}

// timedOut is the error of a request (what) that outlived the per-call
// deadline.
func (c *Conn) timedOut(what string, err error) error {
	return fault.Wrap(errors.Join(ErrTimeout, err), fault.UpstreamUnavailable,
		"upstream %s did not answer %s within %s", c.spec.Name, what, c.spec.Timeout).WithNext(fault.Wait)
}

// Resources lists all of the upstream's resources.
func (c *Conn) Resources(ctx context.Context) ([]*mcp.Resource, error) {
	var out []*mcp.Resource
	err := c.do(ctx, "resources/list", func(ctx context.Context, s *mcp.ClientSession) error {
		out = out[:0]
		if s.InitializeResult().Capabilities.Resources == nil {
			return nil
		}
		for r, err := range s.Resources(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// ResourceTemplates lists all of the upstream's resource templates.
func (c *Conn) ResourceTemplates(ctx context.Context) ([]*mcp.ResourceTemplate, error) {
	var out []*mcp.ResourceTemplate
	err := c.do(ctx, "resources/templates/list", func(ctx context.Context, s *mcp.ClientSession) error {
		out = out[:0]
		if s.InitializeResult().Capabilities.Resources == nil {
			return nil
		}
		for r, err := range s.ResourceTemplates(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// ReadResource reads a resource.
func (c *Conn) ReadResource(ctx context.Context, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	var res *mcp.ReadResourceResult
	err := c.do(ctx, "resources/read", func(ctx context.Context, s *mcp.ClientSession) (err error) {
		res, err = s.ReadResource(ctx, p)
		return err
	})
	return res, err
}

// Prompts lists all of the upstream's prompts.
func (c *Conn) Prompts(ctx context.Context) ([]*mcp.Prompt, error) {
	var out []*mcp.Prompt
	err := c.do(ctx, "prompts/list", func(ctx context.Context, s *mcp.ClientSession) error {
		out = out[:0]
		if s.InitializeResult().Capabilities.Prompts == nil {
			return nil
		}
		for p, err := range s.Prompts(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// GetPrompt gets a prompt.
func (c *Conn) GetPrompt(ctx context.Context, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	var res *mcp.GetPromptResult
	err := c.do(ctx, "prompts/get", func(ctx context.Context, s *mcp.ClientSession) (err error) {
		res, err = s.GetPrompt(ctx, p)
		return err
	})
	return res, err
}

// Subscribe asks the upstream for notifications/resources/updated about
// uri (delivered to Events.Updated).
func (c *Conn) Subscribe(ctx context.Context, uri string) error {
	return c.do(ctx, "resources/subscribe", func(ctx context.Context, s *mcp.ClientSession) error {
		return s.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
}

// Unsubscribe ends a subscription to uri.
func (c *Conn) Unsubscribe(ctx context.Context, uri string) error {
	return c.do(ctx, "resources/unsubscribe", func(ctx context.Context, s *mcp.ClientSession) error {
		return s.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
}

// Complete asks for argument completions.
func (c *Conn) Complete(ctx context.Context, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	var res *mcp.CompleteResult
	err := c.do(ctx, "completion/complete", func(ctx context.Context, s *mcp.ClientSession) (err error) {
		res, err = s.Complete(ctx, p)
		return err
	})
	return res, err
}
