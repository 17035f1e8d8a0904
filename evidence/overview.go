package evidence

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"strconv"

	"github.com/bastion-mcp/bastion/design"
)

// A Numbered box is one finding's place on an overview: its box in page
// coordinates (CSS px) and the number the finding has in the review.
type Numbered struct {
	N   int
	Box design.Rect
}

// Overview draws each numbered box onto shot, a PNG of the top of a page
// scaled by scale (image px per CSS px, see capture.Overview): the box
// outlined, its number in a badge at its top-left corner, so a reader of
// the image alone can match a mark to the finding. A badge that would
// cover an earlier one (two findings on one element) moves right of it,
// so every number stays readable. Boxes below or beside
// the shot are left out; a box that is not a finite rectangle draws
// nothing. Identical input gives identical bytes.
func Overview(shot []byte, scale float64, boxes []Numbered) ([]byte, error) {
	if !(scale > 0 && scale <= 1) {
		return nil, fmt.Errorf("evidence: overview scale %v out of range", scale)
	}
	p, err := Decode(shot)
	if err != nil {
		return nil, err
	}
	img := p.img
	for _, b := range boxes {
		r, ok := pixelRect(design.Rect{X: b.Box.X * scale, Y: b.Box.Y * scale, W: b.Box.W * scale, H: b.Box.H * scale})
		if !ok || !r.Overlaps(img.Rect) {
			continue
		}
		outline(img, r)
	}
	// Badges go on top of every outline, so a later box never hides the
	// number of an earlier one it overlaps.
	var placed []image.Rectangle
	for _, b := range boxes {
		r, ok := pixelRect(design.Rect{X: b.Box.X * scale, Y: b.Box.Y * scale, W: b.Box.W * scale, H: b.Box.H * scale})
		if !ok || !r.Overlaps(img.Rect) || b.N <= 0 {
			continue
		}
		at := placeBadge(img.Rect, r.Min, badgeSize(b.N), placed)
		badge(img, at, b.N)
		placed = append(placed, at)
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.DefaultCompression}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("evidence: encode overview: %w", err)
	}
	return buf.Bytes(), nil
}

// OverviewScale is the scale that fits a page w CSS px wide into width
// image px, never enlarging it.
func OverviewScale(w float64, width int) float64 {
	if !(w > 0) || width <= 0 {
		return 1
	}
	return math.Min(1, float64(width)/w)
}

// Geometry of a badge: digits drawn from glyphs, each glyph cell
// magnified by glyphScale, with badgePad around the number.
const (
	glyphW, glyphH = 3, 5
	glyphScale     = 3
	badgePad       = 2
)

// glyphs are the digits 0–9 as 3×5 bitmaps, one row per three bits, top
// row first. A bitmap font keeps the overview free of a font dependency
// and its bytes identical on every machine.
var glyphs = [10][glyphH]uint8{
	{7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7}, {5, 5, 7, 1, 1},
	{7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1}, {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7},
}

// badgeSize is the size in pixels of n's badge.
func badgeSize(n int) image.Point {
	digits := len(strconv.Itoa(n))
	return image.Pt(digits*(glyphW+1)*glyphScale-glyphScale+2*badgePad, glyphH*glyphScale+2*badgePad)
}

// placeBadge is where a badge of size sz goes for a box whose corner is
// at: there, inside bounds, unless that covers a badge already placed;
// then just right of that badge, or below (above, at the bottom) the row
// when the row is full.
// Each move clears one placed badge, so the search ends; on a shot too
// crowded to place it clear, the last place tried is used.
func placeBadge(bounds image.Rectangle, at, sz image.Point, placed []image.Rectangle) image.Rectangle {
	r := inside(bounds, image.Rectangle{Min: at, Max: at.Add(sz)})
	for range 2*len(placed) + 1 {
		hit := -1
		for i, p := range placed {
			if p.Inset(-2).Overlaps(r) {
				hit = i
				break
			}
		}
		if hit < 0 {
			break
		}
		p := placed[hit]
		next := image.Rectangle{Min: image.Pt(p.Max.X+2, r.Min.Y), Max: image.Pt(p.Max.X+2+sz.X, r.Min.Y+sz.Y)}
		if next.Max.X > bounds.Max.X {
			next = image.Rectangle{Min: image.Pt(at.X, p.Max.Y+2), Max: image.Pt(at.X+sz.X, p.Max.Y+2+sz.Y)}
			if next.Max.Y > bounds.Max.Y { // no room below: the row above
				next = next.Sub(image.Pt(0, next.Min.Y-(p.Min.Y-2-sz.Y)))
			}
		}
		r = inside(bounds, next)
	}
	return r
}

// inside moves r into bounds where it sticks out past an edge.
func inside(bounds, r image.Rectangle) image.Rectangle {
	if r.Max.X > bounds.Max.X {
		r = r.Sub(image.Pt(r.Max.X-bounds.Max.X, 0))
	}
	if r.Max.Y > bounds.Max.Y {
		r = r.Sub(image.Pt(0, r.Max.Y-bounds.Max.Y))
	}
	return r.Add(image.Pt(max(0, bounds.Min.X-r.Min.X), max(0, bounds.Min.Y-r.Min.Y)))
}

// badge draws n in white on the outline's colour in r (its badgeSize).
func badge(img *image.RGBA, r image.Rectangle, n int) {
	digits := strconv.Itoa(n)
	cell := (glyphW + 1) * glyphScale
	ink := image.NewUniform(color.White)
	// A white rim keeps two badges that touch from reading as one number.
	draw.Draw(img, r.Inset(-1).Intersect(img.Rect), ink, image.Point{}, draw.Src)
	draw.Draw(img, r.Intersect(img.Rect), image.NewUniform(Outline), image.Point{}, draw.Src)
	for i, d := range digits {
		g := glyphs[d-'0']
		x0 := r.Min.X + badgePad + i*cell
		for row, bits := range g {
			for col := range glyphW {
				if bits&(1<<(glyphW-1-col)) == 0 {
					continue
				}
				at := image.Pt(x0+col*glyphScale, r.Min.Y+badgePad+row*glyphScale)
				px := image.Rectangle{Min: at, Max: at.Add(image.Pt(glyphScale, glyphScale))}
				draw.Draw(img, px.Intersect(img.Rect), ink, image.Point{}, draw.Src)
			}
		}
	}
}
