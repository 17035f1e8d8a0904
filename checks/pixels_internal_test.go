package checks

import (
	"image"
	"image/color"
	"testing"
)

// TestReadBackground: the glyphs are the pixels the text paints; the bare
// render under them is the background, ranked by contrast with the text.
func TestReadBackground(t *testing.T) {
	const w, h = 40, 10
	bare := image.NewRGBA(image.Rect(0, 0, w, h))
	painted := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			// Left half dark, right half white: the text covers only the left.
			c := color.RGBA{0x11, 0x11, 0x11, 0xff}
			if x >= w/2 {
				c = color.RGBA{0xff, 0xff, 0xff, 0xff}
			}
			bare.Set(x, y, c)
			painted.Set(x, y, c)
			if x < w/2 && x%3 == 0 {
				painted.Set(x, y, color.RGBA{0xff, 0xff, 0xff, 0xff}) // a white glyph stroke
			}
		}
	}
	e := &Element{Text: &Text{Color: "rgb(255, 255, 255)"}}
	s, ok := readBackground(painted, bare, e)
	if !ok || s.Box || s.Bg != "#111111" || s.Worst != "#111111" || s.Pixels != 70 {
		t.Fatalf("sampled %+v (ok %v); want #111111 under 70 glyph pixels, the white half unread", s, ok)
	}
	// Text the colour of its background paints nothing: the whole box is read.
	s, ok = readBackground(bare, bare, e)
	if !ok || !s.Box || s.Pixels != w*h || s.Worst != "#ffffff" {
		t.Errorf("sampled %+v (ok %v); want the whole box, worst #ffffff", s, ok)
	}
}
