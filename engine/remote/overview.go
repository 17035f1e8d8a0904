package remote

import (
	"context"
	"math"
	"slices"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/enginehttp"
	"github.com/bastion-mcp/bastion/evidence"
)

// fetchOverviews fetches the page overviews an engine's result names and
// maps them back onto design.Overview. The numbers are drawn in the
// image, so an overview is kept only when every mark names a finding of
// fs by its place in fs (counting from 1) and its geometry is finite; an
// overview off the review's routes and viewports, or whose image is not
// fetched (fetchArtifact's rules), is dropped and logged.
func (e *Engine) fetchOverviews(ctx context.Context, p *peer, asked wireRequest, ws []enginehttp.PageOverview, fs []design.Finding) ([]design.Overview, []design.Evidence) {
	place := map[string]int{}
	for i, f := range fs {
		place[f.ID] = i + 1
	}
	var outs []design.Overview
	var ev []design.Evidence
	for _, w := range ws {
		o, ok := overviewOf(w, place)
		if !ok || !slices.Contains(asked.Routes, w.Route) || !slices.Contains(asked.Viewports, string(w.Viewport)) {
			e.log.Warn("remote: an overview was dropped", "engine", p.base, "route", w.Route, "viewport", w.Viewport, "err", "its marks or geometry do not match the result")
			continue
		}
		data, err := e.fetchArtifact(ctx, p, w.URL)
		if err != nil {
			e.log.Warn("remote: an overview was not fetched", "engine", p.base, "route", w.Route, "viewport", w.Viewport, "err", err)
			continue
		}
		// Named as bastion's engines name it, by page and bytes: an
		// engine's own ids are not trusted to be unique across engines.
		o.EvidenceID = evidence.ID("overview "+o.Route+" "+string(o.Viewport), data)
		outs = append(outs, o)
		ev = append(ev, design.Evidence{ID: o.EvidenceID, MIMEType: "image/png", Data: data})
	}
	return outs, ev
}

func overviewOf(w enginehttp.PageOverview, place map[string]int) (design.Overview, bool) {
	o := design.Overview{Route: w.Route, Viewport: w.Viewport, Scale: w.Scale, Width: w.Width, Height: w.Height, Marks: []design.OverviewMark{}}
	if !(w.Scale > 0 && w.Scale <= 1) || !positive(w.Width) || !positive(w.Height) {
		return o, false
	}
	for _, m := range w.Marks {
		box := design.Rect{X: m.X, Y: m.Y, W: m.Width, H: m.Height}
		if place[m.FindingID] != m.N || m.N <= 0 || !finite(box.X) || !finite(box.Y) || !positive(box.W) || !positive(box.H) {
			return o, false
		}
		o.Marks = append(o.Marks, design.OverviewMark{N: m.N, FindingID: m.FindingID, Box: box})
	}
	return o, true
}

func finite(f float64) bool   { return !math.IsNaN(f) && !math.IsInf(f, 0) }
func positive(f float64) bool { return f > 0 && !math.IsInf(f, 1) }

// keepNumbered keeps the overviews whose marks still number their
// findings by place in fs after a merge reordered them (the image cannot
// be renumbered), and the evidence that is not a dropped overview's.
func keepNumbered(ovs []design.Overview, ev []design.Evidence, fs []design.Finding) ([]design.Overview, []design.Evidence) {
	place := map[string]int{}
	for i, f := range fs {
		place[f.ID] = i + 1
	}
	var kept []design.Overview
	dropped := map[string]bool{}
	for _, o := range ovs {
		if slices.ContainsFunc(o.Marks, func(m design.OverviewMark) bool { return place[m.FindingID] != m.N }) {
			dropped[o.EvidenceID] = true
			continue
		}
		kept = append(kept, o)
	}
	ev = slices.DeleteFunc(ev, func(e design.Evidence) bool { return dropped[e.ID] })
	return kept, ev
}
