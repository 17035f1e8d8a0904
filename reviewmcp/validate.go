package reviewmcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/internal/clip"
)

// validate checks a tool's raw arguments against its input schema. A
// violation is INVALID_ARGUMENT whose message names the field and the rule
// ("routes[0]: must start with /"), never echoing the value.
//
// Two layers agree on every input (FuzzValidate holds them to it): a
// walker over the keywords bastion's input schemas use, which checks in a
// fixed order and so names the same field every time, and
// jsonschema-go's full Draft 2020-12 validator as the authority, so a
// keyword the walker does not know still rejects.
func (t *toolSchema) validate(raw json.RawMessage) error {
	inst, err := parseArguments(raw)
	if err != nil {
		return err
	}
	if msg := t.walk.check("", t.in, inst); msg != "" {
		return fault.New(fault.InvalidArgument, "%s", msg)
	}
	if err := t.resolved.Validate(inst); err != nil {
		return fault.Wrap(err, fault.InvalidArgument, "arguments: do not match the input schema of %s", t.name)
	}
	return nil
}

// parseArguments decodes tool arguments; absent arguments are an empty
// object.
func parseArguments(raw json.RawMessage) (any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]any{}, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fault.New(fault.InvalidArgument, "arguments: must be a JSON object")
	}
	return v, nil
}

// walker checks arguments against the keywords bastion's input schemas use.
// Its patterns are compiled once, when the catalog loads: validation runs on
// every call, and the stateless wire makes every call a fresh server.
type walker struct {
	patterns map[string]*regexp.Regexp
}

// newWalker compiles every pattern in s and its subschemas.
func newWalker(s *jsonschema.Schema) (walker, error) {
	w := walker{patterns: map[string]*regexp.Regexp{}}
	var visit func(*jsonschema.Schema) error
	visit = func(s *jsonschema.Schema) error {
		if s == nil {
			return nil
		}
		if s.Pattern != "" {
			re, err := regexp.Compile(s.Pattern)
			if err != nil {
				return fmt.Errorf("pattern %q: %w", s.Pattern, err)
			}
			w.patterns[s.Pattern] = re
		}
		for _, p := range s.Properties {
			if err := visit(p); err != nil {
				return err
			}
		}
		if err := visit(s.Items); err != nil {
			return err
		}
		return visit(s.AdditionalProperties)
	}
	return w, visit(s)
}

// check returns the first violation of s by v at path, as "path: rule", or
// "".
func (w walker) check(path string, s *jsonschema.Schema, v any) string {
	if s == nil {
		return ""
	}
	at := path
	if at == "" {
		at = "arguments"
	}
	if s.Type != "" && !hasType(v, s.Type) {
		return at + ": must be " + article(s.Type)
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return jsonEqual(e, v) }) {
		return at + ": must be one of " + enumList(s.Enum)
	}
	switch x := v.(type) {
	case float64:
		if s.Minimum != nil && x < *s.Minimum {
			return fmt.Sprintf("%s: must be at least %s", at, strconv.FormatFloat(*s.Minimum, 'f', -1, 64))
		}
		if s.Maximum != nil && x > *s.Maximum {
			return fmt.Sprintf("%s: must be at most %s", at, strconv.FormatFloat(*s.Maximum, 'f', -1, 64))
		}
	case string:
		n := utf8.RuneCountInString(x)
		if s.MinLength != nil && n < *s.MinLength {
			return fmt.Sprintf("%s: must be at least %d character(s) long", at, *s.MinLength)
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			return fmt.Sprintf("%s: must be at most %d character(s) long", at, *s.MaxLength)
		}
		if s.Pattern != "" {
			re := w.patterns[s.Pattern]
			if re == nil || !re.MatchString(x) {
				return at + ": " + patternRule(s.Pattern)
			}
		}
	case []any:
		if s.MinItems != nil && len(x) < *s.MinItems {
			return fmt.Sprintf("%s: must have at least %d item(s)", at, *s.MinItems)
		}
		if s.MaxItems != nil && len(x) > *s.MaxItems {
			return fmt.Sprintf("%s: must have at most %d item(s)", at, *s.MaxItems)
		}
		for i, e := range x {
			if msg := w.check(path+"["+strconv.Itoa(i)+"]", s.Items, e); msg != "" {
				return msg
			}
		}
	case map[string]any:
		if s.AdditionalProperties != nil && isFalse(s.AdditionalProperties) {
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if _, ok := s.Properties[k]; !ok {
					return fmt.Sprintf("%s: is not a property of this tool's input (known: %s)", join(path, k), strings.Join(slices.Sorted(maps.Keys(s.Properties)), ", "))
				}
			}
		}
		for _, k := range s.Required {
			if _, ok := x[k]; !ok {
				return join(path, k) + ": is required"
			}
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if msg := w.check(join(path, k), s.Properties[k], x[k]); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// isFalse reports whether s is the schema false, which jsonschema-go
// unmarshals as {"not": {}}: a schema whose only keyword is an empty "not".
func isFalse(s *jsonschema.Schema) bool {
	if s.Not == nil || !reflect.ValueOf(*s.Not).IsZero() {
		return false
	}
	rest := *s
	rest.Not = nil
	return reflect.ValueOf(rest).IsZero()
}

func hasType(v any, typ string) bool {
	switch x := v.(type) {
	case string:
		return typ == "string"
	case bool:
		return typ == "boolean"
	case float64:
		return typ == "number" || (typ == "integer" && x == float64(int64(x)))
	case []any:
		return typ == "array"
	case map[string]any:
		return typ == "object"
	case nil:
		return typ == "null"
	}
	return false
}

func article(typ string) string {
	switch typ {
	case "array", "object", "integer":
		return "an " + typ
	case "null":
		return "null"
	}
	return "a " + typ
}

func jsonEqual(a, b any) bool {
	if x, ok := a.(string); ok { // every enum bastion's schemas declare
		y, ok := b.(string)
		return ok && x == y
	}
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

func enumList(e []any) string {
	s := make([]string, len(e))
	for i, v := range e {
		b, _ := json.Marshal(v)
		s[i] = strings.Trim(string(b), `"`)
	}
	return strings.Join(s, ", ")
}

// patternRule says in words what the input schemas' patterns require.
func patternRule(p string) string {
	switch p {
	case "^https?://":
		return "must start with https:// (or http:// for a local development server)"
	case "^/":
		return "must start with /"
	case "^[A-Za-z0-9._:-]+$":
		return "may contain only letters, digits, '.', '_', ':' and '-'"
	}
	return "must match the pattern " + p
}

// join appends property k to path. A name that is not a plain identifier
// is quoted and shortened, since it comes from the caller.
func join(path, k string) string {
	name := k
	plain := k != "" && !strings.ContainsFunc(k, func(r rune) bool {
		return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
	if !plain || len(k) > 64 {
		name = strconv.Quote(clip.String(k, 64))
	}
	if path == "" {
		return name
	}
	return path + "." + name
}
