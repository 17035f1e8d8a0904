package tracing

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
)

// MCPMiddleware is MCP server receiving middleware that runs each request
// in the trace of the HTTP request that carried it: the traceparent header
// Middleware set (see there for why the context alone is not enough). A
// request without one (stdio) keeps its context. Install it only when
// tracing is on.
func MCPMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if extra := req.GetExtra(); extra != nil && extra.Header != nil && extra.Header.Get("traceparent") != "" {
			ctx = Extract(ctx, propagation.HeaderCarrier(extra.Header))
		}
		return next(ctx, method, req)
	}
}
