package config

import (
	"bufio"
	"bytes"
	"strings"
)

// locator finds the line of a table header or of a key inside a table, so
// errors found after decoding (which keeps no positions) still name a line.
// It reads headers and "key =" lines only; a key set through a dotted key
// or an inline table elsewhere yields the table's line, or 0.
type locator struct {
	headers map[string][]int            // header → line of each occurrence
	keys    map[string][]map[string]int // header → per occurrence, key → line
}

func newLocator(data []byte) *locator {
	l := &locator{headers: map[string][]int{}, keys: map[string][]map[string]int{}}
	cur := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), MaxFileSize)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			h := strings.Trim(line, "[] \t")
			if i := strings.IndexByte(h, ']'); i >= 0 { // "[a] # comment"
				h = h[:i]
			}
			h = normHeader(h)
			cur = h
			l.headers[h] = append(l.headers[h], n)
			l.keys[h] = append(l.keys[h], map[string]int{})
			continue
		}
		k, _, ok := strings.Cut(line, "=")
		if !ok || cur == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k = strings.Trim(strings.TrimSpace(k), `"'`)
		occ := l.keys[cur]
		if _, dup := occ[len(occ)-1][k]; !dup {
			occ[len(occ)-1][k] = n
		}
	}
	return l
}

func normHeader(h string) string {
	var b strings.Builder
	for _, r := range h {
		if r != ' ' && r != '\t' && r != '"' && r != '\'' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// find returns the line of key in the nth occurrence of header, else the
// header's line, else 0.
func (l *locator) find(header string, nth int, key string) int {
	hs := l.headers[header]
	if nth >= len(hs) {
		return 0
	}
	if key != "" {
		if n, ok := l.keys[header][nth][key]; ok {
			return n
		}
	}
	return hs[nth]
}
