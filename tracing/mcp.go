package tracing

import (
	"context"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
)

// The W3C trace context keys, as HTTP headers and as MCP _meta keys.
const (
	keyTraceparent = "traceparent"
	keyTracestate  = "tracestate"
)

// MCPMiddleware is MCP server receiving middleware that runs each request
// in the trace it arrived in: the traceparent header of the HTTP request
// that carried it (which Middleware set to the edge's span; see there for
// why the context alone is not enough), else a traceparent in the
// tools/call's _meta (a stdio client's, or the gateway's to its upstream;
// see WithMeta). A request with neither keeps its context. Install it only when
// tracing is on.
func MCPMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if extra := req.GetExtra(); extra != nil && extra.Header != nil && extra.Header.Get(keyTraceparent) != "" {
			ctx = Extract(ctx, propagation.HeaderCarrier(extra.Header))
		} else if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
			ctx = FromMeta(ctx, r.Params.Meta)
		}
		return next(ctx, method, req)
	}
}

// WithMeta returns a copy of meta carrying ctx's span context as
// traceparent (and tracestate), the keys MCP requests carry W3C trace
// context under, so the server a request goes to can continue the trace.
// Without a span in ctx it returns meta.
func WithMeta(ctx context.Context, meta mcp.Meta) mcp.Meta {
	c := propagation.MapCarrier{}
	Inject(ctx, c)
	if len(c) == 0 {
		return meta
	}
	out := maps.Clone(meta)
	if out == nil {
		out = mcp.Meta{}
	}
	delete(out, keyTracestate)
	for k, v := range c {
		out[k] = v
	}
	return out
}

// FromMeta returns ctx in the trace an MCP request's _meta names, if any.
func FromMeta(ctx context.Context, meta map[string]any) context.Context {
	tp, ok := meta[keyTraceparent].(string)
	if !ok || tp == "" {
		return ctx
	}
	c := propagation.MapCarrier{keyTraceparent: tp}
	if ts, ok := meta[keyTracestate].(string); ok {
		c[keyTracestate] = ts
	}
	return Extract(ctx, c)
}
