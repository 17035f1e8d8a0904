package reviewmcp

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/internal/clip"
	"github.com/bastion-mcp/bastion/review"
)

// The payloads below are the wire shapes of schemas/mcp-tools.json's output
// schemas; field order is the order clients see.

type jobWire struct {
	JobID       string           `json:"job_id"`
	Status      string           `json:"status"`
	Kind        string           `json:"kind"`
	Stage       string           `json:"stage,omitempty"`
	Progress    *review.Progress `json:"progress,omitempty"`
	ReviewID    string           `json:"review_id"`
	CreatedAt   string           `json:"created_at"`
	CompletedAt string           `json:"completed_at,omitempty"`
	PollAfterMS int64            `json:"poll_after_ms"`
	ExpiresAt   string           `json:"expires_at"`
	Reused      bool             `json:"reused"`
	Error       *review.JobError `json:"error,omitempty"`
}

func jobOf(j review.Job) jobWire {
	w := jobWire{
		JobID: j.JobID, Status: j.Status, Kind: j.Kind, Stage: j.Stage, Progress: j.Progress, ReviewID: j.ReviewID,
		CreatedAt: wireTime(j.CreatedAt), PollAfterMS: j.PollAfterMS, ExpiresAt: wireTime(j.ExpiresAt),
		Reused: j.Reused, Error: j.Error,
	}
	if j.CompletedAt != nil {
		w.CompletedAt = wireTime(*j.CompletedAt)
	}
	return w
}

type submitPayload struct {
	SchemaVersion string        `json:"schema_version"`
	Job           jobWire       `json:"job"`
	Budget        review.Budget `json:"budget"`
}

type getPayload struct {
	SchemaVersion string        `json:"schema_version"`
	Job           jobWire       `json:"job"`
	Summary       *summaryWire  `json:"summary,omitempty"` // the summary view of a completed review
	Review        *critique     `json:"review,omitempty"`  // the findings, focus and evidence views
	Recheck       *recheckWire  `json:"recheck,omitempty"`
	Presentation  *presentation `json:"presentation,omitempty"`
}

type recheckPayload struct {
	SchemaVersion string        `json:"schema_version"`
	Job           jobWire       `json:"job"`
	Budget        review.Budget `json:"budget"`
	Recheck       *recheckWire  `json:"recheck,omitempty"`
}

type cancelPayload struct {
	SchemaVersion           string  `json:"schema_version"`
	JobID                   string  `json:"job_id"`
	Status                  string  `json:"status"`
	CancellationRequestedAt *string `json:"cancellation_requested_at"`
	UpstreamCancellation    string  `json:"upstream_cancellation"`
}

type panelPayload struct {
	SchemaVersion string               `json:"schema_version"`
	JobID         string               `json:"job_id"`
	ReviewID      string               `json:"review_id"`
	Provenance    provenance           `json:"provenance"`
	Response      review.PanelResponse `json:"response"`
}

// presentation says what the evidence view's content blocks carry for this
// client.
type presentation struct {
	Panel          bool     `json:"panel"`          // the panel resource block was sent
	PanelWithheld  bool     `json:"panel_withheld"` // the client does not declare MCP Apps support
	Multimedia     bool     `json:"multimedia"`     // at least one image block was sent
	ImagesWithheld []string `json:"images_withheld"`
}

// provenance says who judged: always bastion's measured checks. The peer's
// shape is kept; source "measured" is bastion's own value.
type provenance struct {
	ModelBacked bool    `json:"model_backed"`
	Source      string  `json:"source"`
	Engine      string  `json:"engine"`
	Model       *string `json:"model"`
	Detail      string  `json:"detail"`
}

func measuredProvenance() provenance {
	return provenance{
		ModelBacked: false, Source: "measured", Engine: "bastion-checks",
		Detail: "Chromium captured the target behind bastion's egress guard and bastion's measured checks judged the capture; no model was involved.",
	}
}

// critique is a completed review as the peer's Critique, extended with
// bastion's measured detail.
type critique struct {
	ReviewID           string            `json:"review_id"`
	Grade              design.Grade      `json:"grade"`
	Provenance         provenance        `json:"provenance"`
	Confidence         *float64          `json:"confidence"` // always null: a measurement has no model confidence
	Overall            string            `json:"overall"`
	Findings           []critiqueFinding `json:"findings"`
	NotReviewed        []string          `json:"not_reviewed"`
	Coverage           coverageWire      `json:"coverage"`
	Measurements       measurements      `json:"measurements"`
	HallucinationDrops int               `json:"hallucination_drops"` // always 0: nothing is generated, so nothing is dropped
	TokensFrom         string            `json:"tokens_from"`
	PageHealth         []pageHealth      `json:"page_health"`
	Overviews          []overviewWire    `json:"overviews"`
}

