package enginehttp

import (
	"cmp"
	"math"
	"time"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/reviewmcp"
)

// EngineResult is a completed review in the engine-result shape (§15),
// mapped from bastion's measured result. What bastion does not do is
// stated, not invented: no model judged (metadata.model "none",
// provenance.model_backed false), so there is no confidence (no
// calibration, finding confidences absent, confidenceUnavailableReason
// says why).
type EngineResult struct {
	Grade                       design.Grade    `json:"grade"`
	Overall                     string          `json:"overall"`
	Findings                    []EngineFinding `json:"findings"`
	NotReviewed                 []string        `json:"notReviewed"`
	Artifacts                   Artifacts       `json:"artifacts"`
	ScreenshotRetentionSeconds  int64           `json:"screenshotRetentionSeconds"`
	Metadata                    Metadata        `json:"metadata"`
	Coverage                    Coverage        `json:"coverage"`
	ConfidenceUnavailableReason string          `json:"confidenceUnavailableReason"`
	HallucinationDrops          int             `json:"hallucinationDrops"` // 0: nothing is generated
	Measurements                Measurements    `json:"measurements"`
	Provenance                  any             `json:"provenance"`
}

// EngineFinding is one finding. Viewport is the first viewport the defect
// was seen at (its evidence is cut there); Viewports lists all of them.
type EngineFinding struct {
	ID           string            `json:"id"`
	Dimension    string            `json:"dimension"` // the check's kind, e.g. contrast
	Severity     design.Severity   `json:"severity"`  // nit|minor|major|blocker
	Title        string            `json:"title"`
	Description  string            `json:"description"`
	Route        string            `json:"route"`
	Viewport     design.Viewport   `json:"viewport"`
	Viewports    []design.Viewport `json:"viewports"`
	Element      *string           `json:"element"`
	ScreenshotID *string           `json:"screenshotId"`
	Suggestion   *string           `json:"suggestion"`
	Advisory     bool              `json:"advisory"`
	Facts        design.Facts      `json:"facts"`
}

// Artifacts lists the annotated screenshots and, in a field §15 does not
// name (a reader of the shape that does not know it skips it), bastion's
// page overviews.
type Artifacts struct {
	AnnotatedScreenshots []Screenshot   `json:"annotatedScreenshots"`
	PageOverviews        []PageOverview `json:"pageOverviews,omitempty"`
}

// PageOverview is a thumbnail of the top of one reviewed page, at URL,
// with findings outlined and numbered on it (design.Overview): a mark's N
// is its finding's place in findings, counting from 1, and is drawn in
// the image, so a reader that reorders the findings must renumber or drop
// the overview.
type PageOverview struct {
	Route    string          `json:"route"`
	Viewport design.Viewport `json:"viewport"`
	URL      string          `json:"url"`
	Scale    float64         `json:"scale"` // image px per CSS px
	Width    float64         `json:"width"` // CSS px of the page shown
	Height   float64         `json:"height"`
	Marks    []OverviewMark  `json:"marks"`
}

// OverviewMark is one finding on an overview, its box in CSS px of the
// page.
type OverviewMark struct {
	N         int     `json:"n"`
	FindingID string  `json:"findingId"`
	X         float64 `json:"x"`
	Y         float64 `json:"y"`
	Width     float64 `json:"width"`
	Height    float64 `json:"height"`
}

// Screenshot is one finding's annotated crop.
type Screenshot struct {
	FindingID string `json:"findingId"`
	URL       string `json:"url"`
}

// Metadata names what produced the result.
type Metadata struct {
	EngineVersion  string  `json:"engineVersion"`
	Model          string  `json:"model"`         // "none": measured checks, no model
	PromptVersion  string  `json:"promptVersion"` // "none": no prompt
	CaptureVersion string  `json:"captureVersion"`
	RubricVersion  string  `json:"rubricVersion"`
	UIDNAVersion   *string `json:"uiDnaVersion"`
}

// Coverage is §15's coverage.
type Coverage struct {
	RoutesRequested    []string          `json:"routesRequested"`
	RoutesReviewed     []string          `json:"routesReviewed"`
	ViewportsRequested []design.Viewport `json:"viewportsRequested"`
	ViewportsReviewed  []design.Viewport `json:"viewportsReviewed"`
}

// Measurements are the measured violations, which the peer's mapping passes
// through as measured facts (never marked unjudged).
type Measurements struct {
	State      string      `json:"state"` // "reported"
	ChecksRun  []string    `json:"checksRun"`
	Violations []Violation `json:"violations"`
}

// Violation is one finding as a measurement.
type Violation struct {
	Kind          string            `json:"kind"`
	Route         string            `json:"route"`
	Viewports     []design.Viewport `json:"viewports"`
	Element       *string           `json:"element"`
	Detail        string            `json:"detail"`
	BlockEligible bool              `json:"blockEligible"`
}

// EngineVersion is metadata.engineVersion; the command sets it to the
// build's version.
var EngineVersion = "bastion"

const noConfidence = "bastion's findings are measurements of the captured page (contrast ratios, overflow, target sizes), not a model's judgment, so there is no model confidence to report"

// ResultOf maps a completed review job's result onto the engine-result
// shape. The overall text, not-reviewed lines, coverage and provenance come
// from reviewmcp.CritiqueOf, the one mapping every bastion wire uses.
func ResultOf(j review.Job, res *design.Result) *EngineResult {
	c := reviewmcp.CritiqueOf(j.ReviewID, res)
	out := &EngineResult{
		Grade: c.Grade, Overall: c.Overall, Findings: []EngineFinding{}, NotReviewed: c.NotReviewed,
		Artifacts:                   Artifacts{AnnotatedScreenshots: []Screenshot{}},
		ScreenshotRetentionSeconds:  int64(math.Max(0, time.Until(j.ExpiresAt).Seconds())),
		ConfidenceUnavailableReason: noConfidence,
		Metadata: Metadata{
			EngineVersion: EngineVersion, Model: "none", PromptVersion: "none",
			CaptureVersion: "bastion-capture@1", RubricVersion: "bastion-checks@1",
		},
		Coverage: Coverage{
			RoutesRequested: c.Coverage.RoutesRequested, RoutesReviewed: c.Coverage.RoutesReviewed,
			ViewportsRequested: c.Coverage.ViewportsRequested, ViewportsReviewed: c.Coverage.ViewportsReviewed,
		},
		Measurements: Measurements{State: "reported", ChecksRun: c.Measurements.ChecksRun, Violations: []Violation{}},
		Provenance:   c.Provenance,
	}
	for _, f := range c.Findings {
		out.Findings = append(out.Findings, EngineFinding{
			ID: f.FindingID, Dimension: f.Dimension, Severity: f.BastionSeverity, Title: f.Title, Description: f.Description,
			Route: f.Route, Viewport: f.Viewport, Viewports: f.Viewports, Element: f.ElementRef, ScreenshotID: f.EvidenceID,
			Suggestion: f.Suggestion, Advisory: f.Advisory, Facts: f.Facts,
		})
	}
	for _, v := range c.Measurements.Violations {
		out.Measurements.Violations = append(out.Measurements.Violations, Violation{
			Kind: v.Kind, Route: v.Route, Viewports: v.Viewports, Element: v.ElementRef, Detail: cmp.Or(v.Detail, v.Kind), BlockEligible: v.BlockEligible,
		})
	}
	return out
}
