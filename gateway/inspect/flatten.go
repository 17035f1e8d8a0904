package inspect

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// flattener keeps parsers for reuse: a call's arguments and its result are
// each flattened once per call, and a parser's buffers halve the time.
// The zero value is ready to use.
type flattener struct{ pool sync.Pool }

// flatten writes the text the content gate scans for the JSON value raw:
// each string a line, each object member with a scalar value as
// "key: value", a member holding an array or object as its key on a line of
// its own followed by its contents, members in key order, image and audio
// data left out (base64 media the model does not read as text). Numbers,
// booleans and nulls outside an object say nothing and are left out.
//
// It is one pass over raw plus one over a small tree, instead of decoding
// into map[string]any: the gate runs on every call's arguments and result.
// What it accepts and what it writes are exactly what encoding/json's
// Unmarshal into an any, then a walk of that value, would give (the fuzz
// test FuzzFlattenMatchesDecoder holds it to that):
//   - ok is false whenever Unmarshal would fail: a syntax error anywhere,
//     nesting deeper than 10000, or a number out of float64's range; the
//     caller then scans raw as text;
//   - strings are unescaped as Unmarshal does (invalid UTF-8 and lone
//     surrogates become U+FFFD);
//   - a key given twice keeps its last value, as a map would;
//   - numbers are written as fmt.Print writes a float64.
//
// It stops writing once the text passes max bytes and then reports over;
// the text written is always a prefix of the whole.
func (f *flattener) flatten(raw []byte, max int) (text string, over, ok bool) {
	p, _ := f.pool.Get().(*parser)
	if p == nil {
		p = new(parser)
	}
	defer f.release(p)
	p.raw = raw
	root, ok := p.document()
	if !ok {
		return "", false, false
	}
	var b strings.Builder
	b.Grow(min(len(raw), max+1))
	p.out, p.max = &b, max
	p.element(root)
	return b.String(), b.Len() > max, true
}

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

type kind uint8

const (
	kString kind = iota
	kNumber
	kTrue
	kFalse
	kNull
	kArray
	kObject
)

// span is text held in raw (a string without escapes, a number) or, once
// unescaped, in the parser's arena.
type span struct {
	off, n int
	arena  bool
}

type node struct {
	kind  kind
	key   span    // the member's key, when the parent is an object
	val   span    // a string's text
	num   float64 // a number's value
	child int     // first child, or -1
	next  int     // next sibling, or -1
}

// parser holds one flattening's state and the buffers reused by the next.
type parser struct {
	raw     []byte
	pos     int
	depth   int
	nodes   []node
	arena   []byte
	members []int // a stack of objects' members being ordered
	num     []byte
	out     *strings.Builder
	max     int
}

// release keeps p for reuse unless one large payload has grown it past
// about a megabyte of text or of nodes (a node is 80 bytes).
func (f *flattener) release(p *parser) {
	if cap(p.arena) > 1<<20 || cap(p.nodes) > 1<<14 {
		return
	}
	*p = parser{nodes: p.nodes[:0], arena: p.arena[:0], members: p.members[:0], num: p.num[:0]}
	f.pool.Put(p)
}

func (p *parser) bytes(s span) []byte {
	if s.arena {
		return p.arena[s.off : s.off+s.n]
	}
	return p.raw[s.off : s.off+s.n]
}

// document parses the whole of raw as one value with only white space
// around it.
func (p *parser) document() (int, bool) {
	p.space()
	root, ok := p.value()
	if !ok {
		return 0, false
	}
	p.space()
	return root, p.pos == len(p.raw)
}