// overviewWire is one reviewed page's thumbnail (its image is the evidence
// evidence_id names) and the findings marked on it: each mark's number n
// is the finding's place in findings, counting from 1.
type overviewWire struct {
	Route      string            `json:"route"`
	Viewport   design.Viewport   `json:"viewport"`
	EvidenceID string            `json:"evidence_id"`
	Height     float64           `json:"height"` // CSS px of the page shown, from its top
	Marks      []overviewMarkRef `json:"marks"`
}

type overviewMarkRef struct {
	N         int    `json:"n"`
	FindingID string `json:"finding_id"`
}

type critiqueFinding struct {
	FindingID       string            `json:"finding_id"`
	Severity        string            `json:"severity"` // blocker|should_fix|nit, the peer's scale
	BastionSeverity design.Severity   `json:"bastion_severity"`
	Kind            string            `json:"kind"`
	Dimension       string            `json:"dimension"`
	Title           string            `json:"title"`
	Description     string            `json:"description"`
	Route           string            `json:"route"`
	Viewport        design.Viewport   `json:"viewport"` // the first viewport the defect was seen at
	Viewports       []design.Viewport `json:"viewports"`
	ElementRef      *string           `json:"element_ref"`
	Suggestion      *string           `json:"suggestion"`
	EvidenceID      *string           `json:"evidence_id"`
	Confidence      *float64          `json:"confidence"`
	Advisory        bool              `json:"advisory"`
	Facts           design.Facts      `json:"facts"`
}

type coverageWire struct {
	State              string            `json:"state"` // full|partial|nothing
	RoutesRequested    []string          `json:"routes_requested"`
	RoutesReviewed     []string          `json:"routes_reviewed"`
	RoutesSkipped      []string          `json:"routes_skipped"`
	ViewportsRequested []design.Viewport `json:"viewports_requested"`
	ViewportsReviewed  []design.Viewport `json:"viewports_reviewed"`
	ViewportsSkipped   []design.Viewport `json:"viewports_skipped"`
	CapturesSkipped    []design.Skip     `json:"captures_skipped"`
}

type measurements struct {
	State      string        `json:"state"` // always "reported"
	ChecksRun  []string      `json:"checks_run"`
	ChecksOff  []design.Skip `json:"checks_off"`
	Violations []violation   `json:"violations"`
}

type violation struct {
	FindingID     string            `json:"finding_id"`
	Kind          string            `json:"kind"`
	Route         string            `json:"route"`
	Viewports     []design.Viewport `json:"viewports"`
	ElementRef    *string           `json:"element_ref"`
	Detail        string            `json:"detail"`
	BlockEligible bool              `json:"block_eligible"`
}

type pageHealth struct {
	Route          string           `json:"route"`
	Viewport       design.Viewport  `json:"viewport"`
	StatusCode     int              `json:"status_code"`
	CaptureMS      int64            `json:"capture_ms"`
	ConsoleErrors  []string         `json:"console_errors"`
	FailedRequests []design.Failure `json:"failed_requests"`
	EgressBlocked  []design.Failure `json:"egress_blocked"`
	FontsNotLoaded []string         `json:"fonts_not_loaded"`
}

type recheckWire struct {
	RecheckID         string           `json:"recheck_id"`
	ReviewID          string           `json:"review_id"`
	BeforeFingerprint string           `json:"before_fingerprint"`
	AfterFingerprint  string           `json:"after_fingerprint"`
	CaptureScope      string           `json:"capture_scope"` // always "focused": each finding's own element is re-measured
	Provenance        provenance       `json:"provenance"`
	Outcomes          []outcomeWire    `json:"outcomes"`
	Summary           map[string]int64 `json:"summary"`
}

type outcomeWire struct {
	FindingID  string         `json:"finding_id"`
	Outcome    design.Outcome `json:"outcome"`
	Confidence *float64       `json:"confidence"`
	Reason     string         `json:"reason"`
	Facts      design.Facts   `json:"facts"`
	// EvidenceID is the crop of the element now; BeforeEvidenceID the
	// review's crop of it. The evidence view sends both as images.
	EvidenceID       *string `json:"evidence_id"`
	BeforeEvidenceID *string `json:"before_evidence_id"`
}

