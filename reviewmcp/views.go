package reviewmcp

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/internal/clip"
)

// The views of a completed review, each what its name says:
//
//   - summary: the grade, counts by severity and by kind, coverage and the
//     topFindings most important findings, one line each: a few hundred
//     bytes whatever the number of findings;
//   - findings: the whole critique, every finding with its facts;
//   - focus: the critique with only the actionable findings (grounded: an
//     element, a concrete fix, not advisory);
//   - evidence: the critique and the crops as content blocks.
//
// Text content is a short rendering for a person or a model reading only
// content; the data is in structuredContent, once.

// topFindings is how many findings the summary names.
const topFindings = 3

// maxLine bounds one finding's line in the summary.
const maxLine = 200

// summaryWire is the summary view's "summary" member.
type summaryWire struct {
	ReviewID   string            `json:"review_id"`
	Grade      design.Grade      `json:"grade"`
	Overall    string            `json:"overall"`
	Findings   int               `json:"findings"`
	Actionable int               `json:"actionable"`
	Advisory   int               `json:"advisory"`
	BySeverity map[string]int    `json:"by_severity"` // bastion's severities: blocker, major, minor, nit
	ByKind     map[string]int    `json:"by_kind"`
	Coverage   summaryCoverage   `json:"coverage"`
	Top        []summaryFinding  `json:"top_findings"`
	Provenance summaryProvenance `json:"provenance"`
	// DismissedBefore counts the tenant's earlier dismissals of each kind
	// this review has (review.GetResult.DismissedBefore); absent when none.
	DismissedBefore map[string]int `json:"dismissed_before,omitempty"`
}

type summaryCoverage struct {
	State             string            `json:"state"`
	RoutesRequested   int               `json:"routes_requested"`
	RoutesReviewed    int               `json:"routes_reviewed"`
	ViewportsReviewed []design.Viewport `json:"viewports_reviewed"`
	ViewportsSkipped  []design.Viewport `json:"viewports_skipped"`
	CapturesSkipped   int               `json:"captures_skipped"`
	ChecksRun         int               `json:"checks_run"`
	ChecksOff         int               `json:"checks_off"`
}

type summaryFinding struct {
	FindingID string `json:"finding_id"`
	Severity  string `json:"severity"` // bastion's
	Kind      string `json:"kind"`
	Line      string `json:"line"`
}

// summaryProvenance is the critique's provenance without its detail text.
type summaryProvenance struct {
	ModelBacked bool   `json:"model_backed"`
	Source      string `json:"source"`
}

// actionable reports whether an agent can apply f's fix on its own; the
// rule is review's grounded (the focus view's filter), read off the wire.
func actionable(f critiqueFinding) bool {
	return f.ElementRef != nil && f.Suggestion != nil && !f.Advisory
}

// summaryOf condenses a critique.
func summaryOf(c *critique) *summaryWire {
	s := &summaryWire{
		ReviewID: c.ReviewID, Grade: c.Grade, Overall: c.Overall, Findings: len(c.Findings),
		BySeverity: map[string]int{string(design.Blocker): 0, string(design.Major): 0, string(design.Minor): 0, string(design.Nit): 0},
		ByKind:     map[string]int{},
		Coverage: summaryCoverage{
			State: c.Coverage.State, RoutesRequested: len(c.Coverage.RoutesRequested), RoutesReviewed: len(c.Coverage.RoutesReviewed),
			ViewportsReviewed: c.Coverage.ViewportsReviewed, ViewportsSkipped: c.Coverage.ViewportsSkipped,
			CapturesSkipped: len(c.Coverage.CapturesSkipped), ChecksRun: len(c.Measurements.ChecksRun), ChecksOff: len(c.Measurements.ChecksOff),
		},
		Top:        []summaryFinding{},
		Provenance: summaryProvenance{ModelBacked: c.Provenance.ModelBacked, Source: c.Provenance.Source},
	}
	for _, f := range c.Findings {
		s.BySeverity[string(f.BastionSeverity)]++
		s.ByKind[f.Kind]++
		if f.Advisory {
			s.Advisory++
		}
		if actionable(f) {
			s.Actionable++
		}
	}
	for _, f := range mostImportant(c.Findings, topFindings) {
		s.Top = append(s.Top, summaryFinding{FindingID: f.FindingID, Severity: string(f.BastionSeverity), Kind: f.Kind, Line: shortLine(f)})
	}
	return s
}

