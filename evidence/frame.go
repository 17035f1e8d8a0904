package evidence

import (
	"image"
	"math"

	"github.com/bastion-mcp/bastion/design"
)

// frame is what a crop of el with marks m shows, before its edges are
// moved to clean cuts: el and every mark, padded, grown to the least size
// around its centre (shifted, not cut, where it meets the page's edge),
// clipped to bounds and cut to MaxWidth × MaxHeight from its top-left.
func frame(el image.Rectangle, m Marks, bounds image.Rectangle) image.Rectangle {
	focus := el
	for _, b := range m.Bands {
		if r, ok := pixelRect(b.Rect); ok {
			focus = focus.Union(r)
		}
	}
	if x, ok := edgeX(m); ok {
		focus = focus.Union(image.Rect(x-1, el.Min.Y, x+1, el.Max.Y))
	}
	a := image.Rect(focus.Min.X-Pad, focus.Min.Y-Pad, focus.Max.X+Pad, focus.Max.Y+Pad)
	a = grow(a, MinWidth, MinHeight, bounds).Intersect(bounds)
	// The element is what the crop is for: when the marks make the frame
	// too big, keep the element's corner in it.
	if a.Dx() > MaxWidth {
		a.Min.X = max(a.Min.X, el.Min.X-Pad)
		a.Max.X = a.Min.X + MaxWidth
	}
	if a.Dy() > MaxHeight {
		a.Min.Y = max(a.Min.Y, el.Min.Y-Pad)
		a.Max.Y = a.Min.Y + MaxHeight
	}
	return a
}

// grow widens r about its centre to at least w × h, then slides it back
// inside bounds where that is possible.
func grow(r image.Rectangle, w, h int, bounds image.Rectangle) image.Rectangle {
	if d := w - r.Dx(); d > 0 {
		r.Min.X -= d / 2
		r.Max.X += d - d/2
	}
	if d := h - r.Dy(); d > 0 {
		r.Min.Y -= d / 2
		r.Max.Y += d - d/2
	}
	shift := func(lo, hi, blo, bhi int) int {
		switch {
		case lo < blo:
			return min(blo-lo, max(bhi-hi, 0))
		case hi > bhi:
			return -min(hi-bhi, max(lo-blo, 0))
		}
		return 0
	}
	return r.Add(image.Pt(
		shift(r.Min.X, r.Max.X, bounds.Min.X, bounds.Max.X),
		shift(r.Min.Y, r.Max.Y, bounds.Min.Y, bounds.Max.Y)))
}

// cleanCut moves a's top and bottom edges, each by at most Slack outward
// or Pad/2 inward (never onto el), to the nearest rows where the cut runs
// between lines of text instead of through their glyphs. An edge with no
// clean row within reach stays where it is; so does one at the page's end.
func (p *Page) cleanCut(a, el image.Rectangle) image.Rectangle {
	b := p.img.Rect
	if y, ok := p.nearestClean(a, a.Min.Y, max(b.Min.Y, a.Min.Y-Slack), min(a.Min.Y+Pad/2, el.Min.Y)); ok {
		a.Min.Y = y
	}
	if y, ok := p.nearestClean(a, a.Max.Y, max(a.Max.Y-Pad/2, el.Max.Y), min(b.Max.Y, a.Max.Y+Slack)); ok {
		a.Max.Y = y
	}
	if a.Dy() > MaxHeight {
		a.Max.Y = a.Min.Y + MaxHeight
	}
	return a
}

// nearestClean returns the row in [lo, hi] nearest to y (outward first)
// at which a cut across a's columns is clean.
func (p *Page) nearestClean(a image.Rectangle, y, lo, hi int) (int, bool) {
	for d := 0; d <= Slack; d++ {
		for _, c := range []int{y - d, y + d} {
			if c >= lo && c <= hi && p.cleanAt(c, a.Min.X, a.Max.X) {
				return c, true
			}
		}
	}
	return 0, false
}

// cleanAt reports whether a horizontal cut between rows y-1 and y, from x0
// to x1, misses every glyph: both rows are background, with at most a few
// sharp steps (the borders of a card or column it crosses). A cut at the
// screenshot's top or bottom is clean: nothing lies beyond it.
func (p *Page) cleanAt(y, x0, x1 int) bool {
	b := p.img.Rect
	if y <= b.Min.Y || y >= b.Max.Y {
		return true
	}
	return p.plainRow(y-1, x0, x1) && p.plainRow(y, x0, x1)
}

// Thresholds of a plain row: a step is a jump of more than stepLevel in a
// channel between neighbouring pixels; text, even light grey text, makes
// many, and a row with at most maxSteps of them crosses no glyph.
const (
	stepLevel = 48
	maxSteps  = 4
)

func (p *Page) plainRow(y, x0, x1 int) bool {
	x0, x1 = max(x0, p.img.Rect.Min.X), min(x1, p.img.Rect.Max.X)
	if x1-x0 < 2 {
		return true
	}
	row := p.img.Pix[p.img.PixOffset(x0, y) : p.img.PixOffset(x1-1, y)+4]
	steps := 0
	for i := 4; i < len(row); i += 4 {
		if jump(row[i], row[i-4]) || jump(row[i+1], row[i-3]) || jump(row[i+2], row[i-2]) {
			if steps++; steps > maxSteps {
				return false
			}
		}
	}
	return true
}

func jump(a, b uint8) bool { return int(a)-int(b) > stepLevel || int(b)-int(a) > stepLevel }

// edgeX is m's viewport edge in whole pixels, when it has one.
func edgeX(m Marks) (int, bool) {
	if !(m.Edge > 0) || m.Edge > 1<<24 {
		return 0, false
	}
	return int(math.Round(m.Edge)), true
}

// pixelRect rounds a CSS-pixel box outward to whole pixels. A box with a
// zero width or height still gets a one-pixel extent so it can be drawn.
func pixelRect(r design.Rect) (image.Rectangle, bool) {
	const limit = 1 << 24
	for _, v := range []float64{r.X, r.Y, r.W, r.H} {
		if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > limit {
			return image.Rectangle{}, false
		}
	}
	if r.W < 0 || r.H < 0 {
		return image.Rectangle{}, false
	}
	x0, y0 := int(math.Floor(r.X)), int(math.Floor(r.Y))
	x1, y1 := int(math.Ceil(r.X+r.W)), int(math.Ceil(r.Y+r.H))
	if x1 <= x0 {
		x1 = x0 + 1
	}
	if y1 <= y0 {
		y1 = y0 + 1
	}
	return image.Rect(x0, y0, x1, y1), true
}
