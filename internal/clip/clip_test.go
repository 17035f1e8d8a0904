package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven chars", 10, "eleven …"},
		{"ééééé", 8, "éé…"},            // 10 bytes; 5 left for text cuts inside the third é
		{"ab\xffcd", 10, "ab\uFFFDcd"}, // invalid UTF-8 is replaced, never passed on
		{"abcdef", 3, "abc"},           // no room for the marker
		{"éé", 3, "é"},
		{"abc", 0, ""},
		{"abc", -1, ""},
	} {
		if got := String(c.in, c.max); got != c.want {
			t.Errorf("String(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}

func FuzzString(f *testing.F) {
	f.Add("ééééé", 8)
	f.Add("ab\xffcd", 3)
	f.Add(strings.Repeat("日本", 40), 80)
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := String(s, n)
		if !utf8.ValidString(got) {
			t.Fatalf("String(%q, %d) = %q: not valid UTF-8", s, n, got)
		}
		if len(got) > max(n, 0) {
			t.Fatalf("String(%q, %d) = %q: %d bytes", s, n, got, len(got))
		}
		if valid := strings.ToValidUTF8(s, "\uFFFD"); len(valid) <= n && got != valid {
			t.Fatalf("String(%q, %d) = %q, want it whole", s, n, got)
		}
	})
}
