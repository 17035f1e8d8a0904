package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The test issuer is a real one: real RSA, ECDSA and Ed25519 keys, a JWKS
// served over TLS on a loopback listener, tokens signed with the standard
// library's crypto. The signer below deliberately does not reuse the
// verifier's helpers (hash table, signature encoding).

const (
	testIssuer   = "https://issuer.example.test"
	testAudience = "https://bastion.example.test/mcp"
)

// t0 is the injected "now" of every test clock.
var t0 = time.Unix(1_900_000_000, 0)

// signingKey is a private key with the kid and algorithm it signs with.
type signingKey struct {
	kid  string
	alg  Algorithm
	priv crypto.Signer
	// jwkAlg, when set, is published as the JWK's "alg".
	jwkAlg Algorithm
}

func (k signingKey) public() crypto.PublicKey { return k.priv.Public() }

// testKeys are generated once: RSA key generation is slow.
var testKeys = sync.OnceValue(func() map[string]signingKey {
	must := func(k crypto.Signer, err error) crypto.Signer {
		if err != nil {
			panic(err)
		}
		return k
	}
	rsa1 := must(rsa.GenerateKey(rand.Reader, 2048))
	rsa2 := must(rsa.GenerateKey(rand.Reader, 2048))
	ec256 := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	ec384 := must(ecdsa.GenerateKey(elliptic.P384(), rand.Reader))
	ec521 := must(ecdsa.GenerateKey(elliptic.P521(), rand.Reader))
	_, edPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	return map[string]signingKey{
		"rsa1":  {kid: "rsa1", alg: RS256, priv: rsa1},
		"rsa2":  {kid: "rsa2", alg: RS256, priv: rsa2},
		"rsaps": {kid: "rsaps", alg: PS256, priv: rsa1, jwkAlg: PS256},
		"rs512": {kid: "rs512", alg: RS512, priv: rsa2},
		"ec256": {kid: "ec256", alg: ES256, priv: ec256},
		"ec384": {kid: "ec384", alg: ES384, priv: ec384},
		"ec521": {kid: "ec521", alg: ES512, priv: ec521},
		"ed1":   {kid: "ed1", alg: EdDSA, priv: edPriv},
	}
})

func key(name string) signingKey { return testKeys()[name] }

// jwkJSON renders the public half of k as a JWK.
func jwkJSON(t testing.TB, k signingKey) map[string]any {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	m := map[string]any{"kid": k.kid, "use": "sig"}
	if k.jwkAlg != "" {
		m["alg"] = string(k.jwkAlg)
	}
	switch pub := k.public().(type) {
	case *rsa.PublicKey:
		m["kty"], m["n"], m["e"] = "RSA", enc(pub.N.Bytes()), enc(big.NewInt(int64(pub.E)).Bytes())
	case *ecdsa.PublicKey:
		pt, err := pub.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		n := (len(pt) - 1) / 2
		m["kty"], m["crv"] = "EC", pub.Curve.Params().Name
		m["x"], m["y"] = enc(pt[1:1+n]), enc(pt[1+n:])
	case ed25519.PublicKey:
		m["kty"], m["crv"], m["x"] = "OKP", "Ed25519", enc(pub)
	default:
		t.Fatalf("no JWK for %T", pub)
	}
	return m
}

// issuer serves a JWKS over TLS on loopback and counts the fetches.
type issuer struct {
	t   testing.TB
	srv *httptest.Server

	fetches atomic.Int32
	failing atomic.Bool

	mu           sync.Mutex
	jwks         []byte
	cacheControl string
}

