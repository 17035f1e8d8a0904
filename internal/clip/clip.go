// Package clip bounds untrusted text (page strings, caller input quoted in
// errors, ledger fields) so that one oversized value cannot bloat what
// carries it.
package clip

import (
	"strings"
	"unicode/utf8"
)

// Marker ends a clipped string.
const Marker = "…"

// String returns s as valid UTF-8 (each invalid byte run replaced by U+FFFD)
// of at most n bytes. When s does not fit it is cut on a rune boundary and
// ends in Marker, which counts toward n; an n too small to hold the marker
// cuts without it. An n of zero or less returns "".
func String(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	if n <= len(Marker) {
		return s[:runeStart(s, max(n, 0))]
	}
	return s[:runeStart(s, n-len(Marker))] + Marker
}

// runeStart returns the largest i <= n at which a rune of s starts.
func runeStart(s string, n int) int {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}
