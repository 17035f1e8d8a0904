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

// origin finds where the outline's top-left corner sits in a crop.
func origin(t *testing.T, img image.Image) image.Point {
	t.Helper()
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if isOutline(img.At(x, y)) {
				return image.Pt(x, y)
			}
		}
	}
	t.Fatal("crop has no outline")
	return image.Point{}
}

func TestCropShowsTheElementInItsLayout(t *testing.T) {
	t.Parallel()
	shot := page(t, 400, 300)
	crop, err := Crop(shot, design.Rect{X: 100, Y: 80, W: 50, H: 20}, Marks{})
	if err != nil {
		t.Fatal(err)
	}
	img := decode(t, crop)
	// A 50×20 element is shown in the least frame, not 98×68 of padding.
	if got, want := img.Bounds().Size(), (image.Point{X: MinWidth, Y: MinHeight}); got != want {
		t.Fatalf("crop size = %v, want %v", got, want)
	}
	o := origin(t, img)
	at := image.Pt(100, 80).Sub(o) // the crop's top-left in page coordinates
	if !isOutline(img.At(o.X+49, o.Y+19)) || !isOutline(img.At(o.X+1, o.Y+10)) {
		t.Errorf("element box corners/edges are not outlined")
	}
	if isOutline(img.At(o.X-1, o.Y-1)) {
		t.Errorf("outline bleeds into the padding")
	}
	if isOutline(img.At(o.X+25, o.Y+10)) {
		t.Errorf("outline fills the element's interior")
	}
	// Every other pixel is the screenshot's, at its page position.
	if r, g, _, _ := img.At(o.X-1, o.Y-1).RGBA(); int(r>>8) != at.X+o.X-1 || int(g>>8) != at.Y+o.Y-1 {
		t.Errorf("pixel beside the box = (%d,%d), want the screenshot's (%d,%d)", r>>8, g>>8, at.X+o.X-1, at.Y+o.Y-1)
	}
	if at.X > 100-Pad || at.Y > 80-Pad || at.X+MinWidth < 150+Pad || at.Y+MinHeight < 100+Pad {
		t.Errorf("crop at %v does not keep the pad around the element", at)
	}
}

