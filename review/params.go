package review

import (
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/store"
	"time"
)

// SchemaVersion is the version of every result's wire shape.
const SchemaVersion = "1.0.0"

// BudgetPolicy names the unit-pricing rules: a review costs 1 unit, a recheck
// max(1, ceil(findings/3)).
const BudgetPolicy = "budget-policy@1"

// SubmitParams is design_review's input. Field names are the wire's.
type SubmitParams struct {
	URL              string   `json:"url"`
	Routes           []string `json:"routes,omitempty"`    // nil means DefaultRoutes(url): the URL's own path
	Viewports        []string `json:"viewports,omitempty"` // nil means DefaultViewports(): all three
	Depth            string   `json:"depth,omitempty"`     // "triage" or "deep" (default)
	ExpectedRevision string   `json:"expected_revision,omitempty"`
	ResponseMode     string   `json:"response_mode,omitempty"` // "compact" (default) or "full"
	ClientRequestID  string   `json:"client_request_id"`
}

// SubmitResult is design_review's output.
type SubmitResult struct {
	SchemaVersion string `json:"schema_version"`
	Job           Job    `json:"job"`
	Budget        Budget `json:"budget"`
}

// Job is a job as a client sees it.
type Job struct {
	JobID       string     `json:"job_id"`
	Status      string     `json:"status"`             // queued|running|completed|failed|cancelled
	Kind        string     `json:"kind"`               // review|recheck
	Stage       string     `json:"stage,omitempty"`    // waiting_for_capacity, capturing, judging, finalizing, cancelling…
	Progress    *Progress  `json:"progress,omitempty"` // while capturing: captures done of planned
	ReviewID    string     `json:"review_id"`          // the review's id; a recheck's is the reviewed one
	CreatedAt   time.Time  `json:"created_at"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	PollAfterMS int64      `json:"poll_after_ms"`
	ExpiresAt   time.Time  `json:"expires_at"`
	Reused      bool       `json:"reused"`
	Error       *JobError  `json:"error,omitempty"` // why a failed job failed
}

// JobError is a failed job's kept reason: a fault code such as
// CAPTURE_FAILED or JUDGMENT_FAILED and a client-safe message.
type JobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Budget is what a call cost and what the tenant has left.
type Budget struct {
	PolicyVersion        string `json:"policy_version"`
	UnitsReserved        int64  `json:"units_reserved"`
	UnitsConsumed        int64  `json:"units_consumed"`
	TenantUnitsRemaining int64  `json:"tenant_units_remaining"`
}

// View selects what Get returns.
type View string

// Views of a job.
const (
	ViewStatus   View = "status"
	ViewSummary  View = "summary" // the default
	ViewFindings View = "findings"
	ViewFocus    View = "focus"
	ViewEvidence View = "evidence"
)

// GetParams is design_review_get's input.
type GetParams struct {
	JobID string `json:"job_id"`
	View  View   `json:"view,omitempty"`
	// WaitMS, when positive, holds the answer until the job changes state
	// (queued, running, a terminal state) or WaitMS passes, at most MaxWait.
	WaitMS int64 `json:"wait_ms,omitempty"`
	// OnProgress, when set with WaitMS, is told the job as the wait starts
	// and at each change of its stage while the wait lasts. It is called on
	// the Get's goroutine and must not block for long.
	OnProgress func(Job) `json:"-"`
}

// GetResult is a job and, per view, its data. Rendering it as MCP content is
// the adapter's job.
type GetResult struct {
	SchemaVersion string `json:"schema_version"`
	Job           Job    `json:"job"`
	// Review is a completed review's result for every view but status; in
	// the focus view its findings exclude nits.
	Review *design.Result `json:"review,omitempty"`
	// Evidence holds the crops, in the evidence view only.
	Evidence []design.Evidence `json:"-"`
	// Recheck is a completed recheck's report for every view but status.
	Recheck *RecheckReport `json:"recheck,omitempty"`
	// Target is what a completed review looked at, as it was asked for, in
	// the evidence view (the one the panel is rendered from).
	Target *Target `json:"-"`
	// DismissedBefore counts, in the summary view, the feedback events by
	// which this tenant dismissed findings of each kind this review has;
	// nil when there are none (or feedback is not recorded).
	DismissedBefore map[string]int `json:"-"`
}

// Target is the reviewed URL (canonical) and the revision the client said
// it expected there, if it named one.
type Target struct {
	URL              string
	ExpectedRevision string
}

// RecheckParams is design_recheck's input.
type RecheckParams struct {
	ReviewID         string   `json:"review_id"`
	FindingIDs       []string `json:"finding_ids"`
	URL              string   `json:"url,omitempty"` // default: the review's URL; must stay on its host
	ExpectedRevision string   `json:"expected_revision,omitempty"`
	ClientRequestID  string   `json:"client_request_id"`
}

// RecheckResult is design_recheck's output: the queued (or replayed) job. The
// report arrives through Get on Job.JobID once the job completes.
type RecheckResult struct {
	SchemaVersion string         `json:"schema_version"`
	Job           Job            `json:"job"`
	Budget        Budget         `json:"budget"`
	Recheck       *RecheckReport `json:"recheck,omitempty"` // set when a replayed job has completed
}

// RecheckReport is a completed recheck's verdicts.
type RecheckReport struct {
	RecheckID         string                  `json:"recheck_id"` // the recheck job's id
	ReviewID          string                  `json:"review_id"`
	BeforeFingerprint string                  `json:"before_fingerprint"`
	AfterFingerprint  string                  `json:"after_fingerprint"`
	Outcomes          []design.RecheckOutcome `json:"outcomes"`
}

// CancelParams is design_review_cancel's input.
type CancelParams struct {
	JobID  string `json:"job_id"`
	Reason string `json:"reason,omitempty"` // kept with the first request only
}

// Upstream cancellation outcomes.
const (
	UpstreamNotNeeded       = "not_needed"       // the job had not started; it is cancelled
	UpstreamRequested       = "requested"        // the running job was asked to stop
	UpstreamAlreadyTerminal = "already_terminal" // the job had already finished
)

// CancelResult is design_review_cancel's output.
type CancelResult struct {
	SchemaVersion           string     `json:"schema_version"`
	JobID                   string     `json:"job_id"`
	Status                  string     `json:"status"`
	CancellationRequestedAt *time.Time `json:"cancellation_requested_at"`
	UpstreamCancellation    string     `json:"upstream_cancellation"`
	// Decision is the arbitration record, for logs and audit.
	Decision store.CancelDecision `json:"-"`
}

// PanelActionKind is what a panel interaction asks for.
type PanelActionKind string

// Panel actions.
const (
	ActionApplyFix PanelActionKind = "apply_fix"
	ActionRecheck  PanelActionKind = "recheck"
)

// PanelActionParams is design_review_panel_action's input.
type PanelActionParams struct {
	JobID     string          `json:"job_id"`
	Action    PanelActionKind `json:"action"`
	FindingID string          `json:"finding_id,omitempty"` // required for apply_fix
}

// Panel response types.
const (
	ResponseFix       = "fix"        // a grounded finding's fix for the agent to apply
	ResponseHumanOnly = "human_only" // a judgment a human should make
	ResponseUnjudged  = "unjudged"   // nothing was reviewed, so there is nothing to fix
	ResponseRecheck   = "recheck"    // the finding ids to recheck
)

// PanelResponse is the reducer's answer. It never carries a status: a
// finding is resolved only by a recheck that passes.
type PanelResponse struct {
	Type      string   `json:"type"`
	FindingID string   `json:"finding_id,omitempty"`
	Fix       string   `json:"fix,omitempty"`
	Refs      []string `json:"refs,omitempty"`
}

// PanelActionResult is design_review_panel_action's output.
type PanelActionResult struct {
	SchemaVersion string        `json:"schema_version"`
	JobID         string        `json:"job_id"`
	ReviewID      string        `json:"review_id"`
	Response      PanelResponse `json:"response"`
}
