// Package fault defines bastion's one client-facing error: a stable code, a
// message that is safe to show a caller, whether retrying can help, and what
// the caller should do next.
//
// Invariants: a *Error's Message never carries an internal address, a secret or
// a stack; the wrapped cause (Unwrap) is for logs and errors.Is/As only and is
// never rendered to a client. Every layer that talks to a client (MCP tools,
// REST, CLI) renders the same four fields, so an agent branches on Code and
// NextAction, never on message text.
package fault

import (
	"errors"
	"fmt"
	"time"
)

// Code is a stable, machine-readable error code. Codes are part of the wire
// contract: never rename one.
type Code string

// The codes bastion emits. The peer contract's vocabulary is kept so agents
// configured for it work unchanged.
const (
	URLNotAllowed       Code = "URL_NOT_ALLOWED"
	DNSTargetProhibited Code = "DNS_TARGET_PROHIBITED"
	DNSResolutionFailed Code = "DNS_RESOLUTION_FAILED"
	DomainUnverified    Code = "DOMAIN_UNVERIFIED"
	RedirectNotAllowed  Code = "REDIRECT_NOT_ALLOWED"
	InvalidArgument     Code = "INVALID_ARGUMENT"
	IdempotencyConflict Code = "IDEMPOTENCY_CONFLICT"
	JobNotFound         Code = "JOB_NOT_FOUND"
	JobExpired          Code = "JOB_EXPIRED"
	AuthRequired        Code = "AUTH_REQUIRED"
	InsufficientScope   Code = "INSUFFICIENT_SCOPE"
	ReviewNotReady      Code = "REVIEW_NOT_READY"
	FindingNotFound     Code = "FINDING_NOT_FOUND"
	TargetUnchanged     Code = "TARGET_UNCHANGED"
	BudgetExhausted     Code = "BUDGET_EXHAUSTED"
	RateLimited         Code = "RATE_LIMITED"
	RecheckLimitReached Code = "RECHECK_LIMIT_REACHED"
	CaptureFailed       Code = "CAPTURE_FAILED"
	JudgmentFailed      Code = "JUDGMENT_FAILED"
	UpstreamUnavailable Code = "UPSTREAM_UNAVAILABLE"
	ResponseTooLarge    Code = "RESPONSE_TOO_LARGE"
	Unavailable         Code = "UNAVAILABLE"
	InternalError       Code = "INTERNAL_ERROR"
)

// NextAction tells an agent what to do about an error.
type NextAction string

// The next actions of the wire contract.
const (
	Authenticate   NextAction = "authenticate"
	RequestScope   NextAction = "request_scope"
	VerifyDomain   NextAction = "verify_domain"
	ChangeTarget   NextAction = "change_target"
	Wait           NextAction = "wait"
	ReduceScope    NextAction = "reduce_scope"
	StartNewReview NextAction = "start_new_review"
	ContactSupport NextAction = "contact_support"
	None           NextAction = "none"
)

type defaults struct {
	retriable bool
	next      NextAction
}

// byCode holds each code's usual retriability and next action; New applies
// them so call sites state only what differs.
var byCode = map[Code]defaults{
	URLNotAllowed:       {false, ChangeTarget},
	DNSTargetProhibited: {false, ChangeTarget},
	DNSResolutionFailed: {true, Wait},
	DomainUnverified:    {false, VerifyDomain},
	RedirectNotAllowed:  {false, ChangeTarget},
	InvalidArgument:     {false, None},
	IdempotencyConflict: {false, StartNewReview},
	JobNotFound:         {false, StartNewReview},
	JobExpired:          {false, StartNewReview},
	AuthRequired:        {false, Authenticate},
	InsufficientScope:   {false, RequestScope},
	ReviewNotReady:      {true, Wait},
	FindingNotFound:     {false, StartNewReview},
	TargetUnchanged:     {false, ChangeTarget},
	BudgetExhausted:     {true, Wait},
	RateLimited:         {true, Wait},
	RecheckLimitReached: {false, StartNewReview},
	CaptureFailed:       {true, Wait},
	JudgmentFailed:      {true, Wait},
	UpstreamUnavailable: {true, Wait},
	ResponseTooLarge:    {false, ReduceScope},
	Unavailable:         {true, Wait},
	InternalError:       {true, Wait},
}

// Error is a typed, client-safe error. Construct it with New or Wrap.
type Error struct {
	Code       Code
	Message    string // safe to show the caller; never an internal address or secret
	Retriable  bool
	NextAction NextAction
	RetryAfter time.Duration // zero when the caller need not wait a set time
	cause      error
}

// New returns an error with code's default retriability and next action.
func New(code Code, format string, args ...any) *Error {
	d, ok := byCode[code]
	if !ok {
		d = defaults{false, None}
	}
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Retriable: d.retriable, NextAction: d.next}
}

// Wrap is New with an internal cause kept for logs and errors.Is/As. The cause
// is never part of Error() or of anything rendered to a client.
func Wrap(cause error, code Code, format string, args ...any) *Error {
	e := New(code, format, args...)
	e.cause = cause
	return e
}

// WithNext returns a copy of e with a different next action.
func (e *Error) WithNext(n NextAction) *Error {
	c := *e
	c.NextAction = n
	return &c
}

// WithRetryAfter returns a copy of e that asks the caller to wait d.
func (e *Error) WithRetryAfter(d time.Duration) *Error {
	c := *e
	c.RetryAfter = d
	return &c
}

// Error returns "CODE: message". It never includes the cause.
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Unwrap returns the internal cause, or nil.
func (e *Error) Unwrap() error { return e.cause }

// As returns the first *Error in err's chain.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// Is reports whether err's chain holds a *Error with the given code.
func Is(err error, code Code) bool {
	e, ok := As(err)
	return ok && e.Code == code
}

// From returns err as a client-safe *Error: the typed error in its chain, or
// an INTERNAL_ERROR with the given fixed message that keeps err only as cause.
func From(err error, internalMessage string) *Error {
	if e, ok := As(err); ok {
		return e
	}
	return Wrap(err, InternalError, "%s", internalMessage)
}