func TestCropIsDeterministic(t *testing.T) {
	t.Parallel()
	shot := page(t, 300, 200)
	box := design.Rect{X: 10.4, Y: 20.6, W: 33.3, H: 12.2}
	a, err := Crop(shot, box, Marks{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Decode(shot)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Crop(box, Marks{})
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

func TestCropFitsThePage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		w, h     int
		box      design.Rect
		want     image.Point
		outlined image.Point // where the box's corner lands in the crop
	}{
		{"PageSmallerThanTheLeastFrame", 200, 100, design.Rect{X: 50, Y: 40, W: 10, H: 10}, image.Pt(200, 100), image.Pt(50, 40)},
		{"TopLeftCorner", 1000, 800, design.Rect{X: 0, Y: 0, W: 10, H: 10}, image.Pt(MinWidth, MinHeight), image.Pt(0, 0)},
		// Near the page's right edge the frame slides left instead of
		// being cut, so the crop keeps its size.
		{"AtTheRightEdge", 1000, 800, design.Rect{X: 960, Y: 400, W: 40, H: 10}, image.Pt(MinWidth, MinHeight), image.Pt(960-(1000-MinWidth), 400-(405-MinHeight/2))},
		{"PastTheRightEdge", 1000, 800, design.Rect{X: 980, Y: 400, W: 112, H: 10}, image.Pt(MinWidth, MinHeight), image.Pt(980-(1000-MinWidth), -1)},
		{"ZeroSize", 1000, 800, design.Rect{X: 500, Y: 500, W: 0, H: 0}, image.Pt(MinWidth, MinHeight), image.Pt(-1, -1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			crop, err := Crop(page(t, c.w, c.h), c.box, Marks{})
			if err != nil {
				t.Fatal(err)
			}
			img := decode(t, crop)
			if got := img.Bounds().Size(); got != c.want {
				t.Errorf("crop size = %v, want %v", got, c.want)
			}
			o := origin(t, img)
			if c.outlined.X >= 0 && o.X != c.outlined.X || c.outlined.Y >= 0 && o.Y != c.outlined.Y {
				t.Errorf("box corner at %v in the crop, want %v", o, c.outlined)
			}
		})
	}
}

func TestCropCapsLargeBoxes(t *testing.T) {
	t.Parallel()
	shot := page(t, 2000, 1500)
	crop, err := Crop(shot, design.Rect{X: 0, Y: 0, W: 2000, H: 1500}, Marks{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := decode(t, crop).Bounds().Size(), (image.Point{X: MaxWidth, Y: MaxHeight}); got != want {
		t.Fatalf("crop size = %v, want the cap %v", got, want)
	}
}

// text returns a white page with lines of dark "glyphs" (vertical strokes)
// 16 px tall every 24 px, starting at y = 4.
func text(t *testing.T, w, h int) (*Page, []byte) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.RGBA{R: 255, G: 255, B: 255, A: 255}
			if (y-4)%24 < 16 && y >= 4 && x%5 < 2 {
				c = color.RGBA{R: 40, G: 40, B: 40, A: 255}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	p, err := Decode(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return p, buf.Bytes()
}

func TestCropCutsBetweenLinesOfText(t *testing.T) {
	t.Parallel()
	p, _ := text(t, 800, 1200)
	// One line of text, from y = 4+24*20 = 484 to 500. The least frame
	// (180 px about the box's centre) would end inside lines of text.
	box := design.Rect{X: 200, Y: 484, W: 300, H: 16}
	naive := frame(image.Rect(200, 484, 500, 500), Marks{}, image.Rect(0, 0, 800, 1200))
	if p.cleanAt(naive.Min.Y, naive.Min.X, naive.Max.X) && p.cleanAt(naive.Max.Y, naive.Min.X, naive.Max.X) {
		t.Fatalf("test page does not exercise the cut: the least frame %v already falls between lines", naive)
	}
	crop, err := p.Crop(box, Marks{})
	if err != nil {
		t.Fatal(err)
	}
	img := decode(t, crop).(*image.RGBA)
	q := &Page{img: img}
	b := img.Bounds()
	for _, y := range []int{b.Min.Y, b.Max.Y - 1} {
		if !q.plainRow(y, b.Min.X, b.Max.X) {
			t.Errorf("the crop's row %d cuts through a line of text", y)
		}
	}
	if o := origin(t, img); o.Y < Pad/2 || b.Dy()-o.Y-16 < Pad/2 {
		t.Errorf("clean cut left %d px above and %d below the element, want at least %d", o.Y, b.Dy()-o.Y-16, Pad/2)
	}
}

func TestMarksShowTheEdgeAndTheBands(t *testing.T) {
	t.Parallel()
	shot := page(t, 900, 400)
	box := design.Rect{X: 200, Y: 100, W: 400, H: 40}
	m := Marks{Edge: 390, Bands: []Band{
		{Rect: design.Rect{X: 200, Y: 70, W: 400, H: 30}},                // a margin above
		{Rect: design.Rect{X: 200, Y: 100, W: 400, H: 8}, Padding: true}, // a padding inside
	}}
	crop, err := Crop(shot, box, m)
	if err != nil {
		t.Fatal(err)
	}
	img := decode(t, crop)
	// The box's corner: the top of the leftmost outlined column (the edge
	// line lies right of the box's left side).
	o := image.Pt(-1, -1)
	for x := 0; x < img.Bounds().Dx() && o.X < 0; x++ {
		for y := 0; y < img.Bounds().Dy(); y++ {
			if isOutline(img.At(x, y)) {
				o = image.Pt(x, y)
				break
			}
		}
	}
	// at is the crop's pixel at page (x, y), and the screenshot's there.
	at := func(x, y int) (color.Color, color.Color) {
		return img.At(x-200+o.X, y-100+o.Y), color.RGBA{R: uint8(x), G: uint8(y), B: 40, A: 255}
	}
	same := func(a, b color.Color) bool {
		ar, ag, ab, _ := a.RGBA()
		br, bg, bb, _ := b.RGBA()
		return ar == br && ag == bg && ab == bb
	}
	if c, _ := at(390, 120); !isOutline(c) {
		t.Error("the viewport's edge is not drawn at x = 390")
	}
	if c, r := at(450, 125); same(c, r) {
		t.Error("what lies past the edge is not tinted")
	}
	if c, r := at(300, 125); !same(c, r) {
		t.Error("the screen left of the edge is changed")
	}
	c, r := at(300, 85)
	cr, _, _, _ := c.RGBA()
	rr, _, _, _ := r.RGBA()
	if cr>>8 < rr>>8+40 {
		t.Errorf("the margin band is not shaded orange: %v over %v", c, r)
	}
	if c, r := at(300, 104); same(c, r) {
		t.Error("the padding band is not shaded")
	}
	if c, r := at(300, 60); !same(c, r) {
		t.Error("shading runs past the margin band")
	}
	if o.Y < 100-70+Pad {
		t.Errorf("the crop does not show the margin band with its pad (box at %v in the crop)", o)
	}
}

func TestCropRefusesBadInput(t *testing.T) {
	t.Parallel()
	shot := page(t, 100, 100)
	if _, err := Crop(shot, design.Rect{X: 500, Y: 500, W: 10, H: 10}, Marks{}); !errors.Is(err, ErrOutside) {
		t.Errorf("box outside: err = %v, want ErrOutside", err)
	}
	if _, err := Crop(shot, design.Rect{X: -300, Y: 10, W: 10, H: 10}, Marks{}); !errors.Is(err, ErrOutside) {
		t.Errorf("box left of the page: err = %v, want ErrOutside", err)
	}
	for _, box := range []design.Rect{
		{X: math.NaN(), W: 1, H: 1}, {X: 1, W: math.Inf(1), H: 1}, {W: -5, H: 3}, {X: 1e30, W: 1, H: 1},
	} {
		if _, err := Crop(shot, box, Marks{}); err == nil {
			t.Errorf("box %+v: no error", box)
		}
	}
	if _, err := Crop([]byte("not a png"), design.Rect{W: 1, H: 1}, Marks{}); err == nil {
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
		crop, err := Crop(b, design.Rect{X: x, Y: y, W: w, H: h}, Marks{Edge: x + w/2, Bands: []Band{{Rect: design.Rect{X: x, Y: y - h, W: w, H: h}}}})
		if err != nil {
			return
		}
		img := decode(t, crop)
		if s := img.Bounds().Size(); s.X > MaxWidth || s.Y > MaxHeight || s.X <= 0 || s.Y <= 0 {
			t.Fatalf("crop size %v out of range", s)
		}
	})
}

// BenchmarkCrop is the Go side of one crop as the engine cuts it: decode
// the region shot for a small element (Area's size), cut and encode it.
func BenchmarkCrop(b *testing.B) {
	box := design.Rect{X: 400, Y: 600, W: 120, H: 20}
	page := image.Rect(0, 0, 1280, 4000)
	area := Area(box, Marks{}, page)
	img := image.NewRGBA(image.Rect(0, 0, area.Dx(), area.Dy()))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(area.Dx()*area.Dy()), "px/shot")
	for b.Loop() {
		p, err := DecodeAt(buf.Bytes(), area.Min)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Crop(box, Marks{}); err != nil {
			b.Fatal(err)
		}
	}
}