func (p *parser) space() {
	for p.pos < len(p.raw) {
		switch p.raw[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) add(n node) int {
	p.nodes = append(p.nodes, n)
	return len(p.nodes) - 1
}

func (p *parser) value() (int, bool) {
	if p.pos >= len(p.raw) {
		return 0, false
	}
	switch c := p.raw[p.pos]; {
	case c == '"':
		s, ok := p.string()
		return p.add(node{kind: kString, val: s, child: -1, next: -1}), ok
	case c == '{' || c == '[':
		return p.container(c)
	case c == '-' || c >= '0' && c <= '9':
		f, ok := p.number()
		return p.add(node{kind: kNumber, num: f, child: -1, next: -1}), ok
	case c == 't':
		return p.add(node{kind: kTrue, child: -1, next: -1}), p.literal("true")
	case c == 'f':
		return p.add(node{kind: kFalse, child: -1, next: -1}), p.literal("false")
	case c == 'n':
		return p.add(node{kind: kNull, child: -1, next: -1}), p.literal("null")
	}
	return 0, false
}

func (p *parser) literal(word string) bool {
	if !bytes.HasPrefix(p.raw[p.pos:], []byte(word)) {
		return false
	}
	p.pos += len(word)
	return true
}

// container parses an array or an object; open is its first byte.
func (p *parser) container(open byte) (int, bool) {
	p.depth++
	if p.depth > maxDepth {
		return 0, false
	}
	defer func() { p.depth-- }()
	closer, k := byte(']'), kArray
	if open == '{' {
		closer, k = '}', kObject
	}
	self := p.add(node{kind: k, child: -1, next: -1})
	p.pos++
	p.space()
	if p.pos < len(p.raw) && p.raw[p.pos] == closer {
		p.pos++
		return self, true
	}
	last := -1
	for {
		var key span
		if k == kObject {
			if p.pos >= len(p.raw) || p.raw[p.pos] != '"' {
				return 0, false
			}
			var ok bool
			if key, ok = p.string(); !ok {
				return 0, false
			}
			p.space()
			if p.pos >= len(p.raw) || p.raw[p.pos] != ':' {
				return 0, false
			}
			p.pos++
			p.space()
		}
		child, ok := p.value()
		if !ok {
			return 0, false
		}
		p.nodes[child].key = key
		if last < 0 {
			p.nodes[self].child = child
		} else {
			p.nodes[last].next = child
		}
		last = child
		p.space()
		if p.pos >= len(p.raw) {
			return 0, false
		}
		switch p.raw[p.pos] {
		case ',':
			p.pos++
			p.space()
		case closer:
			p.pos++
			return self, true
		default:
			return 0, false
		}
	}
}

// number checks JSON's number grammar and that the value fits a float64,
// as Unmarshal into an any requires.
func (p *parser) number() (float64, bool) {
	start, r := p.pos, p.raw
	i := start
	if i < len(r) && r[i] == '-' {
		i++
	}
	switch {
	case i < len(r) && r[i] == '0':
		i++
	case i < len(r) && r[i] >= '1' && r[i] <= '9':
		i = digits(r, i)
	default:
		return 0, false
	}
	if i < len(r) && r[i] == '.' {
		i++
		if i >= len(r) || r[i] < '0' || r[i] > '9' {
			return 0, false
		}
		i = digits(r, i)
	}
	if i < len(r) && (r[i] == 'e' || r[i] == 'E') {
		i++
		if i < len(r) && (r[i] == '+' || r[i] == '-') {
			i++
		}
		if i >= len(r) || r[i] < '0' || r[i] > '9' {
			return 0, false
		}
		i = digits(r, i)
	}
	p.pos = i
	f, err := strconv.ParseFloat(string(r[start:i]), 64)
	return f, err == nil
}

func digits(r []byte, i int) int {
	for i < len(r) && r[i] >= '0' && r[i] <= '9' {
		i++
	}
	return i
}

// string parses a string at p.pos (its opening quote) and returns its text:
// a span of raw when it needs no unescaping, else of the arena.
func (p *parser) string() (span, bool) {
	r := p.raw
	start := p.pos + 1
	i := start
	// The common case: printable ASCII or valid UTF-8, no escapes.
	for i < len(r) {
		c := r[i]
		if c == '"' {
			p.pos = i + 1
			return span{off: start, n: i - start}, true
		}
		if c == '\\' || c < ' ' {
			break
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		rr, size := utf8.DecodeRune(r[i:])
		if rr == utf8.RuneError && size == 1 {
			break
		}
		i += size
	}
	off := len(p.arena)
	p.arena = append(p.arena, r[start:i]...)
	for i < len(r) {
		switch c := r[i]; {
		case c == '"':
			p.pos = i + 1
			return span{off: off, n: len(p.arena) - off, arena: true}, true
		case c < ' ':
			return span{}, false
		case c == '\\':
			if i+1 >= len(r) {
				return span{}, false
			}
			switch e := r[i+1]; e {
			case '"', '\\', '/':
				p.arena = append(p.arena, e)
			case 'b':
				p.arena = append(p.arena, '\b')
			case 'f':
				p.arena = append(p.arena, '\f')
			case 'n':
				p.arena = append(p.arena, '\n')
			case 'r':
				p.arena = append(p.arena, '\r')
			case 't':
				p.arena = append(p.arena, '\t')
			case 'u':
				rr := hex4(r[i:])
				if rr < 0 {
					return span{}, false
				}
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, hex4(r[i+6:])); dec != unicode.ReplacementChar {
						p.arena = utf8.AppendRune(p.arena, dec)
						i += 12
						continue
					}
					rr = unicode.ReplacementChar
				}
				p.arena = utf8.AppendRune(p.arena, rr)
				i += 6
				continue
			default:
				return span{}, false
			}
			i += 2
		case c < utf8.RuneSelf:
			p.arena = append(p.arena, c)
			i++
		default:
			// Coerced to well-formed UTF-8: each invalid byte is U+FFFD.
			rr, size := utf8.DecodeRune(r[i:])
			p.arena = utf8.AppendRune(p.arena, rr)
			i += size
		}
	}
	return span{}, false
}

// hex4 reads a \uXXXX escape at the start of s, or returns -1.
func hex4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// full reports whether the text has passed max, where writing stops.
func (p *parser) full() bool { return p.out.Len() > p.max }

// element writes a value found in an array or at the top: only strings,
// arrays and objects say anything there.
func (p *parser) element(n int) bool {
	if p.full() {
		return true
	}
	switch nd := &p.nodes[n]; nd.kind {
	case kString:
		p.out.Write(p.bytes(nd.val))
		p.out.WriteByte('\n')
	case kArray:
		for c := nd.child; c >= 0; c = p.nodes[c].next {
			if p.element(c) {
				return true
			}
		}
	case kObject:
		return p.object(n)
	}
	return p.full()
}

// object writes an object's members in key order, the last of a repeated
// key winning.
func (p *parser) object(n int) bool {
	base := len(p.members)
	for c := p.nodes[n].child; c >= 0; c = p.nodes[c].next {
		p.members = append(p.members, c)
	}
	defer func() { p.members = p.members[:base] }()
	ms := p.members[base:]
	slices.SortStableFunc(ms, func(a, b int) int {
		return bytes.Compare(p.bytes(p.nodes[a].key), p.bytes(p.nodes[b].key))
	})
	media := false
	for i, m := range ms {
		if string(p.bytes(p.nodes[m].key)) != "type" || i+1 < len(ms) && p.sameKey(m, ms[i+1]) {
			continue
		}
		if v := &p.nodes[m]; v.kind == kString {
			t := p.bytes(v.val)
			media = string(t) == "image" || string(t) == "audio"
		}
	}
	for i, m := range ms {
		if i+1 < len(ms) && p.sameKey(m, ms[i+1]) {
			continue // a later member with this key wins
		}
		nd := &p.nodes[m]
		key := p.bytes(nd.key)
		if media && string(key) == "data" {
			continue
		}
		p.out.Write(key)
		switch nd.kind {
		case kArray, kObject:
			p.out.WriteByte('\n')
			// Nested objects push onto p.members past ms and pop back.
			if p.element(m) {
				return true
			}
			continue
		case kString:
			p.out.WriteString(": ")
			p.out.Write(p.bytes(nd.val))
		case kNumber:
			p.num = strconv.AppendFloat(p.num[:0], nd.num, 'g', -1, 64)
			p.out.WriteString(": ")
			p.out.Write(p.num)
		case kTrue:
			p.out.WriteString(": true")
		case kFalse:
			p.out.WriteString(": false")
		case kNull:
			p.out.WriteString(": <nil>")
		}
		p.out.WriteByte('\n')
		if p.full() {
			return true
		}
	}
	return p.full()
}

func (p *parser) sameKey(a, b int) bool {
	return bytes.Equal(p.bytes(p.nodes[a].key), p.bytes(p.nodes[b].key))
}