// mostImportant returns the n findings to fix first: worst severity, then
// actionable before not, then seen at more viewports; ties keep the
// critique's (deterministic) order.
func mostImportant(fs []critiqueFinding, n int) []critiqueFinding {
	out := slices.Clone(fs)
	slices.SortStableFunc(out, func(a, b critiqueFinding) int {
		return cmp.Or(
			cmp.Compare(a.BastionSeverity.Rank(), b.BastionSeverity.Rank()),
			cmp.Compare(rankBool(actionable(b)), rankBool(actionable(a))),
			cmp.Compare(len(b.Viewports), len(a.Viewports)),
		)
	})
	return out[:min(n, len(out))]
}

func rankBool(b bool) int {
	if b {
		return 1
	}
	return 0
}

// shortLine is a finding in one bounded line, without its fix.
func shortLine(f critiqueFinding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s @ %s (%s", f.Title, f.Route, strings.Join(viewportNames(f.Viewports), ", "))
	if f.ElementRef != nil {
		fmt.Fprintf(&b, ", `%s`", *f.ElementRef)
	}
	b.WriteString(")")
	return clip.String(b.String(), maxLine)
}

// statusText is a job's state in a sentence.
func statusText(j jobWire) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s job %s: %s", j.Kind, j.JobID, j.Status)
	if j.Stage != "" {
		b.WriteString(" (" + j.Stage)
		if p := j.Progress; p != nil {
			fmt.Fprintf(&b, ", %d of %d captures done", p.Done, p.Total)
		}
		b.WriteString(")")
	}
	if j.Error != nil {
		fmt.Fprintf(&b, ": %s: %s", j.Error.Code, j.Error.Message)
	}
	b.WriteString(".")
	if j.Status == "queued" || j.Status == "running" {
		fmt.Fprintf(&b, " Poll design_review_get again in %d ms (or pass wait_ms).", j.PollAfterMS)
	}
	return b.String()
}

// summaryText renders the summary view.
func summaryText(s *summaryWire, c *critique) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Design review (%s): %s\n%s\n", s.Grade, s.Overall, coverageLine(c.Coverage))
	if len(s.Top) > 0 {
		b.WriteString("Most important:\n")
		for i, f := range s.Top {
			fmt.Fprintf(&b, "%d. [%s] %s\n", i+1, f.Severity, f.Line)
		}
	}
	fmt.Fprintf(&b, "View findings for all %d, focus for the %d actionable, evidence for the crops.", s.Findings, s.Actionable)
	return b.String()
}

// findingsText renders the findings and focus views: a header and one line
// per finding.
func findingsText(c *critique, view string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Design review (%s), %s view: %d finding(s).\n%s", c.Grade, view, len(c.Findings), coverageLine(c.Coverage))
	for _, f := range c.Findings {
		b.WriteString("\n" + findingLine(f))
	}
	return b.String()
}

// recheckText renders a completed recheck's outcomes.
func recheckText(r *recheckWire) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Recheck of review %s: %d passed, %d failed, %d inconclusive.", r.ReviewID,
		r.Summary[string(design.Passed)], r.Summary[string(design.Failed)], r.Summary[string(design.Inconclusive)])
	for _, o := range r.Outcomes {
		fmt.Fprintf(&b, "\n%s: %s. %s", o.FindingID, o.Outcome, clip.String(o.Reason, maxLine))
	}
	return b.String()
}

// viewResult is a successful result: the payload as compact
// structuredContent and text as the one text block.
func viewResult(payload any, text string) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, fault.Wrap(err, fault.InternalError, "the result could not be encoded")
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: json.RawMessage(b),
	}, nil
}
