package inspect

import (
	"encoding/base64"
	"html"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Normalize returns s as a model would effectively read it, so detectors see
// through cosmetic evasion:
//
//   - ANSI escape sequences (CSI, OSC, two-byte escapes) and stray ESC
//     bytes are removed;
//   - Unicode tag characters (U+E0020–U+E007E, "ASCII smuggling") become
//     the ASCII characters they mirror;
//   - format characters (category Cf: zero-width spaces and joiners, bidi
//     embeddings, overrides and isolates, the BOM, soft hyphens), variation
//     selectors and Hangul fillers are removed;
//   - other control characters except tab, newline and carriage return
//     become spaces;
//   - the result is put in Unicode NFKC (fullwidth and other compatibility
//     forms fold to their plain letters);
//   - Cyrillic and Greek letters that look like Latin ones (а, е, о, р, с,
//     Α, Ο, ...) become those Latin letters, so a phrase spelled with
//     look-alikes reads as the phrase (text really in those scripts
//     becomes a harmless mixture).
//
// Pure printable ASCII is returned unchanged without copying.
func Normalize(s string) string {
	if plainASCII(s) {
		return s
	}
	return strip(norm.NFKC.String(strip(s)))
}

func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x7f || (c < 0x20 && c != '\n' && c != '\t' && c != '\r') {
			return false
		}
	}
	return true
}

// strip removes escapes and invisible characters; see Normalize.
func strip(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b:
			i += escapeLen(s[i:])
			continue
		case r == 0x9b: // C1 CSI
			i += w + csiLen(s[i+w:])
			continue
		case r >= 0xE0020 && r <= 0xE007E:
			b.WriteByte(byte(r - 0xE0000))
		case r == utf8.RuneError && w == 1:
			b.WriteRune(utf8.RuneError) // invalid bytes become U+FFFD, never pass through raw
		case invisible(r):
		case r == '\t' || r == '\n' || r == '\r':
			b.WriteRune(r)
		case unicode.IsControl(r):
			b.WriteByte(' ')
		case r >= 0x370 && r < 0x530:
			if l, ok := homoglyphs[r]; ok {
				b.WriteByte(l)
			} else {
				b.WriteRune(r)
			}
		default:
			b.WriteRune(r)
		}
		i += w
	}
	return b.String()
}

// homoglyphs maps Greek and Cyrillic letters to the Latin letters they are
// drawn like.
var homoglyphs = func() map[rune]byte {
	m := map[rune]byte{}
	for _, pair := range []string{
		"аa", "вb", "еe", "іi", "јj", "кk", "оo", "рp", "сc", "уy", "хx", "ѕs", "һh", "ԁd", "ԛq", "ԝw", "ӏl",
		"АA", "ВB", "ЕE", "КK", "МM", "НH", "ОO", "РP", "СC", "ТT", "ХX", "УY", "ІI", "ЈJ", "ЅS", "ҺH", "ԚQ", "ԜW",
		"ΑA", "ΒB", "ΕE", "ΖZ", "ΗH", "ΙI", "ΚK", "ΜM", "ΝN", "ΟO", "ΡP", "ΤT", "ΥY", "ΧX",
		"οo", "αa", "ιi", "κk", "νv", "ρp", "υu", "ϲc", "ϳj", "εe",
	} {
		r, n := utf8.DecodeRuneInString(pair)
		m[r] = pair[n]
	}
	return m
}()

// spaced returns s with each invisible character (see invisible) replaced
// by a space, and whether there was one: words joined by zero-width
// characters read as separate words to a model, while one split inside a
// word reads as the word, so a scan looks at both.
func spaced(s string) (string, bool) {
	if strings.IndexFunc(s, invisible) < 0 {
		return "", false
	}
	return strings.Map(func(r rune) rune {
		if invisible(r) {
			return ' '
		}
		return r
	}, s), true
}

// wordify returns the identifiers of s as words: '_' becomes a space and
// a lower-case letter followed by an upper-case one gets a space between,
// so a schema's property name ("readIdRsaAndPassHere",
// "send_the_system_prompt") reads as the sentence it spells.
func wordify(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || i > 0 && c >= 'A' && c <= 'Z' && s[i-1] >= 'a' && s[i-1] <= 'z' {
			if b == nil {
				b = append(make([]byte, 0, len(s)+len(s)/8), s[:i]...)
			}
			b = append(b, ' ')
			if c == '_' {
				continue
			}
		}
		if b != nil {
			b = append(b, c)
		}
	}
	if b == nil {
		return s
	}
	return string(b)
}

func invisible(r rune) bool {
	switch {
	case unicode.Is(unicode.Cf, r):
		return true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF: // variation selectors
		return true
	case r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0: // Hangul fillers render as nothing
		return true
	case r == 0x034F: // combining grapheme joiner
		return true
	}
	return false
}

