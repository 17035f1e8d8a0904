// Package engine turns a review request into a measured judgment: it captures
// each route × viewport in network-isolated Chromium, runs the design checks on
// what was captured, merges the same defect across viewports, cuts evidence
// crops and derives a grade.
//
// Invariants: every finding comes from a measurement of the captured page,
// never from a fixture or from page text; page content can change a grade only
// through measured facts; identical input gives identical findings (ids,
// order, crops).
package engine

import (
	"slices"
	"time"
)

// Viewport names a capture width. The set is closed.
type Viewport string

// The viewports bastion captures.
const (
	Mobile  Viewport = "mobile"  // 390×844
	Tablet  Viewport = "tablet"  // 834×1112
	Desktop Viewport = "desktop" // 1440×900
)

// Size returns the CSS-pixel width and height of v, or false for an unknown v.
func (v Viewport) Size() (w, h int, ok bool) {
	switch v {
	case Mobile:
		return 390, 844, true
	case Tablet:
		return 834, 1112, true
	case Desktop:
		return 1440, 900, true
	}
	return 0, 0, false
}

// Severity ranks a finding. Order matters: blocker is worst.
type Severity string

// Severities, worst first.
const (
	Blocker Severity = "blocker"
	Major   Severity = "major"
	Minor   Severity = "minor"
	Nit     Severity = "nit"
)

// Grade is the verdict on a whole review.
type Grade string

// Grades.
const (
	Ship            Grade = "ship"
	ShipWithNits    Grade = "ship_with_nits"
	NeedsWork       Grade = "needs_work"
	Blocked         Grade = "blocked"
	NothingReviewed Grade = "nothing_reviewed"
)

// Request asks the engine to review one preview.
type Request struct {
	URL       string     // canonical, already authorized by the caller
	Routes    []string   // each starts with "/"; at least one
	Viewports []Viewport // at least one
	Tokens    []byte     // optional W3C DTCG token file; nil falls back to :root custom properties
}

// Rect is a box in CSS pixels in page (document) coordinates.
type Rect struct {
	X, Y, W, H float64
}

// Finding is one measured defect.
type Finding struct {
	ID          string     `json:"id"`   // stable: derived from kind, route and selector
	Kind        string     `json:"kind"` // the check that found it, e.g. "contrast"
	Severity    Severity   `json:"severity"`
	Title       string     `json:"title"`
	Description string     `json:"description"`
	Route       string     `json:"route"`
	Viewports   []Viewport `json:"viewports"` // every viewport the same defect was seen at
	Selector    string     `json:"selector"`  // prefers #id, then [data-testid], then a short path
	Facts       Facts      `json:"facts"`     // the measurements behind the finding
	Fix         string     `json:"fix"`       // a concrete suggested fix
	Advisory    bool       `json:"advisory"`  // a judgment a human should make; never auto-applied
	EvidenceID  string     `json:"evidence_id,omitempty"`
	Box         Rect       `json:"box"` // where, on the first viewport's capture
}

// Facts are a finding's measured values, keyed by name (e.g. "ratio": 2.9,
// "overflow_px": 112). Values are numbers, strings or booleans.
type Facts map[string]any

// Evidence is an annotated crop for one finding.
type Evidence struct {
	ID       string `json:"id"`
	MIMEType string `json:"mime_type"` // "image/png"
	Data     []byte `json:"-"`
}

// Coverage says what was and was not reviewed.
type Coverage struct {
	RoutesRequested    []string   `json:"routes_requested"`
	RoutesReviewed     []string   `json:"routes_reviewed"`
	ViewportsRequested []Viewport `json:"viewports_requested"`
	ViewportsReviewed  []Viewport `json:"viewports_reviewed"`
	Skipped            []Skip     `json:"skipped,omitempty"`
	ChecksRun          []string   `json:"checks_run"`
	ChecksOff          []Skip     `json:"checks_off,omitempty"` // e.g. token checks without tokens
}

// Complete reports whether everything requested was reviewed whole: every
// requested route and viewport was reviewed and nothing was skipped (a
// capture that failed, or a page measured only in part).
func (c Coverage) Complete() bool {
	if len(c.Skipped) > 0 {
		return false
	}
	for _, r := range c.RoutesRequested {
		if !slices.Contains(c.RoutesReviewed, r) {
			return false
		}
	}
	for _, v := range c.ViewportsRequested {
		if !slices.Contains(c.ViewportsReviewed, v) {
			return false
		}
	}
	return true
}

// Skip records something not reviewed and why.
type Skip struct {
	What   string `json:"what"`
	Reason string `json:"reason"`
}

// PageHealth is what went wrong loading a page, per route and viewport.
type PageHealth struct {
	Route           string        `json:"route"`
	Viewport        Viewport      `json:"viewport"`
	ConsoleErrors   []string      `json:"console_errors,omitempty"`
	Failed          []Failure     `json:"failed_requests,omitempty"`
	EgressBlocked   []Failure     `json:"egress_blocked,omitempty"`
	FontsNotLoaded  []string      `json:"fonts_not_loaded,omitempty"`
	StatusCode      int           `json:"status_code"`
	CaptureDuration time.Duration `json:"capture_ms"`
}

// Failure is one request that failed or was blocked.
type Failure struct {
	URL  string `json:"url"`
	Code string `json:"code"` // e.g. DNS_TARGET_PROHIBITED, net::ERR_...
}

// Result is the engine's judgment of one request.
type Result struct {
	Grade      Grade        `json:"grade"`
	Findings   []Finding    `json:"findings"`
	Evidence   []Evidence   `json:"-"`
	Coverage   Coverage     `json:"coverage"`
	Health     []PageHealth `json:"page_health"`
	TokensFrom string       `json:"tokens_from"` // "file", "root_custom_properties" or "none"
}

// RecheckRequest asks the engine to re-measure earlier findings after a fix.
type RecheckRequest struct {
	URL      string    // canonical, already authorized; may differ from the review's in path or query
	Tokens   []byte    // the same token file the review used, if any
	Findings []Finding // the findings to recheck, as the review returned them
}

// Outcome is a recheck verdict on one finding.
type Outcome string

// Recheck outcomes. "Resolved" is earned only by Passed.
const (
	Passed       Outcome = "passed"       // the defect is measured gone
	Failed       Outcome = "failed"       // the defect is measured still there
	Inconclusive Outcome = "inconclusive" // the element is gone or the page failed to load
)

// RecheckOutcome is the verdict on one finding with the facts behind it.
type RecheckOutcome struct {
	FindingID string  `json:"finding_id"`
	Outcome   Outcome `json:"outcome"`
	Facts     Facts   `json:"facts,omitempty"`
	Reason    string  `json:"reason"`
}
