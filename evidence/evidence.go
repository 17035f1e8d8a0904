// Package evidence cuts the annotated crop that shows an agent where a
// finding is: the element's box, padded, outlined in a high-contrast colour,
// at least MinWidth × MinHeight so a small control shows its surroundings,
// its edges moved out (by at most Slack) onto rows and columns of plain
// background so no line of text is cut through,
// from a screenshot of the capture that found it (the full page, or the
// region around the box that Area names, shot while the tab was live).
//
// Invariants: identical input gives identical bytes (the PNG encoder is
// fixed and nothing time- or host-dependent is written); a box partly
// outside the screenshot is clipped to it, a box wholly outside is refused
// (ErrOutside); a crop is never larger than MaxWidth × MaxHeight; hostile
// input (a corrupt PNG, NaN or huge boxes) returns an error, never a panic.
package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/bastion-mcp/bastion/design"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
)

// Geometry of a crop, in screenshot pixels (1 px per CSS px).
const (
	Pad       = 24  // space kept around the element's box
	MinWidth  = 320 // a crop of a small element grows to this around it, so it shows where it is
	MinHeight = 160
	Slack     = 32   // how far an edge may move out to land on plain background
	Stroke    = 2    // outline width
	MaxWidth  = 1600 // a crop is cut to this, anchored at its top-left
	MaxHeight = 1200
	// maxPixels bounds a screenshot before it is decoded (width × height).
	maxPixels = 4096 * 20000
)

// Outline is the box colour: a saturated magenta rarely used by interfaces,
// so the outline reads against light and dark designs alike.
var Outline = color.RGBA{R: 0xFF, G: 0x00, B: 0xFF, A: 0xFF}

// ErrOutside means the box does not intersect the screenshot (for example,
// it lies below the capped screenshot height, or outside the region shot).
var ErrOutside = errors.New("evidence: box lies outside the screenshot")

// Page is a decoded screenshot of the page or of a region of it, ready to
// cut crops from in page coordinates.
type Page struct {
	img *image.RGBA
}

// Decode parses a full-page PNG.
func Decode(screenshot []byte) (*Page, error) { return DecodeAt(screenshot, image.Point{}) }

