package pattern

import (
	"path"
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		glob, s string
		want    bool
	}{
		{"github__create_issue", "github__create_issue", true},
		{"github__create_issue", "github__create_issues", false},
		{"github__*", "github__x", true},
		{"github__*", "gitlab__x", false},
		{"*__delete", "a__delete", true},
		{"*delete*", "github__bulk_delete_repos", true},
		{"*delete*", "github__remove", false},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"a*b", "ab", true},
		{"a*b", "abxb", true},
		{"a*b", "abx", false},
		{"?", "é", true},
		{"??", "é", false},
		{"get_?", "get_x", true},
		{"get_?", "get_", false},
		{"[a-c]x", "bx", true},
		{"[a-c]x", "dx", false},
		{"[!a-c]x", "dx", true},
		{"[^a-c]x", "ax", false},
		{"[\\]]", "]", true},
		{"\\*", "*", true},
		{"\\*", "x", false},
		{"a\\?", "a?", true},
		{"**", "anything/with/slashes", true},
		{"*", "", true},
		{"", "", true},
		{"", "x", false},
		{"*a*a*a*a*a*b", strings.Repeat("a", 200), false},
		{"srv__[0-9][0-9]*", "srv__42x", true},
	}
	for _, tc := range cases {
		g, err := CompileGlob(tc.glob)
		if err != nil {
			t.Fatalf("CompileGlob(%q): %v", tc.glob, err)
		}
		if got := g.Match(tc.s); got != tc.want {
			t.Errorf("Glob(%q).Match(%q) = %v, want %v", tc.glob, tc.s, got, tc.want)
		}
	}
}

func TestGlobErrors(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"a[", "[]", "[b-a]", "x\\", "[a-", strings.Repeat("a", MaxGlobLen+1), "\xff"} {
		if _, err := CompileGlob(bad); err == nil {
			t.Errorf("CompileGlob(%q) accepted a malformed glob", bad)
		}
	}
}

// FuzzGlob checks the matcher against path.Match on ASCII inputs without
// '/' (where the two agree), and that it never panics. On other text they
// differ by design: path.Match's '*' advances byte by byte and can stop
// inside a multi-byte character, after which '?' matches single bytes of it
// (path.Match("*???", "包0") is true), while a glob here matches whole
// code points (TestGlobMatchesCodePoints).
func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{{"a*b", "aab"}, {"[a-c]?", "bz"}, {"*x*y*", "axbyc"}, {"\\*", "*"}, {"[!x]", "y"}, {"*?*", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, glob, s string) {
		g, err := CompileGlob(glob)
		if err != nil {
			return
		}
		got := g.Match(s)
		if strings.ContainsRune(glob+s, '/') || strings.Contains(glob, "^") || strings.Contains(glob, "\\") || strings.Contains(glob, "[") {
			return // path.Match differs: '/' separator, '^' negation, escapes inside classes
		}
		if !isASCII(glob + s) {
			return // path.Match's '*' may split a character (see above)
		}
		want, perr := path.Match(glob, s)
		if perr == nil && got != want {
			t.Errorf("Glob(%q).Match(%q) = %v, path.Match = %v", glob, s, got, want)
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// TestGlobMatchesCodePoints: '?' is one code point and '*' never stops
// inside a character, unlike path.Match (a fuzzing finding, kept as a
// seed in testdata/fuzz/FuzzGlob).
func TestGlobMatchesCodePoints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		glob, s string
		want    bool
	}{
		{"*???", "包0", false},
		{"*??", "包0", true},
		{"??", "包0", true},
		{"?", "包", true},
		{"*0", "包0", true},
	} {
		g, err := CompileGlob(tc.glob)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Match(tc.s); got != tc.want {
			t.Errorf("Glob(%q).Match(%q) = %v, want %v", tc.glob, tc.s, got, tc.want)
		}
	}
}

func TestParsePath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"a":             "a",
		"a.b":           "a.b",
		"files[0].path": "files[0].path",
		"labels[*]":     "labels[*]",
		"m[1][2]":       "m[1][2]",
		"[0].x":         "[0].x",
	} {
		p, err := ParsePath(in)
		if err != nil {
			t.Errorf("ParsePath(%q): %v", in, err)
			continue
		}
		if got := p.String(); got != want {
			t.Errorf("ParsePath(%q).String() = %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"", "a..b", ".a", "a.", "a[", "a[x]", "a[-1]", "a]", "a[0]b", "a.[0]", "a[+1]"} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("ParsePath(%q) accepted a malformed path", bad)
		}
	}
}

func TestCompileRegexpLimits(t *testing.T) {
	t.Parallel()
	if _, err := CompileRegexp(`(?i)\bdrop\s+table\b`); err != nil {
		t.Errorf("ordinary regexp refused: %v", err)
	}
	if _, err := CompileRegexp(strings.Repeat(`\w{1000}`, 11)); err == nil {
		t.Error("a regexp compiling to >10000 instructions was accepted")
	}
	if _, err := CompileRegexp(strings.Repeat("a", MaxRegexpLen+1)); err == nil {
		t.Error("an over-long regexp was accepted")
	}
	if _, err := CompileRegexp(`(?P<x`); err == nil {
		t.Error("a malformed regexp was accepted")
	}
}

func TestMatchNoAllocs(t *testing.T) {
	g := MustCompileGlob("*__del?te_[a-z]*")
	if n := testing.AllocsPerRun(100, func() { g.Match("github__delete_repo") }); n != 0 {
		t.Errorf("Match allocates %v times", n)
	}
}

// FuzzParsePath: a parsed path renders back to a string that parses to the
// same path.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"a.b", "files[0].path", "labels[*]", "[1][2]", "a..b", "a[", "a]b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePath(s)
		if err != nil {
			return
		}
		q, err := ParsePath(p.String())
		if err != nil || q.String() != p.String() {
			t.Fatalf("%q → %q → %q (%v)", s, p.String(), q.String(), err)
		}
	})
}
