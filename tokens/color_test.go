package tokens

import (
	"math"
	"testing"
)

func TestParseColor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Color
		ok   bool
	}{
		{"rgb(31, 41, 55)", Color{31, 41, 55, 1}, true},
		{"rgba(17, 24, 39, 0.6)", Color{17, 24, 39, 0.6}, true},
		{"rgb(31 41 55 / 50%)", Color{31, 41, 55, 0.5}, true},
		{"#fff", Color{255, 255, 255, 1}, true},
		{"#1F2937", Color{31, 41, 55, 1}, true},
		{"#11182780", Color{17, 24, 39, 128.0 / 255}, true},
		{"hsl(0, 100%, 50%)", Color{255, 0, 0, 1}, true},
		{"hsla(120deg 100% 25% / 1)", Color{0, 127.5, 0, 1}, true},
		{"color(srgb 1 0.5 0)", Color{255, 127.5, 0, 1}, true},
		{"transparent", Color{}, true},
		{"White", Color{255, 255, 255, 1}, true},
		{"oklch(0 0 0)", Color{0, 0, 0, 1}, true},
		{"currentcolor", Color{}, false},
		{"lab(50 0 0)", Color{}, false},
		{"rgb(1, 2)", Color{}, false},
		{"#12345", Color{}, false},
		{"#gggggg", Color{}, false},
		{"rgb(nan, 0, 0)", Color{}, false},
		{"", Color{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseColor(tt.in)
		if ok != tt.ok || ok && !near(got, tt.want) {
			t.Errorf("ParseColor(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func near(a, b Color) bool {
	return math.Abs(a.R-b.R) < 0.6 && math.Abs(a.G-b.G) < 0.6 && math.Abs(a.B-b.B) < 0.6 && math.Abs(a.A-b.A) < 0.01
}

func TestContrast(t *testing.T) {
	t.Parallel()
	white, black := Color{255, 255, 255, 1}, Color{0, 0, 0, 1}
	tests := []struct {
		a, b Color
		want float64
	}{
		{black, white, 21},
		{white, white, 1},
		{Color{0x77, 0x77, 0x77, 1}, white, 4.48},  // the classic just-failing grey
		{Color{0x59, 0x59, 0x59, 1}, white, 7.0},   // #595959
		{Color{0x25, 0x63, 0xeb, 1}, white, 5.17},  // #2563eb
		{Color{0xd1, 0xd5, 0xdb, 1}, white, 1.474}, // #d1d5db
		{Color{0x4b, 0x55, 0x63, 1}, Color{0x11, 0x18, 0x27, 1}, 2.35},
	}
	for _, tt := range tests {
		if got := Contrast(tt.a, tt.b); math.Abs(got-tt.want) > 0.005 {
			t.Errorf("Contrast(%s, %s) = %.3f; want %.2f", tt.a, tt.b, got, tt.want)
		}
		if got, rev := Contrast(tt.a, tt.b), Contrast(tt.b, tt.a); got != rev {
			t.Errorf("Contrast is not symmetric: %v vs %v", got, rev)
		}
	}
}

// TestDeltaE2000Sharma checks pairs from Sharma, Wu and Dalal's CIEDE2000
// test data set.
func TestDeltaE2000Sharma(t *testing.T) {
	t.Parallel()
	tests := []struct {
		l1, a1, b1, l2, a2, b2, want float64
	}{
		{50, 2.6772, -79.7751, 50, 0, -82.7485, 2.0425},
		{50, 3.1571, -77.2803, 50, 0, -82.7485, 2.8615},
		{50, 2.8361, -74.0200, 50, 0, -82.7485, 3.4412},
		{50, 0, 0, 50, -1, 2, 2.3669},
		{50, 2.5, 0, 73, 25, -18, 27.1492},
		{60.2574, -34.0099, 36.2677, 60.4626, -34.1751, 39.4387, 1.2644},
		{2.0776, 0.0795, -1.1350, 0.9033, -0.0636, -0.5514, 0.9082},
	}
	for _, tt := range tests {
		got := deltaE2000Lab(tt.l1, tt.a1, tt.b1, tt.l2, tt.a2, tt.b2)
		if math.Abs(got-tt.want) > 0.0001 {
			t.Errorf("ΔE00(%v,%v,%v | %v,%v,%v) = %.4f; want %.4f", tt.l1, tt.a1, tt.b1, tt.l2, tt.a2, tt.b2, got, tt.want)
		}
	}
}

func TestDeltaE2000sRGB(t *testing.T) {
	t.Parallel()
	a := Color{0x25, 0x63, 0xeb, 1}
	if d := DeltaE2000(a, a); d != 0 {
		t.Errorf("ΔE of a colour with itself = %v; want 0", d)
	}
	if d := DeltaE2000(a, Color{0x26, 0x63, 0xeb, 1}); d > 1 {
		t.Errorf("one step of red moved ΔE by %v; want < 1", d)
	}
	if d := DeltaE2000(Color{0, 0, 0, 1}, Color{255, 255, 255, 1}); math.Abs(d-100) > 0.01 {
		t.Errorf("ΔE(black, white) = %v; want 100", d)
	}
}

func TestOver(t *testing.T) {
	t.Parallel()
	got := Color{0, 0, 0, 0.5}.Over(Color{255, 255, 255, 1})
	if !near(got, Color{127.5, 127.5, 127.5, 1}) {
		t.Errorf("50%% black over white = %v", got)
	}
	if got := (Color{}).Over(Color{}); got != (Color{}) {
		t.Errorf("transparent over transparent = %v", got)
	}
}

func FuzzParseColor(f *testing.F) {
	for _, s := range []string{"rgb(1,2,3)", "rgba(1 2 3 / 4%)", "#abc", "hsl(-720deg 200% -5%)", "color(srgb-linear 2 -1 0.5 / 0.5)", "oklch(50% 0.4 720)", "rgb(1e308, 1e308, 1e308)", "((((", "#", "rgb(/)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := ParseColor(s)
		if !ok {
			return
		}
		for _, v := range []float64{c.R, c.G, c.B} {
			if math.IsNaN(v) || v < 0 || v > 255 {
				t.Fatalf("ParseColor(%q) = %v: channel out of range", s, c)
			}
		}
		if math.IsNaN(c.A) || c.A < 0 || c.A > 1 {
			t.Fatalf("ParseColor(%q) = %v: alpha out of range", s, c)
		}
		if r := Contrast(c, Color{255, 255, 255, 1}); r < 1 || r > 21.0001 {
			t.Fatalf("contrast %v out of range", r)
		}
	})
}
