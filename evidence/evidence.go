// Package evidence cuts the annotated crop that shows an agent where a
// finding is: the element's box, outlined in a high-contrast colour, in at
// least MinWidth × MinHeight of the layout around it, with the measured
// thing drawn on it (Marks: the viewport's edge an element runs past, the
// margin or padding a spacing finding flags), from a screenshot of the
// capture that found it (the full page, or the region around the box that
// Area names, shot while the tab was live). It also marks a page's
// overview (Overview): the findings' boxes outlined and numbered on a
// scaled-down shot of the page's top.
//
// Invariants: identical input gives identical bytes (the PNG encoder is
// fixed and nothing time- or host-dependent is written); a crop's top and
// bottom fall between lines of text when a clean row lies within Slack of
// the frame, and never nearer the element than Pad/2; a box partly
// outside the screenshot is clipped to it, a box wholly outside is refused
// (ErrOutside); a crop is never larger than MaxWidth × MaxHeight; hostile
// input (a corrupt PNG, NaN or huge boxes or marks) returns an error or
// draws nothing, never a panic.
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
)

// Geometry of a crop, in screenshot pixels (1 px per CSS px).
const (
	Pad    = 24 // space kept around what a crop shows
	Stroke = 2  // outline width
	// MinWidth and MinHeight are the least a crop shows: a small element
	// (an icon, a one-word link) is seen in the layout around it, not alone.
	MinWidth  = 320
	MinHeight = 180
	// Slack is how far past the pad a crop's top or bottom edge may move to
	// fall between two lines of text rather than through one.
	Slack     = 48
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

// Marks are what a crop draws besides the element's outline, in page
// coordinates: the measured thing a finding is about, where a box alone
// does not show it. The zero Marks draws the outline only.
type Marks struct {
	// Edge, when positive, is the x of the viewport's right edge: the crop
	// draws it dashed and tints what lies past it, so an overflow shows how
	// far the element runs off the screen.
	Edge float64
	// Bands are spaces the finding measured (a margin, a padding, a gap),
	// shaded the way browser developer tools shade them.
	Bands []Band
}

// A Band is one measured space. Padding lies inside the element's box and
// is shaded green; any other space (a margin, a gap between siblings) is
// outside it and shaded orange.
type Band struct {
	Rect    design.Rect
	Padding bool
}

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

// Area is the part of a page of the given size to shoot for a crop of box
// with marks m: what the crop shows, with Slack rows above and below in
// which Crop can find a clean cut. It is empty when box is not a finite
// rectangle or lies outside the page.
func Area(box design.Rect, m Marks, page image.Rectangle) image.Rectangle {
	el, ok := pixelRect(box)
	if !ok || !el.Overlaps(page) {
		return image.Rectangle{}
	}
	a := frame(el, m, page)
	a.Min.Y -= Slack
	a.Max.Y += Slack
	return a.Intersect(page)
}

// Size returns the screenshot's width and height in pixels.
func (p *Page) Size() (w, h int) { return p.img.Rect.Dx(), p.img.Rect.Dy() }

// Bounds is the part of the page the screenshot shows, in page coordinates.
func (p *Page) Bounds() image.Rectangle { return p.img.Rect }

// Crop returns the annotated crop around box (page coordinates) as PNG,
// with marks m drawn under the outline.
func (p *Page) Crop(box design.Rect, m Marks) ([]byte, error) {
	el, ok := pixelRect(box)
	if !ok {
		return nil, fmt.Errorf("evidence: box %+v is not a finite rectangle", box)
	}
	bounds := p.img.Rect
	if !el.Overlaps(bounds) {
		return nil, ErrOutside
	}
	area := p.cleanCut(frame(el, m, bounds), el)
	if area.Empty() {
		return nil, ErrOutside
	}
	out := image.NewRGBA(image.Rect(0, 0, area.Dx(), area.Dy()))
	draw.Draw(out, out.Rect, p.img, area.Min, draw.Src)
	mark(out, m, area.Min)
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
func Crop(screenshot []byte, box design.Rect, m Marks) ([]byte, error) {
	p, err := Decode(screenshot)
	if err != nil {
		return nil, err
	}
	return p.Crop(box, m)
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