// escapeLen returns the length of the escape sequence at the start of s
// (s[0] is ESC); an unrecognized or truncated one is the ESC byte alone.
func escapeLen(s string) int {
	if len(s) < 2 {
		return 1
	}
	switch c := s[1]; {
	case c == '[':
		return 2 + csiLen(s[2:])
	case c == ']' || c == 'P' || c == '_' || c == '^': // OSC, DCS, APC, PM: up to BEL or ST
		for j := 2; j < len(s); j++ {
			if s[j] == 0x07 {
				return j + 1
			}
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				return j + 2
			}
		}
		return len(s)
	case c >= 0x40 && c <= 0x5f, c >= 0x60 && c <= 0x7e: // two-byte escapes (ESC c, ESC =, ...)
		return 2
	}
	return 1
}

// csiLen returns the length of a CSI sequence's parameters and final byte.
func csiLen(s string) int {
	for j := 0; j < len(s) && j < 64; j++ {
		c := s[j]
		if c >= 0x40 && c <= 0x7e {
			return j + 1
		}
		if c < 0x20 || c > 0x3f && c < 0x40 || c > 0x7e {
			return j
		}
	}
	return min(len(s), 64)
}

// Decoding limits: how deep decoded text is decoded again, the shortest run
// tried as base64, and the total bytes decoding may add per scan.
const (
	MaxDecodeDepth = 3
	minBase64Run   = 20
)

// decodings returns the texts hidden in s by base64, percent-encoding or
// HTML character references, each normalized, while budget lasts.
func decodings(s string, budget *int, emit func(string)) {
	if *budget <= 0 {
		return
	}
	// Percent-encoding lives inside space-free tokens (URLs, form values);
	// only those are decoded, so a large text is not scanned twice.
	if strings.Contains(s, "%") {
		for _, tok := range strings.Fields(s) {
			if hasEscape(tok) {
				take(percentDecode(tok), budget, emit)
			}
		}
	}
	if strings.Contains(s, "&") {
		for _, line := range strings.Split(s, "\n") {
			if strings.Contains(line, "&") && strings.Contains(line, ";") {
				if d := html.UnescapeString(line); d != line {
					take(d, budget, emit)
				}
			}
		}
	}
	for i := 0; i < len(s) && *budget > 0; {
		if !isB64(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isB64(s[j]) {
			j++
		}
		if j-i >= minBase64Run {
			if d, ok := decodeHex(s[i:j]); ok {
				take(d, budget, emit)
			} else if d, ok := decodeBase64(s[i:j]); ok {
				take(d, budget, emit)
			}
		}
		i = j
	}
}

func take(d string, budget *int, emit func(string)) {
	if len(d) > *budget {
		d = d[:*budget]
	}
	*budget -= len(d)
	emit(Normalize(strings.ToValidUTF8(d, "\uFFFD")))
}

func isB64(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_'
}

// decodeBase64 decodes a run in any of the four alphabets/paddings and
// accepts it only if it decodes to mostly printable UTF-8 text: most runs
// (hashes, ids, binary) do not, and are not worth scanning again.
func decodeBase64(run string) (string, bool) {
	enc := base64.RawStdEncoding
	if strings.ContainsAny(run, "-_") {
		if strings.ContainsAny(run, "+/") {
			return "", false
		}
		enc = base64.RawURLEncoding
	}
	if len(run)%4 == 1 { // not a whole number of bytes: a run glued to other text
		run = run[:len(run)-1]
	}
	b, err := enc.DecodeString(run)
	if err != nil {
		return "", false
	}
	return printableText(b)
}

// printableText accepts decoded bytes that are UTF-8 and at least 90%
// printable.
func printableText(b []byte) (string, bool) {
	if len(b) == 0 || !utf8.Valid(b) {
		return "", false
	}
	printable := 0
	for _, r := range string(b) {
		if unicode.IsPrint(r) || r == '\n' || r == '\t' || r == '\r' {
			printable++
		}
	}
	if printable*10 < utf8.RuneCount(b)*9 {
		return "", false
	}
	return string(b), true
}

// decodeHex decodes a run of hex digits that spells mostly printable text
// (a hash or an id does not, and is left alone).
func decodeHex(run string) (string, bool) {
	if len(run)%2 != 0 || strings.IndexFunc(run, func(r rune) bool { return unhex(byte(r)) < 0 }) >= 0 {
		return "", false
	}
	b := make([]byte, len(run)/2)
	for i := range b {
		b[i] = byte(unhex(run[2*i])<<4 | unhex(run[2*i+1]))
	}
	return printableText(b)
}

// percentDecode decodes %XX escapes and '+' as a space (form encoding)
// leniently: a malformed escape stays as written.
func percentDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) && unhex(s[i+1]) >= 0 && unhex(s[i+2]) >= 0 {
			b.WriteByte(byte(unhex(s[i+1])<<4 | unhex(s[i+2])))
			i += 2
			continue
		}
		if c == '+' {
			b.WriteByte(' ')
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func hasEscape(s string) bool {
	for i := 0; i+2 < len(s); i++ {
		if s[i] == '%' && unhex(s[i+1]) >= 0 && unhex(s[i+2]) >= 0 {
			return true
		}
	}
	return false
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
