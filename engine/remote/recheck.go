package remote

import (
	"context"
	"slices"
	"strings"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/fault"
)

// Recheck reviews each finding's route at its first viewport (the one its
// evidence was cut at) in full, as §14 has no recheck request, and reports
// per finding: failed when the review finds it again there (matched by id,
// else by kind, route and selector), passed when the capture was reviewed
// and it is gone, inconclusive when the capture could not be taken. A
// failed outcome carries the new review's crop of the element; a passed
// one has none, as the peer crops only what it finds.
func (e *Engine) Recheck(ctx context.Context, req engine.RecheckRequest) ([]design.RecheckOutcome, error) {
	if len(req.Findings) == 0 {
		return nil, fault.New(fault.InvalidArgument, "no findings to recheck")
	}
	var rq engine.Request
	rq.URL, rq.Tokens = req.URL, req.Tokens
	for _, f := range req.Findings {
		if len(f.Viewports) == 0 {
			return nil, fault.New(fault.InvalidArgument, "a finding to recheck has no viewport")
		}
		if !slices.Contains(rq.Routes, f.Route) {
			rq.Routes = append(rq.Routes, f.Route)
		}
		if !slices.Contains(rq.Viewports, f.Viewports[0]) {
			rq.Viewports = append(rq.Viewports, f.Viewports[0])
		}
	}
	res, err := e.Review(ctx, rq)
	if err != nil {
		return nil, err
	}
	out := make([]design.RecheckOutcome, len(req.Findings))
	for i, f := range req.Findings {
		out[i] = outcomeOf(f, res)
	}
	return out, nil
}

func outcomeOf(f design.Finding, res *design.Result) design.RecheckOutcome {
	vp := f.Viewports[0]
	o := design.RecheckOutcome{FindingID: f.ID}
	for _, g := range res.Findings {
		same := g.ID == f.ID || (g.Kind == f.Kind && g.Route == f.Route && g.Selector == f.Selector)
		if same && slices.Contains(g.Viewports, vp) {
			o.Outcome, o.Facts = design.Failed, g.Facts
			o.Reason = "a full review of " + f.Route + " at " + string(vp) + " measured the defect again"
			// The review's crop of it is the element now (when cut at vp).
			if i := slices.IndexFunc(res.Evidence, func(e design.Evidence) bool { return e.ID == g.EvidenceID }); i >= 0 && g.EvidenceID != "" && g.Viewports[0] == vp {
				o.EvidenceID, o.Evidence = g.EvidenceID, &res.Evidence[i]
			}
			return o
		}
	}
	cov := res.Coverage
	if !slices.Contains(cov.RoutesReviewed, f.Route) || !slices.Contains(cov.ViewportsReviewed, vp) || skipped(cov, f.Route, vp) {
		o.Outcome = design.Inconclusive
		o.Reason = "the engine could not review " + f.Route + " at " + string(vp)
		return o
	}
	o.Outcome = design.Passed
	o.Reason = "a full review of " + f.Route + " at " + string(vp) + " no longer finds it (the engine API has no recheck: a removed element also reads as passed)"
	return o
}

// skipped reports whether the coverage skips route at vp, whole or in part
// (bastion's engines name a skip "ROUTE @ VIEWPORT", with " (partly)" for a
// page measured in part). Skips come back from prose (notReviewed), so an
// engine naming them otherwise is not matched; the reviewed lists are the
// firm signal.
func skipped(cov design.Coverage, route string, vp design.Viewport) bool {
	for _, s := range cov.Skipped {
		if strings.HasPrefix(s.What, route+" @ "+string(vp)) {
			return true
		}
	}
	return false
}
