package rest

import (
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/reviewmcp"
)

// The REST API's answers carrying a review or a recheck are its own wire
// types, not review's or design's structs, so a field renamed in the stored
// row cannot silently rename a REST member. Where a member means what an MCP
// tool's member means it has the MCP name: the mapping is reviewmcp's
// (CritiqueOf, RecheckOf), shared rather than copied.

// reviewWire is a completed review: the MCP Critique with each finding's
// box, which REST clients (unlike MCP's evidence view) get as numbers.
type reviewWire struct {
	*reviewmcp.Critique
	// Findings shadows the Critique's own findings: encoding/json prefers the
	// shallower field.
	Findings []findingWire `json:"findings"`
}

type findingWire struct {
	reviewmcp.CritiqueFinding
	Box boxWire `json:"box"` // where, on the first viewport's capture, in CSS pixels
}

type boxWire struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	W float64 `json:"w"`
	H float64 `json:"h"`
}

// reviewOf maps a completed review's result. reviewmcp.CritiqueOf keeps
// the result's finding order, so the i-th wire finding is res.Findings[i].
func reviewOf(reviewID string, res *design.Result) *reviewWire {
	if res == nil {
		return nil
	}
	c := reviewmcp.CritiqueOf(reviewID, res)
	w := &reviewWire{Critique: c, Findings: make([]findingWire, len(c.Findings))}
	for i, f := range c.Findings {
		b := res.Findings[i].Box
		w.Findings[i] = findingWire{CritiqueFinding: f, Box: boxWire{X: b.X, Y: b.Y, W: b.W, H: b.H}}
	}
	return w
}

func recheckOf(r *review.RecheckReport) *reviewmcp.Recheck {
	if r == nil {
		return nil
	}
	return reviewmcp.RecheckOf(r)
}

// getResponse is GET /reviews/{job_id}'s answer: the evidence view adds the
// crops' bytes as base64 (encoding/json's []byte form).
type getResponse struct {
	SchemaVersion string             `json:"schema_version"`
	Job           review.Job         `json:"job"`
	Summary       *reviewmcp.Summary `json:"summary,omitempty"` // the summary view's
	Review        *reviewWire        `json:"review,omitempty"`  // every other view's
	Recheck       *reviewmcp.Recheck `json:"recheck,omitempty"`
	Evidence      []evidence         `json:"evidence,omitempty"`
}

// getOf maps a Get's answer for view: the summary view (the default) carries
// the condensed summary instead of the whole review, as the MCP tool's does.
func getOf(out *review.GetResult, view review.View) getResponse {
	r := getResponse{SchemaVersion: out.SchemaVersion, Job: out.Job, Recheck: recheckOf(out.Recheck), Evidence: renderEvidence(out.Evidence)}
	switch {
	case out.Review == nil:
	case view == "" || view == review.ViewSummary:
		r.Summary = reviewmcp.SummaryOf(out.Job.ReviewID, out.Review)
		r.Summary.DismissedBefore = out.DismissedBefore
	default:
		r.Review = reviewOf(out.Job.ReviewID, out.Review)
	}
	return r
}

type evidence struct {
	ID       string `json:"id"`
	MIMEType string `json:"mime_type"`
	Data     []byte `json:"data"`
}

func renderEvidence(ev []design.Evidence) []evidence {
	if len(ev) == 0 {
		return nil
	}
	out := make([]evidence, len(ev))
	for i, e := range ev {
		out[i] = evidence{ID: e.ID, MIMEType: e.MIMEType, Data: e.Data}
	}
	return out
}

// recheckResponse is POST /reviews/{review_id}/recheck's answer.
type recheckResponse struct {
	SchemaVersion string             `json:"schema_version"`
	Job           review.Job         `json:"job"`
	Budget        review.Budget      `json:"budget"`
	Recheck       *reviewmcp.Recheck `json:"recheck,omitempty"` // set when a replayed job has completed
}

func recheckResponseOf(out *review.RecheckResult) recheckResponse {
	return recheckResponse{SchemaVersion: out.SchemaVersion, Job: out.Job, Budget: out.Budget, Recheck: recheckOf(out.Recheck)}
}
