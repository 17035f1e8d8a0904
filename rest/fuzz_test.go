package rest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/review"
)

// FuzzDecodeBody feeds hostile bodies and media types through the request
// path's parsing: it must never panic, every refusal must be a typed fault
// with a transport or INVALID_ARGUMENT code and a bounded message, and an
// accepted body must decode to the same value again after re-encoding.
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []struct{ ct, body string }{
		{"application/json", `{"url":"https://preview.example.com/","client_request_id":"key-00000001"}`},
		{"application/json; charset=utf-8", `{"url":"https://a.example/","routes":["/","/b"],"viewports":["mobile"]}`},
		{"application/json", `{"url":"x","tenant":"other"}`},
		{"application/json", `{"url":1}`},
		{"application/json", `{"routes":"/"}`},
		{"application/json", `{"url":"x"} {"url":"y"}`},
		{"application/json", `[1,2]`},
		{"application/json", `null`},
		{"application/json", `{"url":"\ud800"}`},
		{"application/json", `{"` + string(bytes.Repeat([]byte("k"), 300)) + `":1}`},
		{"application/json", `{"url":"x","url":"y"}`},
		{"application/json", `{`},
		{"text/plain", `{"url":"x"}`},
		{"application/json; charset=latin1", `{}`},
		{"application/json;;", `{}`},
		{"", `{}`},
		{"", ``},
		{"application/json", "  \n"},
	} {
		f.Add(s.ct, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/reviews", bytes.NewReader(body))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		b, err := readBody(httptest.NewRecorder(), r, 4096, true)
		if err == nil {
			var in review.SubmitParams
			err = decodeJSON(b, &in)
			if err == nil {
				again, merr := json.Marshal(&in)
				if merr != nil {
					t.Fatalf("re-encode: %v", merr)
				}
				var out review.SubmitParams
				// omitempty drops an empty list, which decodes back as nil:
				// the same request.
				if len(in.Routes) == 0 {
					in.Routes = nil
				}
				if len(in.Viewports) == 0 {
					in.Viewports = nil
				}
				if derr := decodeJSON(again, &out); derr != nil {
					t.Fatalf("round trip: %v", derr)
				}
				if diff := cmp.Diff(in, out); diff != "" {
					t.Fatalf("round trip changed the request (-first +again):\n%s", diff)
				}
				return
			}
		}
		fe, ok := fault.As(err)
		if !ok {
			t.Fatalf("untyped error %T: %v", err, err)
		}
		switch fe.Code {
		case fault.InvalidArgument, CodeUnsupportedMediaType, CodeRequestTooLarge:
		default:
			t.Fatalf("code %s for %q %q", fe.Code, ct, body)
		}
		if len(fe.Message) > 200 {
			t.Fatalf("message of %d bytes: %q", len(fe.Message), fe.Message)
		}
	})
}

func TestDuplicateKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		key  string
		want bool
	}{
		{`{}`, "", false},
		{`{"a":1,"b":2}`, "", false},
		{`{"a":1,"a":2}`, "a", true},
		{`{"a":{"b":1},"b":2}`, "", false},
		{`{"a":[{"x":1},{"x":2}],"x":3}`, "", false},
		{`{"a":{"x":1,"x":2}}`, "x", true},
		{`{"a":["a","a"],"b":"a"}`, "", false},
		{`{"a":[[],{}],"a":null}`, "a", true},
		{`{"a\u0062":1,"ab":2}`, "ab", true},
	} {
		k, dup := duplicateKey([]byte(tc.in))
		if k != tc.key || dup != tc.want {
			t.Errorf("duplicateKey(%s) = %q, %v; want %q, %v", tc.in, k, dup, tc.key, tc.want)
		}
	}
}
