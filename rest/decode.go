package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/bastion-mcp/bastion/fault"
)

// maxEchoedField bounds how much of an unknown field's name an error echoes.
const maxEchoedField = 64

// readBody reads r's whole body, at most limit bytes. A non-empty body must
// be declared application/json (charset, if given, utf-8): anything else is
// UNSUPPORTED_MEDIA_TYPE, also when the declaration is wrong and the body
// empty. An empty body is INVALID_ARGUMENT when required.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, required bool) ([]byte, error) {
	ct := r.Header.Values("Content-Type")
	if len(ct) > 1 {
		return nil, fault.New(CodeUnsupportedMediaType, "send one Content-Type: application/json header").WithNext(fault.None)
	}
	if len(ct) == 1 {
		if err := checkMediaType(ct[0]); err != nil {
			return nil, err
		}
	}
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge(limit)
	case err != nil:
		return nil, fault.Wrap(err, fault.InvalidArgument, "the request body could not be read")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if required {
			return nil, fault.New(fault.InvalidArgument, "a JSON object body is required")
		}
		return nil, nil
	}
	if len(ct) == 0 {
		return nil, fault.New(CodeUnsupportedMediaType, "a request body must be sent as Content-Type: application/json").WithNext(fault.None)
	}
	return body, nil
}

// checkMediaType accepts application/json with at most a utf-8 charset.
func checkMediaType(v string) error {
	mt, params, err := mime.ParseMediaType(v)
	if err == nil && mt == "application/json" {
		cs, has := params["charset"]
		if len(params) == 0 || (len(params) == 1 && has && strings.EqualFold(cs, "utf-8")) {
			return nil
		}
	}
	return fault.New(CodeUnsupportedMediaType, "only application/json request bodies are accepted").WithNext(fault.None)
}

func tooLarge(limit int64) *fault.Error {
	return fault.New(CodeRequestTooLarge, "the request body exceeds %d bytes", limit).WithNext(fault.ReduceScope)
}

// decodeJSON decodes body, a single JSON object, into v strictly: an unknown
// field, a wrong type, trailing data or malformed JSON is INVALID_ARGUMENT
// naming the field or the offset. An empty body leaves v untouched.
func decodeJSON(body []byte, v any) error {
	if len(body) == 0 {
		return nil
	}
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		return fault.New(fault.InvalidArgument, "the request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fault.New(fault.InvalidArgument, "the request body must hold exactly one JSON object")
	}
	if k, dup := duplicateKey(body); dup {
		// encoding/json keeps the last of repeated members silently; two
		// values for one field is ambiguous, so it is refused.
		return fault.New(fault.InvalidArgument, "field %s is given more than once", echo(strconv.Quote(k)))
	}
	return nil
}

// duplicateKey reports a member name repeated within one object of body,
// which must be valid JSON.
func duplicateKey(body []byte) (string, bool) {
	type frame struct {
		obj     bool
		wantKey bool
		keys    map[string]bool
	}
	var stack []*frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
			if k, ok := tok.(string); ok {
				top := stack[n-1]
				if top.keys[k] {
					return k, true
				}
				top.keys[k] = true
				top.wantKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, wantKey: true, keys: map[string]bool{}})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return "", false
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// decodeError turns encoding/json's error into a client-safe
// INVALID_ARGUMENT. encoding/json reports an unknown field only as text, so
// the name is cut from its message.
func decodeError(err error) error {
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &se):
		return fault.New(fault.InvalidArgument, "the request body is not valid JSON (at byte %d)", se.Offset)
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return fault.New(fault.InvalidArgument, "the request body must be a JSON object")
		}
		return fault.New(fault.InvalidArgument, "%s: must be %s", echo(field), jsonKind(te.Type.Kind().String()))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fault.New(fault.InvalidArgument, "the request body is truncated JSON")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fault.New(fault.InvalidArgument, "unknown field %s", echo(name))
	}
	return fault.Wrap(err, fault.InvalidArgument, "the request body could not be decoded")
}

// echo bounds a client-given name before it is repeated in a message.
func echo(s string) string {
	if len(s) > maxEchoedField {
		s = s[:maxEchoedField] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// jsonKind names a Go kind as its JSON type.
func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "a boolean"
	default:
		return "a number"
	}
}
