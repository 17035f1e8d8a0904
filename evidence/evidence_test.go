package evidence

import (
	"bytes"
	"errors"
	"github.com/bastion-mcp/bastion/design"
	"image"
	"image/color"
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
	shot := page(t, 400, 300)
	crop, err := Crop(shot, design.Rect{X: 100, Y: 80, W: 50, H: 20})
	if err != nil {
		t.Fatal(err)
	}
	img := decode(t, crop)
	if got, want := img.Bounds().Size(), (image.Point{X: 50 + 2*Pad, Y: 20 + 2*Pad}); got != want {
		t.Fatalf("crop size = %v, want %v", got, want)
	}
	// The element's top-left corner sits at (Pad, Pad) and is outlined; the
	// padding just outside it keeps the screenshot's pixel.
	if !isOutline(img.At(Pad, Pad)) || !isOutline(img.At(Pad+49, Pad+19)) || !isOutline(img.At(Pad+1, Pad+10)) {
		t.Errorf("element box corners/edges are not outlined")
	}
	if isOutline(img.At(Pad-1, Pad-1)) {
		t.Errorf("outline bleeds into the padding")
	}
	if isOutline(img.At(Pad+25, Pad+10)) {
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
		{"TopLeftCorner", design.Rect{X: 0, Y: 0, W: 10, H: 10}, image.Point{X: 10 + Pad, Y: 10 + Pad}},
		{"PastRightEdge", design.Rect{X: 180, Y: 40, W: 112, H: 10}, image.Point{X: 200 - (180 - Pad), Y: 10 + 2*Pad}},
		{"PastBottom", design.Rect{X: 50, Y: 90, W: 10, H: 500}, image.Point{X: 10 + 2*Pad, Y: 100 - (90 - Pad)}},
		{"ZeroSize", design.Rect{X: 50, Y: 50, W: 0, H: 0}, image.Point{X: 1 + 2*Pad, Y: 1 + 2*Pad}},
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
	if got, want := decode(t, crop).Bounds().Size(), (image.Point{X: MaxWidth, Y: MaxHeight}); got != want {
		t.Fatalf("crop size = %v, want the cap %v", got, want)
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