func newIssuer(t testing.TB, keys ...signingKey) *issuer {
	t.Helper()
	is := &issuer{t: t}
	is.publish(keys...)
	is.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		if is.failing.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		is.mu.Lock()
		body, cc := is.jwks, is.cacheControl
		is.mu.Unlock()
		w.Header().Set("Content-Type", "application/jwk-set+json")
		if cc != "" {
			w.Header().Set("Cache-Control", cc)
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(is.srv.Close)
	return is
}

// publish replaces the served JWKS with the public halves of keys.
func (is *issuer) publish(keys ...signingKey) {
	is.t.Helper()
	set := map[string][]map[string]any{"keys": {}}
	for _, k := range keys {
		set["keys"] = append(set["keys"], jwkJSON(is.t, k))
	}
	b, err := json.Marshal(set)
	if err != nil {
		is.t.Fatal(err)
	}
	is.mu.Lock()
	is.jwks = b
	is.mu.Unlock()
}

func (is *issuer) setCacheControl(cc string) {
	is.mu.Lock()
	is.cacheControl = cc
	is.mu.Unlock()
}

// claims returns a valid claim set at t0; tests edit it.
func claims() map[string]any {
	return map[string]any{
		"iss":       testIssuer,
		"sub":       "user-42",
		"aud":       testAudience,
		"exp":       t0.Add(time.Hour).Unix(),
		"iat":       t0.Add(-time.Minute).Unix(),
		"nbf":       t0.Add(-time.Minute).Unix(),
		"tenant_id": "acme",
		"scope":     "reviews:read reviews:write openid",
		"client_id": "cli-app",
		"jti":       "j1",
	}
}

// sign signs c with k under k's algorithm. hdr adds protected header fields;
// a "kid" entry of nil drops the kid.
func (is *issuer) sign(k signingKey, c map[string]any, hdr map[string]any) string {
	is.t.Helper()
	payload, err := json.Marshal(c)
	if err != nil {
		is.t.Fatal(err)
	}
	return signRaw(is.t, k, payload, hdr)
}

// signRaw signs payload as a compact JWS with header {"alg": k.alg, "kid":
// k.kid} plus hdr.
func signRaw(t testing.TB, k signingKey, payload []byte, hdr map[string]any) string {
	t.Helper()
	h := map[string]any{"alg": string(k.alg), "kid": k.kid}
	for name, v := range hdr {
		h[name] = v
	}
	if v, ok := h["kid"]; ok && v == nil {
		delete(h, "kid")
	}
	hb, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	input := enc(hb) + "." + enc(payload)
	return input + "." + enc(testSign(t, k, []byte(input)))
}

// testSign produces a JWS signature (RFC 7518 §3.3-3.5, RFC 8037 §3.1).
func testSign(t testing.TB, k signingKey, input []byte) []byte {
	t.Helper()
	hashes := map[Algorithm]crypto.Hash{
		RS256: crypto.SHA256, RS384: crypto.SHA384, RS512: crypto.SHA512,
		PS256: crypto.SHA256, PS384: crypto.SHA384, PS512: crypto.SHA512,
		ES256: crypto.SHA256, ES384: crypto.SHA384, ES512: crypto.SHA512,
	}
	var d []byte
	if h, ok := hashes[k.alg]; ok {
		hh := h.New()
		hh.Write(input)
		d = hh.Sum(nil)
	}
	var sig []byte
	var err error
	switch priv := k.priv.(type) {
	case *rsa.PrivateKey:
		if k.alg[0] == 'P' {
			sig, err = rsa.SignPSS(rand.Reader, priv, hashes[k.alg], d, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		} else {
			sig, err = rsa.SignPKCS1v15(rand.Reader, priv, hashes[k.alg], d)
		}
	case *ecdsa.PrivateKey:
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, priv, d)
		if err == nil {
			n := (priv.Curve.Params().BitSize + 7) / 8
			sig = make([]byte, 2*n)
			r.FillBytes(sig[:n])
			s.FillBytes(sig[n:])
		}
	case ed25519.PrivateKey:
		sig = ed25519.Sign(priv, input)
	}
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// unsigned builds a compact JWS by hand, for forms no honest issuer makes.
func unsigned(hdr, payload any, sig []byte) string {
	h, _ := json.Marshal(hdr)
	p, _ := json.Marshal(payload)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(h) + "." + enc.EncodeToString(p) + "." + enc.EncodeToString(sig)
}

// clock is a settable test clock.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(t0.UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// verifier returns a JWTVerifier for is with a test clock; edit adjusts the
// config first.
func (is *issuer) verifier(edit func(*JWTConfig)) (*JWTVerifier, *clock) {
	is.t.Helper()
	clk := newClock()
	cfg := JWTConfig{
		Issuer:   testIssuer,
		Audience: testAudience,
		JWKSURL:  is.srv.URL + "/jwks.json",
		Now:      clk.Now,
	}
	if edit != nil {
		edit(&cfg)
	}
	v, err := NewJWTVerifier(cfg, is.srv.Client())
	if err != nil {
		is.t.Fatal(err)
	}
	return v, clk
}
