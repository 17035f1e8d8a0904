package review

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/bastion-mcp/bastion/tracing"
)

// The span attributes of the review service.
const (
	attrJobID   = "bastion.job.id"
	attrAttempt = "bastion.job.attempt"
	attrReused  = "bastion.job.reused"
)

// startSpan starts a span of the service's tracer, or does nothing when
// tracing is off.
func (s *Service) startSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return tracing.Start(ctx, s.tracer, name, trace.WithAttributes(attrs...))
}

// endSpan records err's code on span (never its text, which may quote a
// page) and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil {
		code, _ := failureReason(err)
		span.SetStatus(codes.Error, string(code))
	}
	span.End()
}

// jobMetadata is the River job's metadata: the W3C trace context of the
// request that created the job, so its worker, in this process or another,
// continues the same trace. It is nil when the request was not traced; like
// the args it carries no page or user data.
func jobMetadata(ctx context.Context) []byte {
	c := propagation.MapCarrier{}
	tracing.Inject(ctx, c)
	if len(c) == 0 {
		return nil
	}
	b, _ := json.Marshal(map[string]string(c))
	return b
}

// jobContext returns ctx in the trace a job's metadata names, if any.
// River's own keys, and anything that is not a string, are ignored.
func jobContext(ctx context.Context, metadata []byte) context.Context {
	if len(metadata) == 0 {
		return ctx
	}
	var m map[string]any
	if json.Unmarshal(metadata, &m) != nil {
		return ctx
	}
	c := propagation.MapCarrier{}
	for _, k := range []string{"traceparent", "tracestate"} {
		if v, ok := m[k].(string); ok {
			c[k] = v
		}
	}
	if len(c) == 0 {
		return ctx
	}
	return tracing.Extract(ctx, c)
}
