// Package inspect is the gateway's content gate: it scans tool definitions
// (at connect and on list_changed), call arguments and call results for
// prompt injection and secrets, in off, warn or enforce mode.
//
// Text is normalized before matching (see Normalize: ANSI escapes, invisible
// and bidi characters, tag smuggling, NFKC, Greek and Cyrillic look-alikes),
// words joined by zero-width characters are also read apart, and base64,
// hex, percent-encoded and HTML-escaped segments are decoded (to
// MaxDecodeDepth levels, within a byte budget) and scanned too. JSON is
// scanned as the strings it holds, with each object member also seen as
// "key: value" so a secret under an "api_key" member is found in context; a
// tool definition is scanned again with its identifiers read as words, so a
// payload in a property name, a type or a required entry is read too.
//
// Injection is judged by what a sentence asks for (intent.go): reading a
// credential file, sending secrets or the conversation somewhere, calling a
// tool on them, hiding something from the user, overriding earlier
// instructions or another tool. A tag such as <IMPORTANT> or a mention of
// credentials in a description is no finding by itself. Secrets are
// providers' token formats, checksummed where the format allows, and
// generic assignments whose value looks random; documented examples and
// placeholders are not secrets (secrets.go).
//
// Invariants: a finding names its detector, never the matched text, so a
// denial or a warning can never echo the secret it found; every operator
// pattern is RE2 (linear time) and size-limited; a payload larger than
// MaxBytes is not half-scanned and passed: in enforce mode it is refused. In warn mode
// every finding on every surface is returned as a warning (see Warnings).
package inspect

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/gateway/pattern"
)

// Finding is one detector that fired. It deliberately has no field for the
// matched text.
type Finding struct {
	Detector string
	Category Category
}

// Result is what one scan found.
type Result struct {
	Findings []Finding // secrets first, then injections, each detector once
	Oversize bool      // the payload exceeded MaxBytes and was not fully scanned
}

// Clean reports whether r found nothing and scanned everything.
func (r Result) Clean() bool { return len(r.Findings) == 0 && !r.Oversize }

// Pattern is an operator-defined detector.
type Pattern struct {
	Name     string
	Category Category
	Regex    string // RE2
}

// Options configure a Scanner. The zero value is the built-in pack.
type Options struct {
	// Disable names built-in detectors to leave out.
	Disable []string
	// Patterns are added after the built-ins.
	Patterns []Pattern
	// MaxBytes bounds the text scanned per payload; zero means DefaultMaxBytes.
	MaxBytes int
}

// DefaultMaxBytes is the default bound on one payload's text.
const DefaultMaxBytes = 4 << 20

// Scanner runs the detectors. It is immutable (but for the buffers its
// flattener reuses) and safe for concurrent use.
type Scanner struct {
	detectors []*detector
	idx       startIndex
	maxBytes  int
	flat      flattener
}

// BuiltinDetectors lists the names of the built-in detectors.
func BuiltinDetectors() []string {
	var out []string
	for _, d := range builtins() {
		out = append(out, d.name)
	}
	return out
}

// NewScanner builds a Scanner.
func NewScanner(o Options) (*Scanner, error) {
	all := builtins()
	for _, n := range o.Disable {
		if !slices.ContainsFunc(all, func(d *detector) bool { return d.name == n }) {
			return nil, fmt.Errorf("inspect: cannot disable unknown detector %q (built-ins: %s)", n, strings.Join(BuiltinDetectors(), ", "))
		}
	}
	s := &Scanner{maxBytes: o.MaxBytes}
	if s.maxBytes <= 0 {
		s.maxBytes = DefaultMaxBytes
	}
	for _, d := range all {
		if !slices.Contains(o.Disable, d.name) {
			s.detectors = append(s.detectors, d)
		}
	}
	for _, p := range o.Patterns {
		re, err := pattern.CompileRegexp(p.Regex)
		if err != nil {
			return nil, fmt.Errorf("inspect: pattern %s: %w", p.Name, err)
		}
		if p.Category != Secret && p.Category != Injection {
			return nil, fmt.Errorf("inspect: pattern %s: unknown category", p.Name)
		}
		s.detectors = append(s.detectors, &detector{name: p.Name, category: p.Category, re: re})
	}
	// Secrets first: when a text holds both, the secret is what matters.
	slices.SortStableFunc(s.detectors, func(a, b *detector) int { return int(a.category) - int(b.category) })
	slot := 0
	for _, d := range s.detectors {
		if d.wholeSentence {
			d.slot, slot = slot, slot+1 // at most maxSlots, all built-in
		}
	}
	s.idx = newStartIndex(s.detectors)
	return s, nil
}