func recheckOf(r *review.RecheckReport) *recheckWire {
	w := &recheckWire{
		RecheckID: r.RecheckID, ReviewID: r.ReviewID, BeforeFingerprint: r.BeforeFingerprint, AfterFingerprint: r.AfterFingerprint,
		CaptureScope: "focused", Provenance: measuredProvenance(), Outcomes: []outcomeWire{},
		Summary: map[string]int64{string(design.Passed): 0, string(design.Failed): 0, string(design.Inconclusive): 0},
	}
	for _, o := range r.Outcomes {
		w.Outcomes = append(w.Outcomes, outcomeWire{FindingID: o.FindingID, Outcome: o.Outcome, Reason: o.Reason, Facts: orEmpty(o.Facts),
			EvidenceID: orNil(o.EvidenceID), BeforeEvidenceID: orNil(o.BeforeEvidenceID)})
		w.Summary[string(o.Outcome)]++
	}
	return w
}

// peerSeverity maps bastion's four severities onto the peer's three.
func peerSeverity(s design.Severity) string {
	switch s {
	case design.Blocker:
		return "blocker"
	case design.Nit:
		return "nit"
	}
	return "should_fix"
}

func orEmpty(f design.Facts) design.Facts {
	if f == nil {
		return design.Facts{}
	}
	return f
}

