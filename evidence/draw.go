package evidence

import (
	"image"
	"image/color"
	"image/draw"
)

// Shades of the marks: developer tools' colours for a margin and a padding,
// translucent so the page stays readable under them, and the outline's
// magenta for the viewport's edge and what runs past it.
var (
	marginShade  = color.NRGBA{R: 0xF9, G: 0x8B, B: 0x2B, A: 0x70}
	paddingShade = color.NRGBA{R: 0x4C, G: 0xB8, B: 0x5B, A: 0x70}
	offScreen    = color.NRGBA{R: 0xFF, G: 0x00, B: 0xFF, A: 0x24}
)

// Dashes of the viewport edge line, in pixels.
const dash, dashGap = 6, 4

// mark draws m onto img, a crop whose top-left is at page point origin.
func mark(img *image.RGBA, m Marks, origin image.Point) {
	for _, b := range m.Bands {
		r, ok := pixelRect(b.Rect)
		if !ok {
			continue
		}
		shade := marginShade
		if b.Padding {
			shade = paddingShade
		}
		draw.Draw(img, r.Sub(origin).Intersect(img.Rect), image.NewUniform(shade), image.Point{}, draw.Over)
	}
	x, ok := edgeX(m)
	if !ok {
		return
	}
	x -= origin.X
	past := image.Rect(x, img.Rect.Min.Y, img.Rect.Max.X, img.Rect.Max.Y).Intersect(img.Rect)
	draw.Draw(img, past, image.NewUniform(offScreen), image.Point{}, draw.Over)
	line := image.NewUniform(Outline)
	for y := img.Rect.Min.Y; y < img.Rect.Max.Y; y += dash + dashGap {
		seg := image.Rect(x-Stroke/2, y, x+Stroke-Stroke/2, y+dash).Intersect(img.Rect)
		draw.Draw(img, seg, line, image.Point{}, draw.Src)
	}
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
