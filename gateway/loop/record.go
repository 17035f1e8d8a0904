package loop

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/audit"
)

// outcome is what one governed request came to, for the ledger and metrics.
type outcome struct {
	id       string // the request id its records and log lines carry
	method   string
	name     string // as the client sent it
	server   string // "" when unrouted
	tool     string // the upstream's name; "" when unrouted
	decision audit.Decision
	gate     string
	rule     string
	reason   string
	warnings []string // findings that did not deny: "RULE: REASON"
	attempt  uint64   // the seq of its attempt record, once admitted
	args     []byte
	result   []byte
	start    time.Time
	upStart  time.Time // when it was last sent to the upstream
}

// newOutcome starts the outcome of one governed request.
func newOutcome(method string) *outcome {
	return &outcome{id: audit.NewRequestID(), method: method, start: time.Now()}
}

// auditRule is o's gate-qualified rule.
func (o *outcome) auditRule() string {
	if o.gate != "" && o.rule != "" {
		return o.gate + ":" + o.rule
	}
	return o.rule
}

// admit makes the attempt record of an allowed request durable before the
// request is dispatched, so nothing reaches an upstream that the ledger has
// not recorded. It returns false when the ledger refused: the request is
// then denied without being forwarded (the outcome says so for metrics; no
// record can be written).
func (l *Loop) admit(ctx context.Context, c *client, o *outcome) bool {
	t := time.Now()
	actx, span := l.startSpan(ctx, spanAppend)
	r, err := l.ledger.Append(context.WithoutCancel(actx), audit.Entry{
		Principal: c.p, RequestID: o.id, Method: o.method, Server: o.server, Tool: o.name,
		Decision: audit.Attempting, Rule: o.auditRule(), Args: o.args, Warnings: o.warnings,
		TraceID: traceID(ctx),
	})
	endSpan(span, err)
	l.met.ledgerAppend.Observe(time.Since(t).Seconds())
	if err != nil {
		o.decision, o.gate, o.rule, o.reason = audit.Denied, gateLedger, "unavailable", ReasonLedger
		l.ledgerFailed(ctx, o, err)
		if o.method == "tools/call" {
			l.met.observe(o, time.Since(o.start))
		}
		return false
	}
	l.ledgerWrites(ctx)
	o.attempt = r.Seq
	return true
}

// gateLedger labels requests the ledger refused, in metrics.
const gateLedger = "ledger"

// record appends o's outcome to the ledger (completing its attempt, if it
// was admitted), counts it and logs its warnings once. It returns false
// when the ledger refused, and the caller must then fail the request
// closed.
func (l *Loop) record(ctx context.Context, c *client, o *outcome) bool {
	t := time.Now()
	lat := t.Sub(o.start)
	actx, span := l.startSpan(ctx, spanAppend)
	_, err := l.ledger.Append(context.WithoutCancel(actx), audit.Entry{
		Principal: c.p,
		RequestID: o.id,
		Method:    o.method,
		Server:    o.server,
		Tool:      o.name,
		Decision:  o.decision,
		Rule:      o.auditRule(),
		Reason:    o.reason,
		Latency:   lat,
		Args:      o.args,
		Result:    o.result,
		Attempt:   o.attempt,
		Warnings:  o.warnings,
		TraceID:   traceID(ctx),
	})
	endSpan(span, err)
	l.met.ledgerAppend.Observe(time.Since(t).Seconds())
	if o.method == "tools/call" {
		l.met.observe(o, lat)
	}
	l.warned(ctx, o)
	if err != nil {
		l.ledgerFailed(ctx, o, err)
		return false
	}
	l.ledgerWrites(ctx)
	return true
}

// warned counts o's warnings by rule and logs them in one line.
func (l *Loop) warned(ctx context.Context, o *outcome) {
	if len(o.warnings) == 0 {
		return
	}
	for _, w := range o.warnings {
		rule, _, _ := strings.Cut(w, ": ")
		l.met.warnings.WithLabelValues(rule).Inc()
	}
	l.log.LogAttrs(ctx, slog.LevelWarn, "findings that did not deny (warn mode)", slog.String("request_id", o.id),
		slog.String("method", o.method), slog.String("server", o.server), slog.String("name", o.name),
		slog.String("decision", string(o.decision)), slog.Any("warnings", o.warnings))
}

// ledgerFailed counts a request the ledger refused and logs the failure
// once, when the ledger goes from writing to failed, not once per request.
func (l *Loop) ledgerFailed(ctx context.Context, o *outcome, err error) {
	l.met.ledgerFailures.Inc()
	if l.ledgerDown.CompareAndSwap(false, true) {
		l.log.LogAttrs(ctx, slog.LevelError, "audit ledger failed: governed requests are refused, not forwarded, until it writes again",
			slog.String("request_id", o.id), slog.String("err", err.Error()))
	}
}

// ledgerWrites logs, once, that a failed ledger records again.
func (l *Loop) ledgerWrites(ctx context.Context) {
	if l.ledgerDown.Load() && l.ledgerDown.CompareAndSwap(true, false) {
		l.log.LogAttrs(ctx, slog.LevelInfo, "audit ledger writes again: governed requests are recorded and forwarded")
	}
}

// answer records o and returns res, the answer to a tools/call, or, when
// the ledger refuses, the refusal the client gets instead: the one path by
// which a governed call fails closed.
func (l *Loop) answer(ctx context.Context, c *client, o *outcome, res *mcp.CallToolResult) *mcp.CallToolResult {
	if !l.record(ctx, c, o) {
		return ledgerRefusal(o)
	}
	return res
}

// ReasonUnrecorded starts the answer to a call that ran (its attempt is in
// the ledger) but whose outcome the ledger could not record: the result is
// withheld, and the client is not told the call was refused, since it was
// not.
const ReasonUnrecorded = "the call ran, but the audit ledger could not record its outcome; its result is withheld"

// ledgerRefusal is what the client gets when o's outcome cannot be
// recorded: the ledger's denial before dispatch, or after it the notice
// that the call ran and its result is withheld (with the request id the
// ledger's attempt record carries).
func ledgerRefusal(o *outcome) *mcp.CallToolResult {
	if o.attempt == 0 {
		return ledgerDenial()
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
		Text: "bastion error: " + ReasonUnrecorded + " (request " + o.id + ")"}}}
}