// FromConfig builds the Scanner and Mode of [inspect], as
// config.File.WithDefaults leaves it (an empty mode is an error).
func FromConfig(c config.Inspect) (*Scanner, Mode, error) {
	o := Options{Disable: c.Disable}
	for _, p := range c.Patterns {
		cat := Injection
		if p.Kind == "secret" {
			cat = Secret
		}
		o.Patterns = append(o.Patterns, Pattern{Name: p.Name, Category: cat, Regex: p.Regex})
	}
	s, err := NewScanner(o)
	if err != nil {
		return nil, 0, err
	}
	m, err := ParseMode(c.Mode)
	return s, m, err
}

// ScanText scans one text.
func (s *Scanner) ScanText(text string) Result {
	var r Result
	if len(text) > s.maxBytes {
		text, r.Oversize = text[:s.maxBytes], true
	}
	sc := scan{s: s, budget: 2*len(text) + 4096}
	sc.segment(Normalize(text), 0)
	if !plainASCII(text) {
		if sp, ok := spaced(text); ok {
			sc.segment(Normalize(sp), 0)
		}
	}
	r.Findings = sc.found
	return r
}

// ScanTool scans a tool definition: every string in it, keys as well as
// values (ScanJSON), and again with identifiers read as words (see
// wordify), since a schema's property names and enum values are text the
// model reads too.
func (s *Scanner) ScanTool(raw []byte) Result {
	r, text := s.scanJSON(raw)
	if w := wordify(text); w != text {
		for _, f := range s.ScanText(w).Findings {
			if !slices.Contains(r.Findings, f) {
				r.Findings = append(r.Findings, f)
			}
		}
		slices.SortStableFunc(r.Findings, func(a, b Finding) int { return int(a.Category) - int(b.Category) })
	}
	return r
}

// ScanJSON scans the strings of a JSON value (see flattener.flatten for the
// text it makes of them); text that is not JSON is scanned as text.
func (s *Scanner) ScanJSON(raw []byte) Result {
	r, _ := s.scanJSON(raw)
	return r
}

// scanJSON is ScanJSON, also returning the text it scanned.
func (s *Scanner) scanJSON(raw []byte) (Result, string) {
	text, over, ok := s.flat.flatten(raw, s.maxBytes)
	if !ok {
		text = string(raw)
	}
	r := s.ScanText(text)
	r.Oversize = r.Oversize || over
	return r, text
}

type scan struct {
	s      *Scanner
	found  []Finding
	budget int
	// judged holds, per whole-sentence judge (by its slot), one past the
	// start of the sentence it last saw, so a sentence with many start
	// words is judged once.
	judged [maxSlots]int32
	// sent is the last sentence sentenceAt found in the text run is
	// scanning, as lo+1 and hi, so the start words of one sentence find
	// its bounds once.
	sentLo, sentHi int
}

func (sc *scan) has(name string) bool {
	for _, f := range sc.found {
		if f.Detector == name {
			return true
		}
	}
	return false
}

func (sc *scan) segment(t string, depth int) {
	sc.run(t)
	if depth < MaxDecodeDepth && len(sc.found) < len(sc.s.detectors) {
		decodings(t, &sc.budget, func(d string) { sc.segment(d, depth+1) })
	}
}

// run applies every detector that has not fired yet to t.
func (sc *scan) run(t string) {
	lower := asciiLower(t)
	sc.judged = [maxSlots]int32{} // offsets are into this text
	sc.sentLo, sc.sentHi = 0, 0
	s := sc.s
	// One pass over the text finds every start of every built-in detector.
	for p := 0; p+1 < len(lower); p++ {
		c := lower[p]
		if !s.idx.first[c] {
			continue
		}
		pair := uint16(c)<<8 | uint16(lower[p+1])
		if s.idx.pairs[pair>>6]&(1<<(pair&63)) == 0 {
			continue
		}
		for _, ref := range s.idx.candidates(pair) {
			d := s.detectors[ref.det]
			if !strings.HasPrefix(lower[p:], ref.kw) || sc.has(d.name) {
				continue
			}
			if d.judge != nil {
				if sc.judge(ref.det, lower, p) {
					sc.found = append(sc.found, Finding{Detector: d.name, Category: d.category})
				}
				continue
			}
			if d.tryAt(t, lower, p) && !(d.category == Injection && quotedMention(lower, p)) {
				sc.found = append(sc.found, Finding{Detector: d.name, Category: d.category})
			}
		}
	}
	for _, d := range s.detectors {
		if d.starts == nil && !sc.has(d.name) && d.matchIn(t) {
			sc.found = append(sc.found, Finding{Detector: d.name, Category: d.category})
		}
	}
	// Secrets first, then by rule pack order, whatever order they fired in.
	slices.SortStableFunc(sc.found, func(a, b Finding) int { return int(a.Category) - int(b.Category) })
}

