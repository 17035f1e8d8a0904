package local

import (
	"context"
	"image"
	"slices"

	"github.com/bastion-mcp/bastion/capture"
	"github.com/bastion-mcp/bastion/checks"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/evidence"
	"github.com/bastion-mcp/bastion/tokens"
)

// maxCrops bounds the crops one capture shoots: a page with more findings
// than this gets evidence for the first ones in the checks' order.
const maxCrops = 40

// cropSet holds a capture's crops by the finding they show: two findings
// on one box share a crop only when they are of one kind, since the marks
// drawn on it depend on the kind.
type cropSet map[cropKey][]byte

type cropKey struct {
	kind string
	box  design.Rect
}

func (c cropSet) of(f *design.Finding) []byte { return c[cropKey{f.Kind, f.Box}] }

// shootEvidence judges s in its live tab as the review will (with set, or
// without one against the page's own tokens) and shoots the region around
// each finding's box, returning the annotated crops. Shooting a few
// regions instead of the whole page saves the full-page screenshot, which
// on a long page costs a second or more and most of the browser's peak
// memory.
func shootEvidence(tab context.Context, s *checks.Snapshot, set *tokens.Set, vp design.Viewport) cropSet {
	if set == nil {
		set = s.PageTokens()
	}
	return shootCrops(tab, s, vp, runChecks(s, set))
}

// shootRecheck shoots each rechecked finding's element as it is now
// (rechecked), so a recheck can show it beside the review's crop.
func shootRecheck(tab context.Context, s *checks.Snapshot, set *tokens.Set, vp design.Viewport, fs []design.Finding) cropSet {
	if set == nil {
		set = s.PageTokens()
	}
	var now []design.Finding
	for _, f := range fs {
		if g, ok := rechecked(s, set, f); ok {
			now = append(now, g)
		}
	}
	return shootCrops(tab, s, vp, now)
}

// rechecked is f as s measures it now: its element's box, and the facts
// its recheck measured (which draw the marks: the viewport edge, the
// spacing band). False when the element is gone.
func rechecked(s *checks.Snapshot, set *tokens.Set, f design.Finding) (design.Finding, bool) {
	box, ok := s.BoxOf(f.Selector)
	if !ok {
		return f, false
	}
	f.Box = box
	if o := remeasure(s, set, f); o.Facts != nil {
		f.Facts = o.Facts
	}
	return f, true
}

// shootCrops shoots the region around each of fs's boxes in the live tab.
// Crops are best effort: a region that cannot be shot has none.
func shootCrops(tab context.Context, s *checks.Snapshot, vp design.Viewport, fs []design.Finding) cropSet {
	vw, vh, _ := vp.Size()
	// The page as the full-page screenshot framed it: as wide as the
	// viewport, or up to three viewports when it overflows sideways.
	page := image.Rect(0, 0, min(max(int(s.DocWidth+0.5), vw), 3*vw), max(int(s.DocHeight+0.5), vh))
	crops := cropSet{}
	for _, f := range fs {
		key := cropKey{f.Kind, f.Box}
		if _, done := crops[key]; done || len(crops) >= maxCrops {
			continue
		}
		m := marks(&f)
		area := evidence.Area(f.Box, m, page)
		if area.Empty() {
			continue
		}
		shot, got, err := capture.Region(tab, area, vw, vh)
		if err != nil {
			if tab.Err() != nil {
				break
			}
			continue
		}
		p, err := evidence.DecodeAt(shot, got.Min)
		if err != nil {
			continue
		}
		if crop, err := p.Crop(f.Box, m); err == nil {
			crops[key] = crop
		}
	}
	return crops
}

// marks is what f's crop draws besides its outline, read from the facts
// its check measured: the viewport's edge an element runs past, the
// margin, padding or gap a spacing finding is about. A fact missing or of
// the wrong type draws nothing; the crop is still cut.
func marks(f *design.Finding) evidence.Marks {
	num := func(k string) float64 {
		switch v := f.Facts[k].(type) {
		case float64:
			return v
		case int:
			return float64(v)
		}
		return 0
	}
	str := func(k string) string { v, _ := f.Facts[k].(string); return v }
	switch f.Kind {
	case checks.KindViewportOverflow:
		return evidence.Marks{Edge: num("viewport_width")}
	case checks.KindOffScaleSpacing:
		if b, ok := band(f.Box, str("property"), num("value_px")); ok {
			return evidence.Marks{Bands: []evidence.Band{b}}
		}
	case checks.KindSpacingRhythm:
		if b, ok := band(f.Box, "margin-"+str("gap_edge"), num("gap_px")); ok {
			return evidence.Marks{Bands: []evidence.Band{b}}
		}
	}
	return evidence.Marks{}
}

