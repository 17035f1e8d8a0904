package evidence

import (
	"bytes"
	"image"
	"image/color"
	"math"
	"testing"

	"github.com/bastion-mcp/bastion/design"
)

// TestOverviewNumbersEachBox marks two boxes on a half-size shot: each is
// outlined where its scaled box lies, its badge is at its corner with the
// digits in white, a box below the shot draws nothing, and the bytes are
// the same on a second run.
func TestOverviewNumbersEachBox(t *testing.T) {
	shot := page(t, 200, 150) // a 400 × 300 CSS px page at scale 0.5
	boxes := []Numbered{
		{N: 1, Box: design.Rect{X: 40, Y: 40, W: 200, H: 100}},
		{N: 12, Box: design.Rect{X: 300, Y: 200, W: 80, H: 60}},
		{N: 3, Box: design.Rect{X: 0, Y: 900, W: 50, H: 50}}, // below the shot
	}
	out, err := Overview(shot, 0.5, boxes)
	if err != nil {
		t.Fatal(err)
	}
	img := decode(t, out)
	if b := img.Bounds(); b.Dx() != 200 || b.Dy() != 150 {
		t.Fatalf("overview is %v, want the shot's 200×150", b)
	}
	// Box 1 spans (20,20)-(120,70): its right edge is outlined, its
	// top-left corner carries the badge.
	if !isOutline(img.At(119, 50)) || !isOutline(img.At(20, 20)) {
		t.Errorf("box 1 not outlined or badged: right edge %v, corner %v", img.At(119, 50), img.At(20, 20))
	}
	white := func(x0, y0, x1, y1 int) int {
		n := 0
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				if r, g, b, _ := img.At(x, y).RGBA(); r == 0xFFFF && g == 0xFFFF && b == 0xFFFF {
					n++
				}
			}
		}
		return n
	}
	// The digits: white pixels in badge 1 (one glyph) and in badge 12
	// (two glyphs, more ink), none elsewhere in the pattern page.
	one, twelve := white(21, 21, 32, 38), white(151, 101, 174, 118) // inside each badge
	if one == 0 || twelve <= one || white(0, 0, 18, 18) != 0 {
		t.Errorf("badge ink: %d px for 1, %d px for 12, %d px outside", one, twelve, white(0, 0, 18, 18))
	}
	again, err := Overview(shot, 0.5, boxes)
	if err != nil || !bytes.Equal(out, again) {
		t.Errorf("overview differs between runs (err %v)", err)
	}
}

// TestOverviewRefusesBadInput: a bad scale or a corrupt shot is an error,
// a hostile box draws nothing, and a badge at the shot's edge stays inside.
func TestOverviewRefusesBadInput(t *testing.T) {
	shot := page(t, 40, 30)
	for _, s := range []float64{0, -1, 2, math.NaN()} {
		if _, err := Overview(shot, s, nil); err == nil {
			t.Errorf("scale %v accepted", s)
		}
	}
	if _, err := Overview([]byte("not a png"), 0.5, nil); err == nil {
		t.Error("a corrupt shot was accepted")
	}
	hostile := []Numbered{
		{N: 1, Box: design.Rect{X: math.NaN(), Y: 0, W: 10, H: 10}},
		{N: 2, Box: design.Rect{X: 0, Y: 0, W: math.Inf(1), H: 10}},
		{N: 3, Box: design.Rect{X: 0, Y: 0, W: -5, H: 10}},
		{N: 99999, Box: design.Rect{X: 78, Y: 58, W: 2, H: 2}}, // corner of the shot
	}
	out, err := Overview(shot, 0.5, hostile)
	if err != nil {
		t.Fatal(err)
	}
	img := decode(t, out)
	if !isOutline(img.At(39, 29)) {
		t.Errorf("the corner box's badge was not kept inside the shot: %v", img.At(39, 29))
	}
	if c := img.At(0, 0); isOutline(c) || c == (color.RGBA{}) {
		t.Errorf("a hostile box drew at the origin: %v", c)
	}
}

func TestOverviewScale(t *testing.T) {
	for _, c := range []struct {
		w     float64
		width int
		want  float64
	}{{1280, 320, 0.25}, {200, 320, 1}, {0, 320, 1}, {math.NaN(), 320, 1}, {640, 0, 1}} {
		if got := OverviewScale(c.w, c.width); got != c.want {
			t.Errorf("OverviewScale(%v, %d) = %v, want %v", c.w, c.width, got, c.want)
		}
	}
}

// TestOverviewKeepsEveryNumber: findings on one element share a corner;
// each later badge moves right of the earlier ones (to another row when
// the row is full), so every number keeps its own ink and none covers another.
func TestOverviewKeepsEveryNumber(t *testing.T) {
	shot := page(t, 120, 90)
	same := design.Rect{X: 20, Y: 20, W: 100, H: 60}  // (10,10)-(60,40) at scale 0.5
	edge := design.Rect{X: 208, Y: 120, W: 20, H: 30} // (104,60): one badge fits beside it, not two
	out, err := Overview(shot, 0.5, []Numbered{{N: 1, Box: same}, {N: 2, Box: same}, {N: 3, Box: same}, {N: 4, Box: edge}, {N: 5, Box: edge}})
	if err != nil {
		t.Fatal(err)
	}
	img := decode(t, out)
	sz := badgeSize(1)
	var placed []image.Rectangle
	for _, at := range []image.Point{{10, 10}, {10, 10}, {10, 10}, {104, 60}, {104, 60}} {
		placed = append(placed, placeBadge(img.Bounds(), at, sz, placed))
	}
	for i, r := range placed {
		if !r.In(img.Bounds()) {
			t.Errorf("badge %d at %v is not inside the shot %v", i+1, r, img.Bounds())
		}
		for j, o := range placed[:i] {
			if r.Overlaps(o) {
				t.Errorf("badge %d at %v covers badge %d at %v", i+1, r, j+1, o)
			}
		}
		// The badge drawn is where placeBadge says, digits and all: its
		// corner has the outline's colour and it holds white ink.
		ink := 0
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				if c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA); c.R == 0xFF && c.G == 0xFF && c.B == 0xFF {
					ink++
				}
			}
		}
		if !isOutline(img.At(r.Min.X, r.Min.Y)) || ink == 0 {
			t.Errorf("badge %d at %v: corner %v, %d white px", i+1, r, img.At(r.Min.X, r.Min.Y), ink)
		}
	}
	if placed[1].Min.Y != placed[0].Min.Y || placed[1].Min.X <= placed[0].Max.X {
		t.Errorf("badge 2 at %v is not right of badge 1 at %v", placed[1], placed[0])
	}
	if placed[4].Max.Y > placed[3].Min.Y {
		t.Errorf("badge 5 at %v did not move to the row above badge 4 at %v (the shot's right and bottom edges)", placed[4], placed[3])
	}
}
