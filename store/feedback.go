package store

import (
	"context"
	"errors"
	"time"
)

// Verdict is the team's answer to one finding.
type Verdict string

// Verdicts a feedback event records.
const (
	Accepted  Verdict = "accepted"
	Dismissed Verdict = "dismissed"
	Disputed  Verdict = "disputed"
)

// Valid reports whether v is one of the recorded verdicts.
func (v Verdict) Valid() bool { return v == Accepted || v == Dismissed || v == Disputed }

// FeedbackEvent is one verdict on one finding of a completed review. Events
// are append-only: a later verdict on the same finding is a new event.
type FeedbackEvent struct {
	Tenant      string
	ID          string // "fb_" + UUIDv4
	ReviewID    string
	FindingID   string
	Kind        string // the finding's kind, so counts survive the review's purge
	Verdict     Verdict
	Reason      string // may be empty
	PrincipalID string
	At          time.Time
}

// Feedback is the feedback-event persistence over a Driver: what an event
// needs, once; the SQL in the adapter.
type Feedback struct {
	Driver Driver
}

// FeedbackRecord appends one event.
func (s Feedback) FeedbackRecord(ctx context.Context, e *FeedbackEvent) error {
	if e.Tenant == "" || e.ID == "" || e.ReviewID == "" || e.FindingID == "" || !e.Verdict.Valid() {
		return errors.New("store: a feedback event needs a tenant, an id, a review, a finding and a known verdict")
	}
	return inTx(ctx, s.Driver, e.Tenant, func(tx ExecutorTx) error { return tx.FeedbackEventInsert(ctx, e) })
}

// FeedbackList returns the tenant's events by time, then id.
func (s Feedback) FeedbackList(ctx context.Context, tenant string) ([]FeedbackEvent, error) {
	var out []FeedbackEvent
	err := s.Driver.Read(ctx, tenant, func(ex Executor) (err error) {
		out, err = ex.FeedbackEventList(ctx, tenant)
		return err
	})
	return out, err
}

// FeedbackCountByKind counts the tenant's events with verdict v, by finding
// kind; kinds without one are absent.
func (s Feedback) FeedbackCountByKind(ctx context.Context, tenant string, v Verdict) (map[string]int, error) {
	var out map[string]int
	err := s.Driver.Read(ctx, tenant, func(ex Executor) (err error) {
		out, err = ex.FeedbackEventCountByKind(ctx, tenant, v)
		return err
	})
	return out, err
}

// FeedbackStore is the feedback-event persistence every adapter implements
// beside Store, on the same database and under the same tenant binding.
type FeedbackStore interface {
	FeedbackRecord(ctx context.Context, e *FeedbackEvent) error
	FeedbackList(ctx context.Context, tenant string) ([]FeedbackEvent, error)
	FeedbackCountByKind(ctx context.Context, tenant string, v Verdict) (map[string]int, error)
	// TenantsList names every tenant that may hold events, sorted.
	TenantsList(ctx context.Context) ([]string, error)
}

// TenantsList implements FeedbackStore with the driver's tenant directory.
func (s Feedback) TenantsList(ctx context.Context) ([]string, error) { return s.Driver.TenantList(ctx) }
