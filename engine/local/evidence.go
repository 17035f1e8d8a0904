package local

import (
	"context"
	"image"

	"github.com/bastion-mcp/bastion/capture"
	"github.com/bastion-mcp/bastion/checks"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/evidence"
	"github.com/bastion-mcp/bastion/tokens"
)

// maxCrops bounds the crops one capture shoots: a page with more findings
// than this gets evidence for the first ones in the checks' order.
const maxCrops = 40

// shootEvidence judges s in its live tab as the review will (with set, or
// without one against the page's own tokens) and shoots the region around
// each finding's box, returning the annotated crops by box. Shooting a few
// regions instead of the whole page saves the full-page screenshot, which
// on a long page costs a second or more and most of the browser's peak
// memory. Crops are best effort: a region that cannot be shot has none.
func shootEvidence(tab context.Context, s *checks.Snapshot, set *tokens.Set, vp design.Viewport) map[design.Rect][]byte {
	if set == nil {
		set = s.PageTokens()
	}
	vw, vh, _ := vp.Size()
	// The page as the full-page screenshot framed it: as wide as the
	// viewport, or up to three viewports when it overflows sideways.
	page := image.Rect(0, 0, min(max(int(s.DocWidth+0.5), vw), 3*vw), max(int(s.DocHeight+0.5), vh))
	crops := map[design.Rect][]byte{}
	for _, f := range runChecks(s, set) {
		if _, done := crops[f.Box]; done || len(crops) >= maxCrops {
			continue
		}
		area := evidence.Area(f.Box, page)
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
		if crop, err := p.Crop(f.Box); err == nil {
			crops[f.Box] = crop
		}
	}
	return crops
}
