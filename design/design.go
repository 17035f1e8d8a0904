// Package design is the vocabulary of a design review: viewports, findings
// and their severities, evidence crops, coverage, page health and grades,
// and the rules that derive one from another (stable finding ids, merging
// one defect seen at several viewports, the grade of a set of findings).
// Everything that judges, stores or presents a review speaks it; it imports
// nothing of bastion's, so the checks, the evidence cutter and the capture
// code depend on it without depending on the engine that runs them.
//
// Invariants: a finding's id depends only on its kind, route and selector;
// Merge and Sort are deterministic, so identical measurements give
// identical results.
package design

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
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
	// Overviews are a scaled-down shot of each reviewed page, one per
	// route and viewport, with its findings outlined and numbered.
	Overviews []Overview `json:"overviews,omitempty"`
}

// Overview is a thumbnail of the top of one reviewed page (EvidenceID
// names its PNG) with the findings seen there marked on it. Marks are
// numbered by the finding's place in Result.Findings, counting from 1, so
// a reader of the image alone can match a mark to its finding.
type Overview struct {
	Route      string   `json:"route"`
	Viewport   Viewport `json:"viewport"`
	EvidenceID string   `json:"evidence_id"`
	// Scale is image pixels per CSS pixel; the image shows Width × Height
	// CSS px of the page from its top-left (a long page is cut at Height;
	// Width is the viewport's, or more where the page runs past it).
	Scale  float64        `json:"scale"`
	Width  float64        `json:"width"`
	Height float64        `json:"height"`
	Marks  []OverviewMark `json:"marks"`
}

// OverviewMark is one finding on an overview: its number, its id, and its
// element's box at the overview's viewport (CSS px, page coordinates).
type OverviewMark struct {
	N         int    `json:"n"`
	FindingID string `json:"finding_id"`
	Box       Rect   `json:"box"`
}

// Outcome is a recheck verdict on one finding.
type Outcome string

// Recheck outcomes. "Resolved" is earned only by Passed.
const (
	Passed       Outcome = "passed"       // the defect is measured gone
	Failed       Outcome = "failed"       // the defect is measured still there
	Inconclusive Outcome = "inconclusive" // the element is gone or the page failed to load
)

// RecheckOutcome is the verdict on one finding with the facts behind it
// and, where the element is still there, a crop of it as it is now, to be
// shown beside the review's crop of it (BeforeEvidenceID).
type RecheckOutcome struct {
	FindingID string  `json:"finding_id"`
	Outcome   Outcome `json:"outcome"`
	Facts     Facts   `json:"facts,omitempty"`
	Reason    string  `json:"reason"`
	// EvidenceID names the crop of the element now; Evidence holds it
	// until it is stored with the recheck.
	EvidenceID       string    `json:"evidence_id,omitempty"`
	BeforeEvidenceID string    `json:"before_evidence_id,omitempty"`
	Evidence         *Evidence `json:"-"`
}

// Viewports lists the closed set in its canonical order (narrow to wide);
// merged findings list their viewports in this order.
func Viewports() []Viewport { return []Viewport{Mobile, Tablet, Desktop} }

// viewportRank orders viewports canonically; unknown ones sort last.
func viewportRank(v Viewport) int {
	switch v {
	case Mobile:
		return 0
	case Tablet:
		return 1
	case Desktop:
		return 2
	}
	return 3
}

// Rank returns s's position, worst first (blocker 0 … nit 3); an unknown
// severity ranks after nit.
func (s Severity) Rank() int {
	switch s {
	case Blocker:
		return 0
	case Major:
		return 1
	case Minor:
		return 2
	case Nit:
		return 3
	}
	return 4
}

// FindingID is the stable id of the defect kind on route at selector:
// "f_" and the first 10 hex digits of SHA-256(kind|route|selector). The
// same defect gets the same id across viewports, runs and rechecks.
func FindingID(kind, route, selector string) string {
	sum := sha256.Sum256([]byte(kind + "|" + route + "|" + selector))
	return "f_" + hex.EncodeToString(sum[:])[:10]
}

// MinorLimit is the number of minor findings above which a review is graded
// needs_work rather than ship_with_nits: a page with many small defects is
// not ready to ship, even though none of them alone would stop it.
const MinorLimit = 10

// GradeOf derives the grade from the findings of a review that captured
// reviewed route × viewport pairs:
//
//   - nothing reviewed: nothing_reviewed, whatever the findings;
//   - any blocker: blocked;
//   - any major, or more than MinorLimit minor findings: needs_work;
//   - any minor or nit: ship_with_nits;
//   - none: ship.
//
// Advisory findings are judgments for a human, so each counts as a nit
// whatever its severity: it can hold a page at ship_with_nits but never
// block it.
func GradeOf(reviewed int, findings []Finding) Grade {
	if reviewed == 0 {
		return NothingReviewed
	}
	var blockers, majors, minors, nits int
	for _, f := range findings {
		if f.Advisory {
			nits++
			continue
		}
		switch f.Severity {
		case Blocker:
			blockers++
		case Major:
			majors++
		case Minor:
			minors++
		default:
			nits++
		}
	}
	switch {
	case blockers > 0:
		return Blocked
	case majors > 0 || minors > MinorLimit:
		return NeedsWork
	case minors+nits > 0:
		return ShipWithNits
	}
	return Ship
}

// Merge folds findings of one route seen at several viewports into one
// finding per (kind, route, selector). The merged finding takes its title,
// description, facts, fix and box from the first viewport in canonical
// order that saw it (that is the viewport its evidence is cut from), its
// severity from the worst viewport, and is advisory only if every
// sighting was. Viewports are listed once each in canonical order. IDs are
// set with FindingID. The result is sorted with Sort.
func Merge(findings []Finding) []Finding {
	type key struct{ kind, route, selector string }
	byKey := map[key]*Finding{}
	var order []key
	// Visit in canonical viewport order so "first" is well defined whatever
	// order the captures finished in.
	in := slices.Clone(findings)
	slices.SortStableFunc(in, func(a, b Finding) int {
		return cmp.Compare(firstRank(a.Viewports), firstRank(b.Viewports))
	})
	for _, f := range in {
		k := key{f.Kind, f.Route, f.Selector}
		m, ok := byKey[k]
		if !ok {
			c := f
			c.Viewports = slices.Clone(f.Viewports)
			c.Facts = f.Facts
			byKey[k] = &c
			order = append(order, k)
			continue
		}
		m.Viewports = append(m.Viewports, f.Viewports...)
		if f.Severity.Rank() < m.Severity.Rank() {
			m.Severity = f.Severity
		}
		m.Advisory = m.Advisory && f.Advisory
	}
	out := make([]Finding, 0, len(order))
	for _, k := range order {
		f := byKey[k]
		slices.SortFunc(f.Viewports, func(a, b Viewport) int { return cmp.Compare(viewportRank(a), viewportRank(b)) })
		f.Viewports = slices.Compact(f.Viewports)
		f.ID = FindingID(f.Kind, f.Route, f.Selector)
		out = append(out, *f)
	}
	Sort(out)
	return out
}

func firstRank(vs []Viewport) int {
	r := 4
	for _, v := range vs {
		r = min(r, viewportRank(v))
	}
	return r
}

// Sort orders findings deterministically: worst severity first, then
// route, kind, selector and id.
func Sort(findings []Finding) {
	slices.SortStableFunc(findings, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(a.Severity.Rank(), b.Severity.Rank()),
			cmp.Compare(a.Route, b.Route),
			cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Selector, b.Selector),
			cmp.Compare(a.ID, b.ID),
		)
	})
}
