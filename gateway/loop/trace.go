package loop

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The spans of a governed call, and their attributes. Every helper here is
// a no-op when the loop has no tracer: it returns a nil span and the
// context it was given, so a gateway without tracing allocates nothing for
// it.
const (
	spanCall     = "gateway.tools/call"
	spanUpstream = "gateway.upstream"
	spanAppend   = "audit.append"

	attrServer   = "bastion.server"
	attrTool     = "bastion.tool"
	attrDecision = "bastion.decision"
	attrRule     = "bastion.rule"
	attrRequest  = "bastion.request_id"
)

// startSpan starts a child of ctx's span named name, or returns ctx and nil
// when tracing is off.
func (l *Loop) startSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	if l.tracer == nil {
		return ctx, nil
	}
	return l.tracer.Start(ctx, name)
}

// endCall ends a call's span with what the call came to.
func endCall(span trace.Span, o *outcome) {
	if span == nil {
		return
	}
	span.SetAttributes(attribute.String(attrRequest, o.id), attribute.String(attrServer, o.server),
		attribute.String(attrTool, o.tool), attribute.String(attrDecision, string(o.decision)),
		attribute.String(attrRule, o.auditRule()))
	span.End()
}

// endSpan ends span, marking it failed when err is set (the error's text is
// not recorded: an upstream's error may carry what its caller sent).
func endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, "")
	}
	span.End()
}

// traceID is the trace id of ctx's span for the ledger record, "" when the
// request is not traced.
func traceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}
