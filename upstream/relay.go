//lint:file-ignore SA1019 sampling, roots and logging are part of MCP 2025-11-25, the revision bastion targets and must relay; deprecated only from 2026-07-28.

package upstream

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// track records a call in flight on sess for d and returns its release.
func (c *Conn) track(sess *mcp.ClientSession, d Downstream) func() {
	id := c.nextTok.Add(1)
	c.mu.Lock()
	m := c.calls[sess]
	if m == nil {
		m = map[uint64]Downstream{}
		c.calls[sess] = m
	}
	m[id] = d
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(m, id)
		if len(m) == 0 {
			delete(c.calls, sess)
			delete(c.lost, sess)
		}
		c.mu.Unlock()
	}
}

// attribute finds the downstream a server-to-client request belongs to:
// the one in ctx (multi-round-trip requests run in the call's context), or
// the only downstream with calls in flight on sess.
func (c *Conn) attribute(ctx context.Context, sess *mcp.ClientSession) (Downstream, error) {
	if d, ok := DownstreamFrom(ctx); ok {
		return d, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var found Downstream
	for _, d := range c.calls[sess] {
		switch {
		case d == nil:
			continue
		case found == nil:
			found = d
		case found != d:
			return nil, fmt.Errorf("%w: calls from several clients are in flight on %s", ErrAmbiguous, c.spec.Name)
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%w: no client call is in flight on %s", ErrAmbiguous, c.spec.Name)
	}
	return found, nil
}

func (c *Conn) onCreateMessage(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	d, err := c.attribute(ctx, req.Session)
	if err != nil {
		return nil, err
	}
	return d.CreateMessage(ctx, req.Params)
}

func (c *Conn) onElicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	d, err := c.attribute(ctx, req.Session)
	if err != nil {
		return nil, err
	}
	return d.Elicit(ctx, req.Params)
}

// serverRequests answers the upstream's server-to-client requests that
// the SDK would otherwise answer on the gateway's own behalf or judge first:
// roots/list gets the attributed downstream's roots (not the gateway
// client's empty list), and elicitation/create goes to the downstream
// unjudged, since what a requested schema may say is for the client that
// renders it to decide, not for a hop in between.
func (c *Conn) serverRequests(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "roots/list":
			sess, _ := req.GetSession().(*mcp.ClientSession)
			d, err := c.attribute(ctx, sess)
			if err != nil {
				return nil, err
			}
			p, _ := req.GetParams().(*mcp.ListRootsParams)
			return d.ListRoots(ctx, p)
		case "elicitation/create":
			if r, ok := req.(*mcp.ElicitRequest); ok && r.Params != nil {
				return c.onElicit(ctx, r)
			}
		}
		return next(ctx, method, req)
	}
}

func (c *Conn) changed(ctx context.Context, ch Change) {
	if c.deps.Events != nil {
		c.deps.Events.Changed(ctx, c.spec.Name, ch)
	}
}

func (c *Conn) onLog(ctx context.Context, req *mcp.LoggingMessageRequest) {
	defer c.fence.done()
	if c.deps.Events != nil {
		c.deps.Events.Log(ctx, c.spec.Name, req.Params)
	}
}

func (c *Conn) onUpdated(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if c.deps.Events != nil && req.Params != nil {
		c.deps.Events.Updated(ctx, c.spec.Name, req.Params)
	}
}

func (c *Conn) onProgress(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
	defer c.fence.done()
	tok, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	c.mu.Lock()
	r, ok := c.prog[tok]
	c.mu.Unlock()
	if !ok {
		return // not ours, or the call already returned
	}
	p := *req.Params
	p.ProgressToken = r.token
	if err := r.d.NotifyProgress(ctx, &p); err != nil {
		c.log.LogAttrs(ctx, slog.LevelDebug, "progress not relayed", slog.String("err", err.Error()))
	}
}
