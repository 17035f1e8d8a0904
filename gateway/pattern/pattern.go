// Package pattern compiles the two kinds of operator-written patterns the
// gateway matches names and argument values with: globs and size-limited
// RE2 regular expressions.
//
// Glob syntax, matched against a whole string, case-sensitively:
//
//   - any sequence of characters, empty included; unlike path.Match
//     it has no separator, so "github__*" and "*delete*" work
//     ?        exactly one character (one Unicode code point)
//     [class]  one character in the class: runes and ranges a-z;
//     [!class] or [^class] negates
//     \c       the character c literally (so \*, \?, \[ and \\ are literals)
//
// A glob is never turned into a regular expression, so a pattern cannot
// inject one. Malformed globs (an unclosed class, an empty class, a range
// running backwards, a trailing backslash) are errors at compile time, never
// silent non-matches: a deny rule that cannot match would fail open.
//
// Matching is linear in practice and at worst O(len(glob) × len(s)); it
// never allocates.
package pattern

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// MaxGlobLen bounds a glob's length in bytes.
const MaxGlobLen = 512

type kind uint8

const (
	kLit   kind = iota // one rune
	kAny               // ?
	kStar              // *
	kClass             // [...]
)

type token struct {
	kind   kind
	r      rune
	neg    bool
	ranges []rune // pairs lo, hi
}

// Glob is a compiled glob. The zero Glob matches only the empty string.
type Glob struct {
	src  string
	toks []token
	// fast paths, chosen at compile time
	fast    uint8 // 0 general, 1 exact, 2 prefix*, 3 *suffix, 4 *, 5 *infix*
	literal string
}

const (
	fastNone = iota
	fastExact
	fastPrefix
	fastSuffix
	fastAll
	fastInfix
)

// CompileGlob parses a glob.
func CompileGlob(src string) (*Glob, error) {
	if len(src) > MaxGlobLen {
		return nil, fmt.Errorf("glob is longer than %d bytes", MaxGlobLen)
	}
	if !utf8.ValidString(src) {
		return nil, errors.New("glob is not valid UTF-8")
	}
	g := &Glob{src: src}
	for i := 0; i < len(src); {
		r, w := utf8.DecodeRuneInString(src[i:])
		switch r {
		case '*':
			if n := len(g.toks); n == 0 || g.toks[n-1].kind != kStar { // ** is *
				g.toks = append(g.toks, token{kind: kStar})
			}
			i += w
		case '?':
			g.toks = append(g.toks, token{kind: kAny})
			i += w
		case '\\':
			if i+w >= len(src) {
				return nil, fmt.Errorf("glob %q ends in a lone backslash", src)
			}
			r2, w2 := utf8.DecodeRuneInString(src[i+w:])
			g.toks = append(g.toks, token{kind: kLit, r: r2})
			i += w + w2
		case '[':
			t, n, err := parseClass(src, i+w)
			if err != nil {
				return nil, fmt.Errorf("glob %q: %w", src, err)
			}
			g.toks = append(g.toks, t)
			i = n
		default:
			g.toks = append(g.toks, token{kind: kLit, r: r})
			i += w
		}
	}
	g.chooseFast()
	return g, nil
}

// MustCompileGlob is CompileGlob for literals in tests; it panics on error.
func MustCompileGlob(src string) *Glob {
	g, err := CompileGlob(src)
	if err != nil {
		panic(err)
	}
	return g
}

func parseClass(src string, i int) (token, int, error) {
	t := token{kind: kClass}
	if i < len(src) && (src[i] == '!' || src[i] == '^') {
		t.neg = true
		i++
	}
	for {
		if i >= len(src) {
			return t, 0, errors.New("unclosed character class")
		}
		if src[i] == ']' {
			if len(t.ranges) == 0 {
				return t, 0, errors.New("empty character class")
			}
			return t, i + 1, nil
		}
		lo, n, err := classRune(src, i)
		if err != nil {
			return t, 0, err
		}
		i = n
		hi := lo
		if i+1 < len(src) && src[i] == '-' && src[i+1] != ']' {
			hi, n, err = classRune(src, i+1)
			if err != nil {
				return t, 0, err
			}
			if hi < lo {
				return t, 0, fmt.Errorf("character range %c-%c runs backwards", lo, hi)
			}
			i = n
		}
		t.ranges = append(t.ranges, lo, hi)
	}
}

