package local

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/bastion-mcp/bastion/fault"
)

// The span attributes of a capture.
const (
	attrRoute    = "bastion.capture.route"
	attrViewport = "bastion.capture.viewport"
	attrAttempts = "bastion.capture.attempts"
	attrOutcome  = "bastion.capture.outcome"
)

// endSpan records err (a fault's code, never page text) on span and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, captureOutcome(err))
	}
	span.End()
}

// Observer receives the engine's timings and capture outcomes, for the
// operator's metrics. The app implements it over its registry; nil in
// Options observes nothing. Labels are bounded: a stage name, and an
// outcome that is "ok", "cancelled" or a fault code.
type Observer interface {
	// Stage reports how long one review's stage took: "capture" (all its
	// captures, retries included) or "judge" (checks, merging, evidence).
	Stage(stage string, d time.Duration)
	// Capture reports one capture attempt's outcome.
	Capture(outcome string)
}

type noObserver struct{}

func (noObserver) Stage(string, time.Duration) {}
func (noObserver) Capture(string)              {}

// captureOutcome is the bounded label for one attempt's error.
func captureOutcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	}
	if f, ok := fault.As(err); ok {
		return string(f.Code)
	}
	return "error"
}
