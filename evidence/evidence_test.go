package evidence

import (
	"bytes"
	"errors"
	"github.com/bastion-mcp/bastion/design"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"testing"
)

// page returns a w×h PNG filled with a deterministic pattern that never uses
// the outline colour.
func page(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{R: uint8(x), G: uint8(y), B: 40, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func decode(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("crop is not a PNG: %v", err)
	}
	return img
}

func isOutline(c color.Color) bool {
	r, g, b, a := c.RGBA()
	return r == 0xFFFF && g == 0 && b == 0xFFFF && a == 0xFFFF
}

func TestCropPadsAndOutlines(t *testing.T) {
	t.Parallel()
	shot := page(t, 600, 400)
	crop, err := Crop(shot, design.Rect{X: 100, Y: 80, W: 300, H: 150})
	if err != nil {
		t.Fatal(err)
	}
	img := decode(t, crop)
	if got, want := img.Bounds().Size(), (image.Point{X: 300 + 2*Pad, Y: 150 + 2*Pad}); got != want {
		t.Fatalf("crop size = %v, want %v", got, want)
	}
	// The element's top-left corner sits at (Pad, Pad) and is outlined; the
	// padding just outside it keeps the screenshot's pixel.
	if !isOutline(img.At(Pad, Pad)) || !isOutline(img.At(Pad+299, Pad+149)) || !isOutline(img.At(Pad+1, Pad+10)) {
		t.Errorf("element box corners/edges are not outlined")
	}
	if isOutline(img.At(Pad-1, Pad-1)) {
		t.Errorf("outline bleeds into the padding")
	}
	if isOutline(img.At(Pad+25, Pad+20)) {
		t.Errorf("outline fills the element's interior")
	}
	// The padding pixel is the screenshot's pixel at page (99, 79).
	if r, g, _, _ := img.At(Pad-1, Pad-1).RGBA(); r>>8 != 99 || g>>8 != 79 {
		t.Errorf("padding pixel = (%d,%d), want the screenshot's (99,79)", r>>8, g>>8)
	}
}

func TestCropIsDeterministic(t *testing.T) {
	t.Parallel()
	shot := page(t, 300, 200)
	box := design.Rect{X: 10.4, Y: 20.6, W: 33.3, H: 12.2}
	a, err := Crop(shot, box)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Decode(shot)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Crop(box)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two crops of identical input differ")
	}
	if ID("f_1", a) != ID("f_1", b) {
		t.Fatal("evidence ids of identical input differ")
	}
	if ID("f_1", a) == ID("f_2", a) {
		t.Fatal("evidence id ignores the finding")
	}
	if id := ID("f_1", a); len(id) != 23 || id[:3] != "ev_" {
		t.Fatalf("ID = %q, want ev_ and 20 hex digits", id)
	}
}

func TestCropClipsToScreenshot(t *testing.T) {
	t.Parallel()
	shot := page(t, 200, 100)
	cases := []struct {
		name string
		box  design.Rect
		want image.Point
	}{
		// A small box grows evenly to MinWidth × MinHeight, then the page
		// clips it: at the corner, its left and top halves are cut away.
		{"TopLeftCorner", design.Rect{X: 0, Y: 0, W: 10, H: 10}, image.Point{X: 10 + Pad + (MinWidth-10-2*Pad)/2, Y: 10 + Pad + (MinHeight-10-2*Pad)/2}},
		{"PastRightEdge", design.Rect{X: 180, Y: 40, W: 112, H: 10}, image.Point{X: 200 - (180 - Pad - (MinWidth-112-2*Pad)/2), Y: 100}},
		{"PastBottom", design.Rect{X: 50, Y: 90, W: 10, H: 500}, image.Point{X: 200, Y: 100 - (90 - Pad)}},
		{"ZeroSize", design.Rect{X: 50, Y: 50, W: 0, H: 0}, image.Point{X: 200, Y: 100}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			crop, err := Crop(shot, c.box)
			if err != nil {
				t.Fatal(err)
			}
			if got := decode(t, crop).Bounds().Size(); got != c.want {
				t.Errorf("crop size = %v, want %v", got, c.want)
			}
		})
	}
}

func TestCropCapsLargeBoxes(t *testing.T) {
	t.Parallel()
	shot := page(t, 2000, 1500)
	crop, err := Crop(shot, design.Rect{X: 0, Y: 0, W: 2000, H: 1500})
	if err != nil {
		t.Fatal(err)
	}
	// With no plain background to move onto, the crop keeps the slack
	// its edges could have used inside the cap.
	if got, want := decode(t, crop).Bounds().Size(), (image.Point{X: MaxWidth - 2*Slack, Y: MaxHeight - 2*Slack}); got != want {
		t.Fatalf("crop size = %v, want %v", got, want)
	}
}

