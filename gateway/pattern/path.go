package pattern

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Step is one step of a Path: an object key, an array index, or any element.
type Step struct {
	Key   string // set for an object key
	Index int    // for an array index; -1 for [*]
	IsKey bool
}

// Path is a parsed argument path such as "repo.owner", "files[0].path" or
// "labels[*]". Keys cannot contain '.', '[' or ']'.
type Path []Step

// MaxPathSteps bounds a path's length.
const MaxPathSteps = 32

// ParsePath parses a dotted path with [n] and [*] suffixes.
func ParsePath(s string) (Path, error) {
	if s == "" {
		return nil, errors.New("empty path")
	}
	var p Path
	needKey := true // at the start or right after a '.'
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '.':
			if needKey {
				return nil, fmt.Errorf("path %q has an empty key", s)
			}
			needKey = true
			i++
		case c == '[':
			if needKey && i > 0 {
				return nil, fmt.Errorf("path %q has an empty key", s)
			}
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("path %q: unclosed '['", s)
			}
			idx := s[i+1 : i+j]
			if idx == "*" {
				p = append(p, Step{Index: -1})
			} else {
				n, err := strconv.Atoi(idx)
				if err != nil || n < 0 || n > 1<<20 || idx[0] == '+' {
					return nil, fmt.Errorf("path %q: index %q is not a non-negative integer or *", s, idx)
				}
				p = append(p, Step{Index: n})
			}
			i += j + 1
			needKey = false
			if i < len(s) && s[i] != '.' && s[i] != '[' {
				return nil, fmt.Errorf("path %q: expected '.' or '[' after ']'", s)
			}
		case c == ']':
			return nil, fmt.Errorf("path %q: stray ']'", s)
		default:
			if !needKey {
				return nil, fmt.Errorf("path %q: expected '.' before a key", s)
			}
			j := strings.IndexAny(s[i:], ".[]")
			if j < 0 {
				j = len(s) - i
			}
			p = append(p, Step{Key: s[i : i+j], IsKey: true})
			i += j
			needKey = false
		}
		if len(p) > MaxPathSteps {
			return nil, fmt.Errorf("path %q has more than %d steps", s, MaxPathSteps)
		}
	}
	if needKey {
		return nil, fmt.Errorf("path %q ends in '.'", s)
	}
	return p, nil
}

// String renders p in the syntax ParsePath reads.
func (p Path) String() string {
	var b strings.Builder
	for i, st := range p {
		switch {
		case st.IsKey:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(st.Key)
		case st.Index < 0:
			b.WriteString("[*]")
		default:
			fmt.Fprintf(&b, "[%d]", st.Index)
		}
	}
	return b.String()
}
