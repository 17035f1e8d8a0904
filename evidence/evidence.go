// Package evidence cuts the annotated crop that shows an agent where a
// finding is: the element's box, padded, outlined in a high-contrast colour,
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
	Pad       = 24   // space kept around the element's box
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

// Area is the part of a page of the given size that a crop of box shows:
// the box, padded, clipped to the page and cut to MaxWidth × MaxHeight.
// It is empty when box is not a finite rectangle or lies outside the page.
func Area(box design.Rect, page image.Rectangle) image.Rectangle {
	el, ok := pixelRect(box)
	if !ok || !el.Overlaps(page) {
		return image.Rectangle{}
	}
	return area(el, page)
}

func area(el, bounds image.Rectangle) image.Rectangle {
	a := image.Rect(el.Min.X-Pad, el.Min.Y-Pad, el.Max.X+Pad, el.Max.Y+Pad).Intersect(bounds)
	if a.Dx() > MaxWidth {
		a.Max.X = a.Min.X + MaxWidth
	}
	if a.Dy() > MaxHeight {
		a.Max.Y = a.Min.Y + MaxHeight
	}
	return a
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
	area := area(el, bounds)
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