// lines returns a white w×h PNG with a line of "text" (alternating dark
// pixels) in rows [20+24k, 36+24k) from x = 40 to w-40.
func lines(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.RGBA{R: 255, G: 255, B: 255, A: 255}
			if y >= 20 && (y-20)%24 < 16 && x >= 40 && x < w-40 && (x+y)%3 == 0 {
				c = color.RGBA{R: 20, G: 20, B: 20, A: 255}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCropEndsBetweenLines: an edge that would cut through a line of text
// moves out to the gap before it, and the element stays whole inside.
func TestCropEndsBetweenLines(t *testing.T) {
	t.Parallel()
	shot := lines(t, 600, 400)
	box := design.Rect{X: 100, Y: 150, W: 300, H: 10}
	p, err := Decode(shot)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := p.Crop(box)
	if err != nil {
		t.Fatal(err)
	}
	img := decode(t, raw)
	b := img.Bounds()
	plain := func(y int) bool {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, _, _, _ := img.At(x, y).RGBA(); r>>8 != 255 {
				return false
			}
		}
		return true
	}
	if !plain(b.Min.Y) || !plain(b.Max.Y-1) {
		t.Errorf("crop %v starts or ends inside a line of text", b)
	}
	if b.Dy() < MinHeight || b.Dy() > MinHeight+2*Slack {
		t.Errorf("crop height %d, want %d to %d", b.Dy(), MinHeight, MinHeight+2*Slack)
	}
	// A region shot of exactly Area gives the same crop as the whole page:
	// Area holds everything the crop may show.
	area := Area(box, image.Rect(0, 0, 600, 400))
	full, _ := png.Decode(bytes.NewReader(shot))
	region := image.NewRGBA(image.Rect(0, 0, area.Dx(), area.Dy()))
	draw.Draw(region, region.Rect, full, area.Min, draw.Src)
	var buf bytes.Buffer
	if err := png.Encode(&buf, region); err != nil {
		t.Fatal(err)
	}
	rp, err := DecodeAt(buf.Bytes(), area.Min)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rp.Crop(box); err != nil || !bytes.Equal(got, raw) {
		t.Errorf("crop from the region shot of %v differs from the full page's (err %v)", area, err)
	}
}

func TestCropRefusesBadInput(t *testing.T) {
	t.Parallel()
	shot := page(t, 100, 100)
	if _, err := Crop(shot, design.Rect{X: 500, Y: 500, W: 10, H: 10}); !errors.Is(err, ErrOutside) {
		t.Errorf("box outside: err = %v, want ErrOutside", err)
	}
	if _, err := Crop(shot, design.Rect{X: -300, Y: 10, W: 10, H: 10}); !errors.Is(err, ErrOutside) {
		t.Errorf("box left of the page: err = %v, want ErrOutside", err)
	}
	for _, box := range []design.Rect{
		{X: math.NaN(), W: 1, H: 1}, {X: 1, W: math.Inf(1), H: 1}, {W: -5, H: 3}, {X: 1e30, W: 1, H: 1},
	} {
		if _, err := Crop(shot, box); err == nil {
			t.Errorf("box %+v: no error", box)
		}
	}
	if _, err := Crop([]byte("not a png"), design.Rect{W: 1, H: 1}); err == nil {
		t.Error("corrupt screenshot: no error")
	}
}

func FuzzCrop(f *testing.F) {
	shot := page(f, 64, 48)
	f.Add(shot, 10.0, 10.0, 5.0, 5.0)
	f.Add(shot, -10.0, -10.0, 500.0, 500.0)
	f.Add(shot, 63.5, 47.5, 0.0, 0.0)
	f.Add([]byte("\x89PNG\r\n\x1a\n"), 0.0, 0.0, 1.0, 1.0)
	f.Add(shot[:len(shot)/2], 1.0, 1.0, 1.0, 1.0)
	f.Fuzz(func(t *testing.T, b []byte, x, y, w, h float64) {
		crop, err := Crop(b, design.Rect{X: x, Y: y, W: w, H: h})
		if err != nil {
			return
		}
		img := decode(t, crop)
		if s := img.Bounds().Size(); s.X > MaxWidth || s.Y > MaxHeight || s.X <= 0 || s.Y <= 0 {
			t.Fatalf("crop size %v out of range", s)
		}
	})
}