// DecodeAt parses a PNG of part of the page whose top-left corner is at
// page coordinates at (a region shot for its crops, see Area): Crop then
// takes page coordinates as for a full-page screenshot.
func DecodeAt(screenshot []byte, at image.Point) (*Page, error) {
	cfg, err := png.DecodeConfig(bytes.NewReader(screenshot))
	if err != nil {
		return nil, fmt.Errorf("evidence: decode screenshot: %w", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > maxPixels {
		return nil, fmt.Errorf("evidence: screenshot size %d×%d out of range", cfg.Width, cfg.Height)
	}
	img, err := png.Decode(bytes.NewReader(screenshot))
	if err != nil {
		return nil, fmt.Errorf("evidence: decode screenshot: %w", err)
	}
	rgba, ok := img.(*image.RGBA)
	if !ok || rgba.Rect.Min != (image.Point{}) {
		b := img.Bounds()
		rgba = image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
		draw.Draw(rgba, rgba.Rect, img, b.Min, draw.Src)
	}
	// image.RGBA indexes its pixels relative to Rect.Min, so moving the
	// rectangle places the same pixels at page coordinates.
	rgba.Rect = rgba.Rect.Add(at)
	return &Page{img: rgba}, nil
}

// Area is the part of a page of the given size to shoot for a crop of box:
// everything the crop can show once its edges have moved out onto plain
// background (see Page.Crop), clipped to the page. It is empty when box is
// not a finite rectangle or lies outside the page.
func Area(box design.Rect, page image.Rectangle) image.Rectangle {
	el, ok := pixelRect(box)
	if !ok || !el.Overlaps(page) {
		return image.Rectangle{}
	}
	return capSize(base(el, page).Inset(-Slack).Intersect(page), MaxWidth+2*Slack, MaxHeight+2*Slack)
}

// base is the crop before its edges move: the box, padded, grown evenly to
// MinWidth × MinHeight, clipped to bounds and cut to MaxWidth × MaxHeight
// less the slack, anchored at its top-left.
func base(el, bounds image.Rectangle) image.Rectangle {
	a := el.Inset(-Pad)
	if d := MinWidth - a.Dx(); d > 0 {
		a.Min.X, a.Max.X = a.Min.X-d/2, a.Max.X+d-d/2
	}
	if d := MinHeight - a.Dy(); d > 0 {
		a.Min.Y, a.Max.Y = a.Min.Y-d/2, a.Max.Y+d-d/2
	}
	return capSize(a.Intersect(bounds), MaxWidth-2*Slack, MaxHeight-2*Slack)
}

func capSize(a image.Rectangle, w, h int) image.Rectangle {
	a.Max.X = min(a.Max.X, a.Min.X+w)
	a.Max.Y = min(a.Max.Y, a.Min.Y+h)
	return a
}

// area is the crop of el: base, each edge moved out to the nearest row or
// column of plain background within Slack, where there is one, so a crop
// does not cut a line of text in half.
func (p *Page) area(el image.Rectangle) image.Rectangle {
	bounds := p.img.Rect
	a := base(el, bounds)
	for y := a.Min.Y; y >= max(bounds.Min.Y, a.Min.Y-Slack); y-- {
		if p.plainRow(y, a.Min.X, a.Max.X) {
			a.Min.Y = y
			break
		}
	}
	for y := a.Max.Y - 1; y < min(bounds.Max.Y, a.Max.Y+Slack); y++ {
		if p.plainRow(y, a.Min.X, a.Max.X) {
			a.Max.Y = y + 1
			break
		}
	}
	for x := a.Min.X; x >= max(bounds.Min.X, a.Min.X-Slack); x-- {
		if p.plainColumn(x, a.Min.Y, a.Max.Y) {
			a.Min.X = x
			break
		}
	}
	for x := a.Max.X - 1; x < min(bounds.Max.X, a.Max.X+Slack); x++ {
		if p.plainColumn(x, a.Min.Y, a.Max.Y) {
			a.Max.X = x + 1
			break
		}
	}
	return a
}

// plainRow reports whether the pixels of row y from x0 to x1 are all within
// a few levels of the first: background, not the middle of a glyph.
func (p *Page) plainRow(y, x0, x1 int) bool {
	first := p.img.RGBAAt(x0, y)
	for x := x0 + 1; x < x1; x++ {
		if !near(p.img.RGBAAt(x, y), first) {
			return false
		}
	}
	return true
}

func (p *Page) plainColumn(x, y0, y1 int) bool {
	first := p.img.RGBAAt(x, y0)
	for y := y0 + 1; y < y1; y++ {
		if !near(p.img.RGBAAt(x, y), first) {
			return false
		}
	}
	return true
}

func near(a, b color.RGBA) bool {
	d := func(x, y uint8) bool { return max(x, y)-min(x, y) <= 6 }
	return d(a.R, b.R) && d(a.G, b.G) && d(a.B, b.B) && d(a.A, b.A)
}

// Size returns the screenshot's width and height in pixels.
func (p *Page) Size() (w, h int) { return p.img.Rect.Dx(), p.img.Rect.Dy() }

// Bounds is the part of the page the screenshot shows, in page coordinates.
func (p *Page) Bounds() image.Rectangle { return p.img.Rect }

// Crop returns the annotated crop around box (page coordinates) as PNG.
func (p *Page) Crop(box design.Rect) ([]byte, error) {
	el, ok := pixelRect(box)
	if !ok {
		return nil, fmt.Errorf("evidence: box %+v is not a finite rectangle", box)
	}
	bounds := p.img.Rect
	if !el.Overlaps(bounds) {
		return nil, ErrOutside
	}
	area := p.area(el)
	if area.Empty() {
		return nil, ErrOutside
	}
	out := image.NewRGBA(image.Rect(0, 0, area.Dx(), area.Dy()))
	draw.Draw(out, out.Rect, p.img, area.Min, draw.Src)
	outline(out, el.Sub(area.Min))
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.DefaultCompression}
	if err := enc.Encode(&buf, out); err != nil {
		return nil, fmt.Errorf("evidence: encode crop: %w", err)
	}
	return buf.Bytes(), nil
}

// Crop decodes screenshot and cuts one crop; use Decode and Page.Crop for
// several crops of one screenshot.
func Crop(screenshot []byte, box design.Rect) ([]byte, error) {
	p, err := Decode(screenshot)
	if err != nil {
		return nil, err
	}
	return p.Crop(box)
}

// ID derives a stable evidence id from the finding it belongs to and the
// crop's bytes: "ev_" and 20 hex digits of SHA-256.
func ID(findingID string, crop []byte) string {
	h := sha256.New()
	h.Write([]byte(findingID))
	h.Write([]byte{0})
	h.Write(crop)
	return "ev_" + hex.EncodeToString(h.Sum(nil))[:20]
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

// outline draws a Stroke-wide frame just inside el, clipped to img. When the
// element is smaller than two strokes the whole box is filled.
func outline(img *image.RGBA, el image.Rectangle) {
	src := image.NewUniform(Outline)
	edges := []image.Rectangle{
		image.Rect(el.Min.X, el.Min.Y, el.Max.X, el.Min.Y+Stroke), // top
		image.Rect(el.Min.X, el.Max.Y-Stroke, el.Max.X, el.Max.Y), // bottom
		image.Rect(el.Min.X, el.Min.Y, el.Min.X+Stroke, el.Max.Y), // left
		image.Rect(el.Max.X-Stroke, el.Min.Y, el.Max.X, el.Max.Y), // right
	}
	for _, e := range edges {
		e = e.Intersect(el).Intersect(img.Rect)
		if !e.Empty() {
			draw.Draw(img, e, src, image.Point{}, draw.Src)
		}
	}
}