// orNil gives an optional wire field: absent (nil) for "", not an empty
// string, so a client tells "none" from a value.
func orNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func orNone[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Critique, CritiqueFinding and Recheck are the review and recheck wire
// shapes, exported so the REST API answers with the same names as the MCP
// tools instead of keeping a second mapping that could drift.
type (
	Critique        = critique
	CritiqueFinding = critiqueFinding
	Recheck         = recheckWire
	Summary         = summaryWire
)

// SummaryOf condenses a review as the summary view does; see summaryOf.
func SummaryOf(reviewID string, res *design.Result) *Summary {
	return summaryOf(critiqueOf(reviewID, res))
}

// CritiqueOf maps an engine result onto the wire Critique; see critiqueOf.
func CritiqueOf(reviewID string, res *design.Result) *Critique { return critiqueOf(reviewID, res) }

// RecheckOf maps a recheck report onto its wire shape; see recheckOf.
func RecheckOf(r *review.RecheckReport) *Recheck { return recheckOf(r) }

// critiqueOf maps an engine result onto the wire Critique. It is the one
// place that does: every view, the panel action and the REST API go through
// it.
func critiqueOf(reviewID string, res *design.Result) *critique {
	cov := res.Coverage
	c := &critique{
		ReviewID: reviewID, Grade: res.Grade, Provenance: measuredProvenance(),
		Findings: []critiqueFinding{}, NotReviewed: []string{}, TokensFrom: cmp.Or(res.TokensFrom, "none"),
		PageHealth: []pageHealth{},
		Measurements: measurements{
			State: "reported", ChecksRun: orNone(slices.Clone(cov.ChecksRun)), ChecksOff: orNone(slices.Clone(cov.ChecksOff)),
			Violations: []violation{},
		},
	}
	c.Coverage = coverageOf(cov)
	if c.Coverage.State == "nothing" {
		c.Grade = design.NothingReviewed
	}
	for _, f := range res.Findings {
		vp := design.Viewport("")
		if len(f.Viewports) > 0 {
			vp = f.Viewports[0]
		}
		c.Findings = append(c.Findings, critiqueFinding{
			FindingID: f.ID, Severity: peerSeverity(f.Severity), BastionSeverity: f.Severity, Kind: f.Kind, Dimension: f.Kind,
			Title: f.Title, Description: f.Description, Route: f.Route, Viewport: vp, Viewports: orNone(slices.Clone(f.Viewports)),
			ElementRef: orNil(f.Selector), Suggestion: orNil(f.Fix), EvidenceID: orNil(f.EvidenceID),
			Advisory: f.Advisory, Facts: orEmpty(f.Facts),
		})
		c.Measurements.Violations = append(c.Measurements.Violations, violation{
			FindingID: f.ID, Kind: f.Kind, Route: f.Route, Viewports: orNone(slices.Clone(f.Viewports)),
			ElementRef: orNil(f.Selector), Detail: clip.String(cmp.Or(f.Title, f.Description), 1000),
			BlockEligible: f.Severity == design.Blocker,
		})
	}
	if c.Grade == design.NothingReviewed {
		c.NotReviewed = append(c.NotReviewed, fmt.Sprintf("[bastion] nothing was reviewed: 0 of %d requested route(s) could be captured on this run. "+
			"The grade is reported as \"nothing_reviewed\" and nothing in this result is a judgment of the target.", len(cov.RoutesRequested)))
	}
	for _, s := range cov.Skipped {
		c.NotReviewed = append(c.NotReviewed, clip.String(s.What+": "+s.Reason, 2000))
	}
	for _, s := range cov.ChecksOff {
		c.NotReviewed = append(c.NotReviewed, clip.String("check "+s.What+" off: "+s.Reason, 2000))
	}
	for _, h := range res.Health {
		c.PageHealth = append(c.PageHealth, pageHealth{
			Route: h.Route, Viewport: h.Viewport, StatusCode: h.StatusCode, CaptureMS: h.CaptureDuration.Milliseconds(),
			ConsoleErrors: orNone(h.ConsoleErrors), FailedRequests: orNone(h.Failed), EgressBlocked: orNone(h.EgressBlocked),
			FontsNotLoaded: orNone(h.FontsNotLoaded),
		})
	}
	// Marks are numbered by this list, which a view may have cut (focus
	// leaves out nits): a mark of a finding left out is left out too. The
	// numbers drawn on the image are the whole list's, and the image is
	// sent only with the evidence view, whose list is whole.
	place := map[string]int{}
	for i, f := range res.Findings {
		place[f.ID] = i + 1
	}
	c.Overviews = []overviewWire{}
	for _, o := range res.Overviews {
		w := overviewWire{Route: o.Route, Viewport: o.Viewport, EvidenceID: o.EvidenceID, Height: o.Height, Marks: []overviewMarkRef{}}
		for _, m := range o.Marks {
			if n, ok := place[m.FindingID]; ok {
				w.Marks = append(w.Marks, overviewMarkRef{N: n, FindingID: m.FindingID})
			}
		}
		c.Overviews = append(c.Overviews, w)
	}
	c.Overall = overallOf(c)
	return c
}

func coverageOf(cov design.Coverage) coverageWire {
	w := coverageWire{
		RoutesRequested: dedup(cov.RoutesRequested), RoutesReviewed: dedup(cov.RoutesReviewed),
		ViewportsRequested: dedup(cov.ViewportsRequested), ViewportsReviewed: dedup(cov.ViewportsReviewed),
		CapturesSkipped: orNone(slices.Clone(cov.Skipped)),
	}
	w.RoutesSkipped = minus(w.RoutesRequested, w.RoutesReviewed)
	w.ViewportsSkipped = minus(w.ViewportsRequested, w.ViewportsReviewed)
	switch {
	case len(w.RoutesReviewed) == 0:
		w.State = "nothing"
	case len(w.RoutesSkipped) == 0 && len(w.ViewportsSkipped) == 0 && len(w.CapturesSkipped) == 0:
		w.State = "full"
	default:
		w.State = "partial"
	}
	return w
}

func dedup[T comparable](s []T) []T {
	out := []T{}
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func minus[T comparable](a, b []T) []T {
	out := []T{}
	for _, v := range a {
		if !slices.Contains(b, v) {
			out = append(out, v)
		}
	}
	return out
}

// overallOf is the one-paragraph verdict, derived from the measured result.
func overallOf(c *critique) string {
	if c.Grade == design.NothingReviewed {
		return fmt.Sprintf("Nothing was reviewed: none of the %d requested route(s) could be captured, so there is no judgment of this target.",
			len(c.Coverage.RoutesRequested))
	}
	n := map[design.Severity]int{}
	advisory := 0
	for _, f := range c.Findings {
		n[f.BastionSeverity]++
		if f.Advisory {
			advisory++
		}
	}
	lead := map[design.Grade]string{
		design.Ship:         "Ship: the measured checks found nothing to fix.",
		design.ShipWithNits: "Ship with nits: the measured checks found only nits and advisory findings.",
		design.NeedsWork:    "Needs work: the measured checks found defects to fix before shipping.",
		design.Blocked:      "Blocked: the measured checks found at least one blocker.",
	}[c.Grade]
	var b strings.Builder
	b.WriteString(cmp.Or(lead, "Grade "+string(c.Grade)+"."))
	fmt.Fprintf(&b, " %d finding(s): %d blocker, %d major, %d minor, %d nit", len(c.Findings), n[design.Blocker], n[design.Major], n[design.Minor], n[design.Nit])
	if advisory > 0 {
		fmt.Fprintf(&b, " (%d advisory, for a human to judge)", advisory)
	}
	fmt.Fprintf(&b, "; %d of %d route(s) reviewed at %d viewport(s) with %d check(s).",
		len(c.Coverage.RoutesReviewed), len(c.Coverage.RoutesRequested), len(c.Coverage.ViewportsReviewed), len(c.Measurements.ChecksRun))
	return b.String()
}
