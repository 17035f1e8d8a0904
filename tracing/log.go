package tracing

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// The log attribute keys of a record logged inside a span.
const (
	LogTraceID = "trace_id"
	LogSpanID  = "span_id"
)

// NewLogHandler returns a handler that passes every record to h, adding
// trace_id and span_id when the record's context is inside a span, so a
// log line can be found from its trace and the other way round. Outside a
// span (and always when tracing is off) the record passes unchanged.
func NewLogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

type logHandler struct{ h slog.Handler }

func (l logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return l.h.Enabled(ctx, level)
}

func (l logHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String(LogTraceID, sc.TraceID().String()), slog.String(LogSpanID, sc.SpanID().String()))
	}
	return l.h.Handle(ctx, r)
}

func (l logHandler) WithAttrs(as []slog.Attr) slog.Handler { return logHandler{l.h.WithAttrs(as)} }
func (l logHandler) WithGroup(name string) slog.Handler    { return logHandler{l.h.WithGroup(name)} }