func classRune(src string, i int) (rune, int, error) {
	if src[i] == '\\' {
		i++
		if i >= len(src) {
			return 0, 0, errors.New("unclosed character class")
		}
	}
	r, w := utf8.DecodeRuneInString(src[i:])
	return r, i + w, nil
}

func (g *Glob) chooseFast() {
	lit := func(ts []token) (string, bool) {
		var b strings.Builder
		for _, t := range ts {
			if t.kind != kLit {
				return "", false
			}
			b.WriteRune(t.r)
		}
		return b.String(), true
	}
	n := len(g.toks)
	if s, ok := lit(g.toks); ok {
		g.fast, g.literal = fastExact, s
		return
	}
	if n == 1 && g.toks[0].kind == kStar {
		g.fast = fastAll
		return
	}
	if n >= 2 && g.toks[n-1].kind == kStar {
		if s, ok := lit(g.toks[:n-1]); ok {
			g.fast, g.literal = fastPrefix, s
			return
		}
	}
	if n >= 2 && g.toks[0].kind == kStar {
		if s, ok := lit(g.toks[1:]); ok {
			g.fast, g.literal = fastSuffix, s
			return
		}
	}
	if n >= 3 && g.toks[0].kind == kStar && g.toks[n-1].kind == kStar {
		if s, ok := lit(g.toks[1 : n-1]); ok {
			g.fast, g.literal = fastInfix, s
		}
	}
}

// String returns the glob as written.
func (g *Glob) String() string { return g.src }

// Literal returns the exact string g matches if g has no wildcard.
func (g *Glob) Literal() (string, bool) { return g.literal, g.fast == fastExact }

// Match reports whether g matches all of s.
func (g *Glob) Match(s string) bool {
	switch g.fast {
	case fastExact:
		return s == g.literal
	case fastPrefix:
		return strings.HasPrefix(s, g.literal)
	case fastSuffix:
		return strings.HasSuffix(s, g.literal)
	case fastAll:
		return true
	case fastInfix:
		return strings.Contains(s, g.literal)
	}
	return g.match(s)
}

// match is the classic wildcard walk: on a mismatch, retry from the most
// recent star with it absorbing one more character.
func (g *Glob) match(s string) bool {
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		if p < len(g.toks) {
			t := &g.toks[p]
			if t.kind == kStar {
				starP, starI = p, i
				p++
				continue
			}
			r, w := utf8.DecodeRuneInString(s[i:])
			if t.matches(r) {
				p++
				i += w
				continue
			}
		}
		if starP < 0 {
			return false
		}
		_, w := utf8.DecodeRuneInString(s[starI:])
		starI += w
		p, i = starP+1, starI
	}
	for p < len(g.toks) && g.toks[p].kind == kStar {
		p++
	}
	return p == len(g.toks)
}

func (t *token) matches(r rune) bool {
	switch t.kind {
	case kLit:
		return r == t.r
	case kAny:
		return true
	case kClass:
		in := false
		for j := 0; j < len(t.ranges); j += 2 {
			if t.ranges[j] <= r && r <= t.ranges[j+1] {
				in = true
				break
			}
		}
		return in != t.neg
	}
	return false
}

// MatchAny reports whether any glob in gs matches s.
func MatchAny(gs []*Glob, s string) bool {
	for _, g := range gs {
		if g.Match(s) {
			return true
		}
	}
	return false
}

// CompileGlobs compiles each glob; the error names the first bad one.
func CompileGlobs(srcs []string) ([]*Glob, error) {
	out := make([]*Glob, 0, len(srcs))
	for _, s := range srcs {
		g, err := CompileGlob(s)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// Limits on operator-written regular expressions. RE2 matching is linear in
// the input, so the risk is the compiled program's size (a{1000}{1000}), not
// backtracking; both the source and the program are bounded.
const (
	MaxRegexpLen   = 1024
	MaxRegexpInsts = 10000
)

// CompileRegexp compiles an RE2 expression after checking its size limits.
func CompileRegexp(expr string) (*regexp.Regexp, error) {
	if len(expr) > MaxRegexpLen {
		return nil, fmt.Errorf("regular expression is longer than %d bytes", MaxRegexpLen)
	}
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("regular expression %q: %w", expr, err)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, fmt.Errorf("regular expression %q: %w", expr, err)
	}
	if len(prog.Inst) > MaxRegexpInsts {
		return nil, fmt.Errorf("regular expression %q compiles to %d instructions (limit %d)", expr, len(prog.Inst), MaxRegexpInsts)
	}
	return regexp.Compile(expr)
}
