package tokens

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Color is an sRGB colour: R, G, B in [0, 255] (not rounded, so composites
// stay exact), A in [0, 1]. The zero Color is transparent black.
type Color struct {
	R, G, B, A float64
}

// Opaque reports whether c has no transparency.
func (c Color) Opaque() bool { return c.A >= 0.999 }

// Hex returns c's RGB as #rrggbb, ignoring alpha.
func (c Color) Hex() string {
	return fmt.Sprintf("#%02x%02x%02x", clamp8(c.R), clamp8(c.G), clamp8(c.B))
}

// String returns c as #rrggbb, or rgba(...) when it is translucent.
func (c Color) String() string {
	if c.Opaque() {
		return c.Hex()
	}
	return fmt.Sprintf("rgba(%d, %d, %d, %.2f)", clamp8(c.R), clamp8(c.G), clamp8(c.B), c.A)
}

func clamp8(v float64) int {
	return int(math.Round(math.Max(0, math.Min(255, v))))
}

// Over composites c over the backdrop b (source-over).
func (c Color) Over(b Color) Color {
	a := c.A + b.A*(1-c.A)
	if a <= 0 {
		return Color{}
	}
	mix := func(x, y float64) float64 { return (x*c.A + y*b.A*(1-c.A)) / a }
	return Color{mix(c.R, b.R), mix(c.G, b.G), mix(c.B, b.B), a}
}

// Mix returns the opaque colour (1-t)·c + t·d.
func (c Color) Mix(d Color, t float64) Color {
	return Color{c.R + (d.R-c.R)*t, c.G + (d.G-c.G)*t, c.B + (d.B-c.B)*t, 1}
}

// Luminance returns c's WCAG relative luminance in [0, 1], ignoring alpha.
func (c Color) Luminance() float64 {
	return 0.2126*linear(c.R) + 0.7152*linear(c.G) + 0.0722*linear(c.B)
}

func linear(v float64) float64 {
	v = math.Max(0, math.Min(255, v)) / 255
	if v <= 0.04045 {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

// Contrast returns the WCAG 2.x contrast ratio of two colours, ignoring
// alpha (composite first), in [1, 21].
func Contrast(a, b Color) float64 {
	la, lb := a.Luminance(), b.Luminance()
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// ParseColor parses a CSS colour: hex, rgb()/rgba() (comma or space
// syntax), hsl()/hsla(), color(srgb …), oklab()/oklch(), transparent and the
// basic named colours. It reports false for anything else (for example
// currentcolor or lab()).
func ParseColor(s string) (Color, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" || len(s) > 200 {
		return Color{}, false
	}
	if s[0] == '#' {
		return parseHex(s[1:])
	}
	if c, ok := named[s]; ok {
		return c, true
	}
	open := strings.IndexByte(s, '(')
	if open <= 0 || !strings.HasSuffix(s, ")") {
		return Color{}, false
	}
	fn, body := s[:open], s[open+1:len(s)-1]
	args, alpha, ok := splitArgs(body)
	if !ok {
		return Color{}, false
	}
	switch fn {
	case "rgb", "rgba":
		if len(args) != 3 {
			return Color{}, false
		}
		var v [3]float64
		for i, a := range args {
			x, pct, ok := num(a)
			if !ok {
				return Color{}, false
			}
			if pct {
				x *= 2.55
			}
			v[i] = math.Max(0, math.Min(255, x))
		}
		return Color{v[0], v[1], v[2], alpha}, true
	case "hsl", "hsla":
		if len(args) != 3 {
			return Color{}, false
		}
		h, _, ok1 := num(strings.TrimSuffix(args[0], "deg"))
		sat, _, ok2 := num(args[1])
		l, _, ok3 := num(args[2])
		if !ok1 || !ok2 || !ok3 {
			return Color{}, false
		}
		r, g, b := hslToRGB(h, sat/100, l/100)
		return Color{r * 255, g * 255, b * 255, alpha}, true
	case "color":
		if len(args) != 4 || (args[0] != "srgb" && args[0] != "srgb-linear") {
			return Color{}, false
		}
		var v [3]float64
		for i, a := range args[1:] {
			x, pct, ok := num(a)
			if !ok {
				return Color{}, false
			}
			if pct {
				x /= 100
			}
			if args[0] == "srgb-linear" {
				x = gamma(x)
			}
			v[i] = math.Max(0, math.Min(255, x*255))
		}
		return Color{v[0], v[1], v[2], alpha}, true
	case "oklab", "oklch":
		if len(args) != 3 {
			return Color{}, false
		}
		l, lpct, ok1 := num(args[0])
		a, _, ok2 := num(args[1])
		b, _, ok3 := num(strings.TrimSuffix(args[2], "deg"))
		if !ok1 || !ok2 || !ok3 {
			return Color{}, false
		}
		if lpct {
			l /= 100
		}
		if fn == "oklch" {
			h := b * math.Pi / 180
			a, b = a*math.Cos(h), a*math.Sin(h)
		}
		r, g, bb := oklabToSRGB(l, a, b)
		return Color{r * 255, g * 255, bb * 255, alpha}, true
	}
	return Color{}, false
}

// splitArgs splits a colour function's body into its arguments and alpha
// (1 when absent), accepting "a, b, c[, alpha]" and "a b c[ / alpha]".
func splitArgs(body string) (args []string, alpha float64, ok bool) {
	alpha = 1
	var alphaStr string
	if i := strings.IndexByte(body, '/'); i >= 0 {
		body, alphaStr = body[:i], strings.TrimSpace(body[i+1:])
	}
	if strings.Contains(body, ",") {
		for _, p := range strings.Split(body, ",") {
			args = append(args, strings.TrimSpace(p))
		}
	} else {
		args = strings.Fields(body)
	}
	if alphaStr == "" && len(args) == 4 && !strings.HasPrefix(args[0], "srgb") {
		alphaStr, args = args[3], args[:3]
	}
	if alphaStr != "" {
		a, pct, aok := num(alphaStr)
		if !aok {
			return nil, 0, false
		}
		if pct {
			a /= 100
		}
		alpha = math.Max(0, math.Min(1, a))
	}
	return args, alpha, len(args) > 0
}

// num parses a CSS number or percentage; "none" is 0.
func num(s string) (v float64, pct, ok bool) {
	if s == "none" {
		return 0, false, true
	}
	if strings.HasSuffix(s, "%") {
		s, pct = s[:len(s)-1], true
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false, false
	}
	return v, pct, true
}

func parseHex(h string) (Color, bool) {
	for _, r := range h {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return Color{}, false
		}
	}
	x := func(s string) float64 { v, _ := strconv.ParseUint(s, 16, 8); return float64(v) }
	switch len(h) {
	case 3, 4:
		c := Color{x(h[0:1]) * 17, x(h[1:2]) * 17, x(h[2:3]) * 17, 1}
		if len(h) == 4 {
			c.A = x(h[3:4]) * 17 / 255
		}
		return c, true
	case 6, 8:
		c := Color{x(h[0:2]), x(h[2:4]), x(h[4:6]), 1}
		if len(h) == 8 {
			c.A = x(h[6:8]) / 255
		}
		return c, true
	}
	return Color{}, false
}

func hslToRGB(h, s, l float64) (r, g, b float64) {
	h = math.Mod(h, 360)
	if h < 0 {
		h += 360
	}
	s, l = math.Max(0, math.Min(1, s)), math.Max(0, math.Min(1, l))
	f := func(n float64) float64 {
		k := math.Mod(n+h/30, 12)
		a := s * math.Min(l, 1-l)
		return l - a*math.Max(-1, math.Min(k-3, math.Min(9-k, 1)))
	}
	return f(0), f(8), f(4)
}

func gamma(v float64) float64 {
	if v <= 0.0031308 {
		return 12.92 * v
	}
	return 1.055*math.Pow(v, 1/2.4) - 0.055
}

func oklabToSRGB(l, a, b float64) (float64, float64, float64) {
	l1 := l + 0.3963377774*a + 0.2158037573*b
	m1 := l - 0.1055613458*a - 0.0638541728*b
	s1 := l - 0.0894841775*a - 1.2914855480*b
	l1, m1, s1 = l1*l1*l1, m1*m1*m1, s1*s1*s1
	r := 4.0767416621*l1 - 3.3077115913*m1 + 0.2309699292*s1
	g := -1.2684380046*l1 + 2.6097574011*m1 - 0.3413193965*s1
	bb := -0.0041960863*l1 - 0.7034186147*m1 + 1.7076147010*s1
	c := func(v float64) float64 { return math.Max(0, math.Min(1, gamma(v))) }
	return c(r), c(g), c(bb)
}

var named = map[string]Color{
	"transparent": {0, 0, 0, 0},
	"black":       {0, 0, 0, 1},
	"white":       {255, 255, 255, 1},
	"red":         {255, 0, 0, 1},
	"green":       {0, 128, 0, 1},
	"blue":        {0, 0, 255, 1},
	"gray":        {128, 128, 128, 1},
	"grey":        {128, 128, 128, 1},
	"silver":      {192, 192, 192, 1},
	"yellow":      {255, 255, 0, 1},
	"orange":      {255, 165, 0, 1},
	"purple":      {128, 0, 128, 1},
	"navy":        {0, 0, 128, 1},
	"teal":        {0, 128, 128, 1},
	"maroon":      {128, 0, 0, 1},
	"olive":       {128, 128, 0, 1},
	"lime":        {0, 255, 0, 1},
	"aqua":        {0, 255, 255, 1},
	"fuchsia":     {255, 0, 255, 1},
}

// lab converts c (alpha ignored) to CIE L*a*b* under D65.
func lab(c Color) (l, a, b float64) {
	r, g, bl := linear(c.R), linear(c.G), linear(c.B)
	x := (0.4124564*r + 0.3575761*g + 0.1804375*bl) / 0.95047
	y := 0.2126729*r + 0.7151522*g + 0.0721750*bl
	z := (0.0193339*r + 0.1191920*g + 0.9503041*bl) / 1.08883
	f := func(t float64) float64 {
		if t > 216.0/24389 {
			return math.Cbrt(t)
		}
		return (24389.0/27*t + 16) / 116
	}
	fx, fy, fz := f(x), f(y), f(z)
	return 116*fy - 16, 500 * (fx - fy), 200 * (fy - fz)
}

// DeltaE2000 returns the CIEDE2000 difference of two colours (alpha
// ignored). About 2.3 is a just-noticeable difference.
func DeltaE2000(c1, c2 Color) float64 {
	l1, a1, b1 := lab(c1)
	l2, a2, b2 := lab(c2)
	return deltaE2000Lab(l1, a1, b1, l2, a2, b2)
}

// deltaE2000Lab is CIEDE2000 on CIE L*a*b* values (Sharma, Wu and Dalal,
// 2005).
func deltaE2000Lab(l1, a1, b1, l2, a2, b2 float64) float64 {
	const pow25to7 = 6103515625.0
	cb := (math.Hypot(a1, b1) + math.Hypot(a2, b2)) / 2
	cb7 := math.Pow(cb, 7)
	g := 0.5 * (1 - math.Sqrt(cb7/(cb7+pow25to7)))
	a1p, a2p := a1*(1+g), a2*(1+g)
	c1p, c2p := math.Hypot(a1p, b1), math.Hypot(a2p, b2)
	hue := func(b, a float64) float64 {
		if a == 0 && b == 0 {
			return 0
		}
		h := math.Atan2(b, a) * 180 / math.Pi
		if h < 0 {
			h += 360
		}
		return h
	}
	h1p, h2p := hue(b1, a1p), hue(b2, a2p)
	dl := l2 - l1
	dc := c2p - c1p
	var dh float64
	if c1p*c2p != 0 {
		dh = h2p - h1p
		if dh > 180 {
			dh -= 360
		} else if dh < -180 {
			dh += 360
		}
	}
	dH := 2 * math.Sqrt(c1p*c2p) * math.Sin(dh*math.Pi/360)
	lbp := (l1 + l2) / 2
	cbp := (c1p + c2p) / 2
	hbp := h1p + h2p
	if c1p*c2p != 0 {
		if math.Abs(h1p-h2p) > 180 {
			if hbp < 360 {
				hbp += 360
			} else {
				hbp -= 360
			}
		}
		hbp /= 2
	}
	rad := math.Pi / 180
	t := 1 - 0.17*math.Cos((hbp-30)*rad) + 0.24*math.Cos(2*hbp*rad) + 0.32*math.Cos((3*hbp+6)*rad) - 0.20*math.Cos((4*hbp-63)*rad)
	dTheta := 30 * math.Exp(-math.Pow((hbp-275)/25, 2))
	cbp7 := math.Pow(cbp, 7)
	rc := 2 * math.Sqrt(cbp7/(cbp7+pow25to7))
	sl := 1 + 0.015*math.Pow(lbp-50, 2)/math.Sqrt(20+math.Pow(lbp-50, 2))
	sc := 1 + 0.045*cbp
	sh := 1 + 0.015*cbp*t
	rt := -math.Sin(2*dTheta*rad) * rc
	return math.Sqrt(math.Pow(dl/sl, 2) + math.Pow(dc/sc, 2) + math.Pow(dH/sh, 2) + rt*(dc/sc)*(dH/sh))
}