// band is the space a spacing property of v px takes beside or inside box:
// a margin outside the named side, a padding inside it. Gaps between a
// container's children and negative margins have no one place and draw
// nothing.
func band(box design.Rect, prop string, v float64) (evidence.Band, bool) {
	if !(v > 0) {
		return evidence.Band{}, false
	}
	var r design.Rect
	padding := false
	switch prop {
	case "margin-top":
		r = design.Rect{X: box.X, Y: box.Y - v, W: box.W, H: v}
	case "margin-bottom":
		r = design.Rect{X: box.X, Y: box.Y + box.H, W: box.W, H: v}
	case "margin-left":
		r = design.Rect{X: box.X - v, Y: box.Y, W: v, H: box.H}
	case "margin-right":
		r = design.Rect{X: box.X + box.W, Y: box.Y, W: v, H: box.H}
	case "padding-top":
		r, padding = design.Rect{X: box.X, Y: box.Y, W: box.W, H: min(v, box.H)}, true
	case "padding-bottom":
		r, padding = design.Rect{X: box.X, Y: box.Y + box.H - min(v, box.H), W: box.W, H: min(v, box.H)}, true
	case "padding-left":
		r, padding = design.Rect{X: box.X, Y: box.Y, W: min(v, box.W), H: box.H}, true
	case "padding-right":
		r, padding = design.Rect{X: box.X + box.W - min(v, box.W), Y: box.Y, W: min(v, box.W), H: box.H}, true
	default:
		return evidence.Band{}, false
	}
	return evidence.Band{Rect: r, Padding: padding}, true
}

// Size of an overview: at most overviewWidth image px wide and at most
// overviewScale of the page, showing at most overviewScreens viewport
// heights of it from the top. The cap bounds the one shot that lays the
// page out past the viewport (capture.Overview); findings further down
// have their crops but no mark.
const (
	overviewWidth   = 320
	overviewScale   = 0.5
	overviewScreens = 3
)

// overviewShot is a page's thumbnail before its findings are marked.
type overviewShot struct {
	png    []byte
	scale  float64
	width  float64 // CSS px of the page shown, from its top-left
	height float64
}

// shootOverview shoots the top of s's page, scaled down, in the live tab:
// best effort, nil when it cannot be shot.
func shootOverview(tab context.Context, s *checks.Snapshot, vp design.Viewport) *overviewShot {
	vw, vh, _ := vp.Size()
	// As wide as the crops' page (shootCrops): what runs past the
	// viewport's edge is in the picture.
	w := min(max(int(s.DocWidth+0.5), vw), 3*vw)
	h := min(max(int(s.DocHeight+0.5), vh), overviewScreens*vh)
	scale := min(overviewScale, evidence.OverviewScale(float64(w), overviewWidth))
	shot, err := capture.Overview(tab, image.Rect(0, 0, w, h), scale)
	if err != nil {
		return nil
	}
	return &overviewShot{png: shot, scale: scale, width: float64(w), height: float64(h)}
}

// markOverviews marks each reviewed page's thumbnail with the findings seen
// there, numbered by their place in findings, and returns the overviews
// and ev with their images added. A finding's box at a viewport other than
// its first is read from that capture (its box in the finding is the first
// viewport's).
func markOverviews(findings []design.Finding, jobs []*shot, ev []design.Evidence) ([]design.Overview, []design.Evidence) {
	var out []design.Overview
	for _, j := range jobs {
		if j.err != nil || j.overview == nil || j.snap == nil {
			continue
		}
		o := design.Overview{Route: j.route, Viewport: j.vp, Scale: j.overview.scale,
			Width: j.overview.width, Height: j.overview.height, Marks: []design.OverviewMark{}}
		var boxes []evidence.Numbered
		for i, f := range findings {
			if f.Route != j.route || !slices.Contains(f.Viewports, j.vp) {
				continue
			}
			box, ok := f.Box, f.Viewports[0] == j.vp
			if !ok && f.Selector != "" {
				box, ok = j.snap.BoxOf(f.Selector)
			}
			if !ok || box.W <= 0 || box.H <= 0 || box.Y >= o.Height || box.Y+box.H <= 0 || box.X >= o.Width || box.X+box.W <= 0 {
				continue
			}
			o.Marks = append(o.Marks, design.OverviewMark{N: i + 1, FindingID: f.ID, Box: box})
			boxes = append(boxes, evidence.Numbered{N: i + 1, Box: box})
		}
		img, err := evidence.Overview(j.overview.png, o.Scale, boxes)
		if err != nil {
			continue
		}
		o.EvidenceID = evidence.ID("overview "+j.route+" "+string(j.vp), img)
		ev = append(ev, design.Evidence{ID: o.EvidenceID, MIMEType: "image/png", Data: img})
		out = append(out, o)
	}
	return out, ev
}