// judge runs intent detector det on the sentence of lower around p,
// unless it has judged that sentence already.
func (sc *scan) judge(det int, lower string, p int) bool {
	d := sc.s.detectors[det]
	lo, hi := sc.sentLo-1, sc.sentHi
	if p < lo || p >= hi {
		lo, hi = sentenceAt(lower, p)
		sc.sentLo, sc.sentHi = lo+1, hi
	}
	if d.wholeSentence {
		if sc.judged[d.slot] == int32(lo+1) {
			return false
		}
		sc.judged[d.slot] = int32(lo + 1)
	}
	return d.judge(lower[lo:hi], p-lo) && !quotedMention(lower, p)
}

// startIndex finds the detectors' start words in one pass: a filter on the
// first byte, a bitset on the first two bytes, then the candidates. The
// candidates of the pairs in the bitset are refs in the pairs' order; a
// pair's place among them is its rank in the bitset (rank holds the count
// of pairs before each word), which costs less than a map lookup per pair.
type startIndex struct {
	first [256]bool
	pairs [65536 / 64]uint64
	rank  [65536 / 64]uint16
	refs  [][]startRef
}

// candidates returns the start words beginning with pair, which is in the
// bitset.
func (x *startIndex) candidates(pair uint16) []startRef {
	w := pair >> 6
	return x.refs[int(x.rank[w])+bits.OnesCount64(x.pairs[w]&(1<<(pair&63)-1))]
}

type startRef struct {
	det int
	kw  string
}

func newStartIndex(ds []*detector) startIndex {
	var x startIndex
	byPair := map[uint16][]startRef{}
	for i, d := range ds {
		for _, kw := range d.starts {
			if len(kw) < 2 {
				panic("inspect: start words need two bytes") // built-ins only; a programming error
			}
			pair := uint16(kw[0])<<8 | uint16(kw[1])
			x.first[kw[0]] = true
			x.pairs[pair>>6] |= 1 << (pair & 63)
			byPair[pair] = append(byPair[pair], startRef{i, kw})
		}
	}
	n := 0
	for w, word := range x.pairs {
		x.rank[w] = uint16(n)
		n += bits.OnesCount64(word)
	}
	x.refs = make([][]startRef, 0, n)
	for pair := range 65536 {
		if x.pairs[pair>>6]&(1<<(pair&63)) != 0 {
			x.refs = append(x.refs, byPair[uint16(pair)])
		}
	}
	return x
}

func asciiLower(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return r >= 'A' && r <= 'Z' })
	if i < 0 {
		return s
	}
	b := []byte(s)
	for j := i; j < len(b); j++ {
		if c := b[j]; c >= 'A' && c <= 'Z' {
			b[j] = c + 32
		}
	}
	return string(b)
}

// tryAt tries d at a start found at p (lower is t with ASCII lower-cased,
// byte for byte, so offsets agree).
func (d *detector) tryAt(t, lower string, p int) bool {
	if d.boundary && p > 0 && isWord(lower[p-1]) {
		return false
	}
	end := min(len(t), p+d.span)
	if d.onLower {
		// Injection phrases do not cross a sentence or a paragraph: stop
		// at ". " or a blank line (a URL's dots have no space after them;
		// a single newline is read straight through, so it is no cut).
		if i := sentenceEnd(lower[p:end]); i >= 0 {
			end = p + i
		}
	}
	near := end
	if d.needsWithin > 0 {
		near = min(end, p+d.needsWithin)
	}
	if d.needs != nil && !slices.ContainsFunc(d.needs, func(n string) bool { return strings.Contains(lower[p:near], n) }) {
		return false
	}
	if d.onLower {
		return d.matchIn(lower[p:end])
	}
	return d.matchIn(t[p:end])
}

// sentenceEnd returns the offset of the first blank line or of a period
// followed by white space in s, or -1.
func sentenceEnd(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\n':
			if i+1 < len(s) && s[i+1] == '\n' {
				return i
			}
		case '.':
			if i+1 < len(s) && (s[i+1] == ' ' || s[i+1] == '\t' || s[i+1] == '\r' || s[i+1] == '\n') {
				return i + 1
			}
		}
	}
	return -1
}

func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func (d *detector) matchIn(t string) bool {
	if d.valid == nil {
		return d.re.MatchString(t)
	}
	for _, m := range d.re.FindAllStringSubmatchIndex(t, -1) {
		g := d.secretGroup
		if m[2*g] >= 0 && d.valid(t[m[2*g]:m[2*g+1]]) {
			return true
		}
	}
	return false
}
