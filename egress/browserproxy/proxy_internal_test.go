package browserproxy

import (
	"encoding/base64"
	"io"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/fault"
)

func TestParseBasic(t *testing.T) {
	t.Parallel()
	enc := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, c := range []struct {
		in         string
		user, pass string
		ok         bool
	}{
		{"Basic " + enc("u:p"), "u", "p", true},
		{"basic " + enc("u:p:q"), "u", "p:q", true},
		{"Basic " + enc("u:"), "u", "", true},
		{"Basic " + enc("nocolon"), "", "", false},
		{"Bearer " + enc("u:p"), "", "", false},
		{"Basic !!!", "", "", false},
		{"Basic", "", "", false},
		{"", "", "", false},
	} {
		u, p, ok := parseBasic(c.in)
		if u != c.user || p != c.pass || ok != c.ok {
			t.Errorf("parseBasic(%q) = %q, %q, %v; want %q, %q, %v", c.in, u, p, ok, c.user, c.pass, c.ok)
		}
	}
}

func FuzzParseBasic(f *testing.F) {
	for _, s := range []string{"Basic dTpw", "basic dTpwOnE=", "Basic ", "Basic ====", "BASIC Og==", "Basic \x00", "Digest x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		u, p, ok := parseBasic(h)
		if !ok && (u != "" || p != "") {
			t.Fatalf("parseBasic(%q) returned credentials with ok=false", h)
		}
		if ok && strings.Contains(u, ":") {
			t.Fatalf("parseBasic(%q) user %q holds a colon", h, u)
		}
	})
}

func TestCappedBody(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		size, limit int
		wantErr     bool
	}{{0, 10, false}, {10, 10, false}, {11, 10, true}, {100000, 10, true}, {100000, 100000, false}} {
		b := &cappedBody{rc: io.NopCloser(strings.NewReader(strings.Repeat("x", c.size))), left: int64(c.limit)}
		got, err := io.ReadAll(b)
		if (err != nil) != c.wantErr || len(got) > c.limit {
			t.Errorf("size %d cap %d: read %d, err %v", c.size, c.limit, len(got), err)
		}
		if c.wantErr && !fault.Is(err, fault.ResponseTooLarge) {
			t.Errorf("size %d cap %d: err %v, want RESPONSE_TOO_LARGE", c.size, c.limit, err)
		}
	}
}
