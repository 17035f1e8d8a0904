package auth

import (
	"context"
	"strings"
	"testing"
)

func FuzzParseBearer(f *testing.F) {
	for _, s := range []string{
		"Bearer abc", "bearer abc", "BEARER a.b.c", "Bearer  abc", "Bearer", "Bearer ", "Basic x",
		"Bearer abc==", "Bearer a=b", "Bearer =", "Bearer abc def", "Bearer\tabc", "",
		"Bearer bst_0123456789", "Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln", "Bearer \x00", "Bearer é",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tok, err := ParseBearer(in)
		if err != nil {
			if tok != "" {
				t.Fatalf("ParseBearer(%q) returned %q with error %v", in, tok, err)
			}
			if Status(err) != 400 && Status(err) != 401 {
				t.Fatalf("ParseBearer error %v maps to %d", err, Status(err))
			}
			return
		}
		if !isB64Token(tok) || len(tok) > maxHeaderToken {
			t.Fatalf("ParseBearer(%q) = %q, not a b64token", in, tok)
		}
		if !strings.EqualFold(in[:7], "Bearer ") || in[7:] != tok {
			t.Fatalf("ParseBearer(%q) = %q does not round-trip", in, tok)
		}
	})
}

func FuzzParsePAT(f *testing.F) {
	p, _ := NewPAT(nil)
	s := p.Reveal()
	for _, seed := range []string{s, s[:PATLen-1], s + "x", "bst_", "", strings.Repeat("0", PATLen), "bst_" + strings.Repeat("0", PATLen-4)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		q, err := ParsePAT(in)
		if err != nil {
			if q.IsValid() {
				t.Fatal("invalid PAT returned with an error")
			}
			if strings.Contains(err.Error(), in) && len(in) > 8 {
				t.Fatalf("error %q carries the input", err)
			}
			return
		}
		if q.Reveal() != in || len(in) != PATLen || !strings.HasPrefix(in, PATPrefix) {
			t.Fatalf("ParsePAT(%q) accepted a malformed token", in)
		}
		if strings.Contains(q.String(), in[len(PATPrefix)+patShownChars:]) {
			t.Fatalf("String leaks %q", in)
		}
	})
}

// FuzzVerifyJWT feeds arbitrary strings to a verifier holding real keys. Any
// token it accepts must carry exactly the signed bytes of a token the test
// issuer made: anything else would be a forgery.
func FuzzVerifyJWT(f *testing.F) {
	is := newIssuer(f, key("rsa1"), key("ec256"), key("ed1"))
	clk := newClock()
	v, err := NewJWTVerifier(JWTConfig{Issuer: testIssuer, Audience: testAudience, JWKSURL: is.srv.URL, Now: clk.Now}, is.srv.Client())
	if err != nil {
		f.Fatal(err)
	}
	var issued []string
	for _, k := range []string{"rsa1", "ec256", "ed1"} {
		tok := is.sign(key(k), claims(), nil)
		issued = append(issued, tok[:strings.LastIndexByte(tok, '.')])
		f.Add(tok)
	}
	f.Add(unsigned(map[string]any{"alg": "none"}, claims(), nil))
	f.Add(unsigned(map[string]any{"alg": "HS256", "kid": "rsa1"}, claims(), []byte("sig")))
	f.Add(unsigned(map[string]any{"alg": "ES256", "kid": "ec256", "crit": []string{"b64"}}, claims(), make([]byte, 64)))
	f.Add("a.b.c")
	f.Add("...")
	f.Add("e30.e30.e30")
	f.Fuzz(func(t *testing.T, tok string) {
		_, err := v.VerifyClaims(context.Background(), tok)
		if err != nil {
			if len(tok) > 16 && strings.Contains(err.Error(), tok) {
				t.Fatalf("error %q carries the token", err)
			}
			return
		}
		i := strings.LastIndexByte(tok, '.')
		for _, s := range issued {
			if tok[:i] == s {
				return
			}
		}
		t.Fatalf("accepted a token the issuer never signed: %q", tok)
	})
}

func FuzzParseJWKS(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"AA"}]}`))
	f.Add([]byte(`{"keys":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, err := parseJWKS(b)
		if err == nil && len(keys) == 0 {
			t.Fatal("parseJWKS succeeded with no keys")
		}
		for _, k := range keys {
			if k.key == nil {
				t.Fatal("parseJWKS returned a nil key")
			}
		}
	})
}
