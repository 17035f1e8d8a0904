package tracing

import (
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/bastion-mcp/bastion/internal/httpstatus"
)

// The span attributes of an edge request.
const (
	AttrRoute  = "http.route"
	AttrMethod = "http.request.method"
	AttrStatus = "http.response.status_code"
)

// Middleware returns HTTP middleware that serves each request inside a
// server span "METHOD ROUTE", continuing the caller's traceparent, with the
// route (route(r), a fixed label such as the edge's "mcp" or "rest", never
// the raw path) and the response status. With t nil (tracing off) it
// returns next unchanged.
//
// It also sets the request's traceparent header to its own span before
// passing it on: the MCP SDK runs a stateful session's handlers under the
// context of the request that opened the session, not the one that carries
// each call, so MCPMiddleware continues the trace from the header the call
// arrived with. The header is read in this process only: inbound headers
// never reach an upstream.
func Middleware(t trace.Tracer, route func(*http.Request) string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if t == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rt := route(r)
			ctx := Extract(r.Context(), propagation.HeaderCarrier(r.Header))
			ctx, span := t.Start(ctx, r.Method+" "+rt, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String(AttrRoute, rt), attribute.String(AttrMethod, r.Method)))
			defer span.End()
			r.Header.Del("tracestate")
			Inject(ctx, propagation.HeaderCarrier(r.Header))
			sw := &httpstatus.Writer{ResponseWriter: w}
			next.ServeHTTP(sw, r.WithContext(ctx))
			status := sw.Status
			if status == 0 {
				status = http.StatusOK
			}
			span.SetAttributes(attribute.Int(AttrStatus, status))
			if status >= 500 {
				span.SetStatus(codes.Error, strconv.Itoa(status))
			}
		})
	}
}
