package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/principal"
)

func allKeys() []signingKey {
	return []signingKey{key("rsa1"), key("rsaps"), key("rs512"), key("ec256"), key("ec384"), key("ec521"), key("ed1")}
}

func TestJWTValid(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, allKeys()...)
	v, _ := is.verifier(func(c *JWTConfig) { c.Algorithms = SupportedAlgorithms() })
	for _, name := range []string{"rsa1", "rsaps", "rs512", "ec256", "ec384", "ec521", "ed1"} {
		t.Run(name, func(t *testing.T) {
			k := key(name)
			tok := is.sign(k, claims(), nil)
			c, err := v.VerifyClaims(context.Background(), tok)
			if err != nil {
				t.Fatalf("VerifyClaims(%s) = %v, want success", k.alg, err)
			}
			p := c.Principal
			if p.Tenant() != "acme" || p.ID() != "user-42" {
				t.Errorf("principal = %s, want acme/user-42", p)
			}
			want := []principal.Scope{principal.ReviewsRead, principal.ReviewsWrite}
			if got := p.Scopes(); !slices.Equal(got, want) {
				t.Errorf("scopes = %v, want %v (unknown openid dropped)", got, want)
			}
			if c.ClientID != "cli-app" || c.ID != "j1" || !c.Expiry.Equal(t0.Add(time.Hour)) {
				t.Errorf("claims = %+v", c)
			}
		})
	}
}

func TestJWTClaimVariants(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, key("rsa1"))
	v, _ := is.verifier(func(c *JWTConfig) { c.TenantClaim = "org"; c.RequireTyp = "at+jwt" })
	tests := []struct {
		name       string
		edit       func(map[string]any)
		hdr        map[string]any
		wantScopes []principal.Scope
		wantClient string
	}{
		{
			name:       "AudienceArray",
			edit:       func(c map[string]any) { c["aud"] = []string{"https://other.example", testAudience} },
			hdr:        map[string]any{"typ": "at+jwt"},
			wantScopes: []principal.Scope{principal.ReviewsRead, principal.ReviewsWrite},
			wantClient: "cli-app",
		},
		{
			name: "ScpArray",
			edit: func(c map[string]any) {
				delete(c, "scope")
				c["scp"] = []string{"reviews:cancel", "targets:write"}
			},
			hdr:        map[string]any{"typ": "application/AT+JWT"},
			wantScopes: []principal.Scope{principal.ReviewsCancel, principal.TargetsWrite},
			wantClient: "cli-app",
		},
		{
			name: "AzpWhenNoClientID",
			edit: func(c map[string]any) {
				delete(c, "client_id")
				c["azp"] = "azp-app"
				c["scope"] = ""
			},
			hdr:        map[string]any{"typ": "at+jwt"},
			wantScopes: []principal.Scope{},
			wantClient: "azp-app",
		},
		{
			name: "WithinLeeway",
			edit: func(c map[string]any) {
				c["exp"] = t0.Add(-30 * time.Second).Unix()
				c["nbf"] = t0.Add(30 * time.Second).Unix()
				c["iat"] = t0.Add(30 * time.Second).Unix()
			},
			hdr:        map[string]any{"typ": "at+jwt"},
			wantScopes: []principal.Scope{principal.ReviewsRead, principal.ReviewsWrite},
			wantClient: "cli-app",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := claims()
			c["org"] = "org-7"
			tt.edit(c)
			got, err := v.VerifyClaims(context.Background(), is.sign(key("rsa1"), c, tt.hdr))
			if err != nil {
				t.Fatalf("VerifyClaims = %v, want success", err)
			}
			if got.Tenant != "org-7" || got.Principal.Tenant() != "org-7" {
				t.Errorf("tenant = %q, want org-7 from the configured claim", got.Tenant)
			}
			if !slices.Equal(got.Principal.Scopes(), tt.wantScopes) {
				t.Errorf("scopes = %v, want %v", got.Principal.Scopes(), tt.wantScopes)
			}
			if got.ClientID != tt.wantClient || got.Principal.ID() != "user-42" {
				t.Errorf("client = %q id = %q, want %q and the sub as identity", got.ClientID, got.Principal.ID(), tt.wantClient)
			}
		})
	}
}

// TestJWTRoles: roles come from the configured claim, as an array or a
// space-separated string; a claim that is not one of those, or that holds
// too many or unusable roles, refuses the token.
func TestJWTRoles(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, key("rsa1"))
	vDefault, _ := is.verifier(nil)
	vGroups, _ := is.verifier(func(c *JWTConfig) { c.RolesClaim = "groups" })
	many := make([]string, principal.MaxRoles+1)
	for i := range many {
		many[i] = fmt.Sprintf("r%d", i)
	}
	accepts := []struct {
		name  string
		v     *JWTVerifier
		edit  func(map[string]any)
		roles []string
	}{
		{"Array", vDefault, func(c map[string]any) { c["roles"] = []string{"reviewer", "admin", "admin"} }, []string{"admin", "reviewer"}},
		{"SpaceSeparated", vDefault, func(c map[string]any) { c["roles"] = " reviewer  admin " }, []string{"admin", "reviewer"}},
		{"Absent", vDefault, func(map[string]any) {}, nil},
		{"EmptyArray", vDefault, func(c map[string]any) { c["roles"] = []string{} }, nil},
		{"AtTheLimit", vDefault, func(c map[string]any) { c["roles"] = many[:principal.MaxRoles] }, slices.Sorted(slices.Values(many[:principal.MaxRoles]))},
		{"ConfiguredClaim", vGroups, func(c map[string]any) { c["groups"] = []string{"ops"}; c["roles"] = []string{"admin"} }, []string{"ops"}},
		// With another claim configured, "roles" is just an unknown claim:
		// even a malformed one is ignored.
		{"DefaultClaimIgnored", vGroups, func(c map[string]any) { c["roles"] = 7 }, nil},
	}
	for _, tt := range accepts {
		t.Run(tt.name, func(t *testing.T) {
			c := claims()
			tt.edit(c)
			got, err := tt.v.VerifyClaims(context.Background(), is.sign(key("rsa1"), c, nil))
			if err != nil {
				t.Fatalf("VerifyClaims = %v, want success", err)
			}
			if !slices.Equal(got.Principal.Roles(), tt.roles) || !slices.Equal(got.Roles, tt.roles) {
				t.Errorf("roles = %v (claims %v), want %v", got.Principal.Roles(), got.Roles, tt.roles)
			}
		})
	}
	rejects := map[string]any{
		"Number":          7,
		"Object":          map[string]any{"admin": true},
		"ArrayOfNumbers":  []int{1, 2},
		"MixedArray":      []any{"admin", 1},
		"RoleWithSpace":   []string{"two words"},
		"EmptyRole":       []string{""},
		"ControlChar":     []string{"a\u0000b"},
		"TooLong":         []string{strings.Repeat("r", principal.MaxRoleLength+1)},
		"TooMany":         many,
		"TooManyRepeated": slices.Repeat([]string{"admin"}, principal.MaxRoles+1),
		"Null":            nil,
	}
	for name, claim := range rejects {
		t.Run("Rejects"+name, func(t *testing.T) {
			c := claims()
			c["roles"] = claim
			_, err := vDefault.Verify(context.Background(), is.sign(key("rsa1"), c, nil), nil)
			var ite *InvalidTokenError
			if !errors.As(err, &ite) || ite.Reason != ReasonRoles {
				t.Errorf("Verify = %v, want an InvalidTokenError (%v)", err, ReasonRoles)
			}
		})
	}
}

// publicKeyPEM is the classic HMAC-confusion secret: the verifier's own RSA
// public key, which an attacker can download.
func publicKeyPEM(t *testing.T) []byte {
	der, err := x509.MarshalPKIXPublicKey(key("rsa1").public())
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func hs256(t *testing.T, secret []byte, hdr, payload map[string]any) string {
	tok := unsigned(hdr, payload, nil)
	signed := tok[:strings.LastIndexByte(tok, '.')]
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(signed))
	return signed + "." + b64.EncodeToString(m.Sum(nil))
}

func TestJWTRejects(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, key("rsa1"), key("ec256"), key("ec384"), key("ed1"), key("rsaps"))
	// ES384 and PS256 are allowed so that the key-fit checks, not the
	// allowlist, are what refuse the mismatches below.
	v, _ := is.verifier(func(c *JWTConfig) {
		c.Algorithms = []Algorithm{RS256, ES256, ES384, EdDSA, PS256}
	})
	vTyp, _ := is.verifier(func(c *JWTConfig) { c.RequireTyp = "at+jwt" })
	vDefault, _ := is.verifier(nil)
	rsa1, ec256 := key("rsa1"), key("ec256")
	with := func(edit func(map[string]any)) map[string]any {
		c := claims()
		edit(c)
		return c
	}
	tests := []struct {
		name string
		v    *JWTVerifier
		tok  string
		want Reason
	}{
		{"Expired", v, is.sign(rsa1, with(func(c map[string]any) { c["exp"] = t0.Add(-61 * time.Second).Unix() }), nil), ReasonExpired},
		{"NoExp", v, is.sign(rsa1, with(func(c map[string]any) { delete(c, "exp") }), nil), ReasonNoExpiry},
		{"ExpString", v, is.sign(rsa1, with(func(c map[string]any) { c["exp"] = "2099-01-01" }), nil), ReasonMalformed},
		{"WrongAudience", v, is.sign(rsa1, with(func(c map[string]any) { c["aud"] = "https://other.example.test/mcp" }), nil), ReasonAudience},
		{"TrailingSlashAudience", v, is.sign(rsa1, with(func(c map[string]any) { c["aud"] = testAudience + "/" }), nil), ReasonAudience},
		{"AudienceArrayWithoutUs", v, is.sign(rsa1, with(func(c map[string]any) { c["aud"] = []string{"a", "b"} }), nil), ReasonAudience},
		{"NoAudience", v, is.sign(rsa1, with(func(c map[string]any) { delete(c, "aud") }), nil), ReasonAudience},
		{"WrongIssuer", v, is.sign(rsa1, with(func(c map[string]any) { c["iss"] = testIssuer + "/" }), nil), ReasonIssuer},
		// alg none in its canonical, empty-signature form fails on form...
		{"AlgNone", v, unsigned(map[string]any{"alg": "none", "kid": "rsa1"}, claims(), nil), ReasonMalformed},
		// ...and with any signature on the allowlist.
		{"AlgNoneWithSignature", v, unsigned(map[string]any{"alg": "none", "kid": "rsa1"}, claims(), []byte("x")), ReasonAlgorithm},
		{"AlgNoneCase", v, unsigned(map[string]any{"alg": "None"}, claims(), []byte("x")), ReasonAlgorithm},
		{"HS256WithPublicKeyPEM", v, hs256(t, publicKeyPEM(t), map[string]any{"alg": "HS256", "kid": "rsa1", "typ": "JWT"}, claims()), ReasonAlgorithm},
		{"HS256WithPublicKeyDER", v, hs256(t, publicKeyPEM(t)[27:], map[string]any{"alg": "HS256", "kid": "rsa1"}, claims()), ReasonAlgorithm},
		// An RSA signature presented under an EC key's kid.
		{"RSATokenUnderECKid", v, is.sign(rsa1, claims(), map[string]any{"kid": "ec256"}), ReasonAlgorithm},
		// ES256 claimed against a P-384 key.
		{"ES256OnP384Key", v, unsigned(map[string]any{"alg": "ES256", "kid": "ec384"}, claims(), make([]byte, 64)), ReasonAlgorithm},
		// PS256 against a JWK that pins alg RS256... and RS256 against one pinning PS256.
		{"AlgDiffersFromJWKAlg", v, is.sign(rsa1, claims(), map[string]any{"kid": "rsaps"}), ReasonAlgorithm},
		{"AlgNotAllowlisted", vDefault, is.sign(key("ec384"), claims(), nil), ReasonAlgorithm},
		{"EdDSAUnderRSAKid", v, is.sign(key("ed1"), claims(), map[string]any{"kid": "rsa1"}), ReasonAlgorithm},
		{"NotBeforeFuture", v, is.sign(rsa1, with(func(c map[string]any) { c["nbf"] = t0.Add(2 * time.Minute).Unix() }), nil), ReasonNotYetValid},
		{"IssuedInFuture", v, is.sign(rsa1, with(func(c map[string]any) { c["iat"] = t0.Add(2 * time.Minute).Unix() }), nil), ReasonIssuedInFuture},
		{"Oversize", v, is.sign(rsa1, with(func(c map[string]any) { c["pad"] = strings.Repeat("x", 9000) }), nil), ReasonTooLarge},
		{"MissingTenant", v, is.sign(rsa1, with(func(c map[string]any) { delete(c, "tenant_id") }), nil), ReasonTenant},
		{"EmptyTenant", v, is.sign(rsa1, with(func(c map[string]any) { c["tenant_id"] = "" }), nil), ReasonTenant},
		{"NumericTenant", v, is.sign(rsa1, with(func(c map[string]any) { c["tenant_id"] = 7 }), nil), ReasonTenant},
		{"ControlCharTenant", v, is.sign(rsa1, with(func(c map[string]any) { c["tenant_id"] = "a\nb" }), nil), ReasonTenant},
		{"MissingSubject", v, is.sign(rsa1, with(func(c map[string]any) { delete(c, "sub") }), nil), ReasonSubject},
		{"PATLookalikeSubject", v, is.sign(rsa1, with(func(c map[string]any) { c["sub"] = "pat:abc" }), nil), ReasonSubject},
		{"TypMissing", vTyp, is.sign(rsa1, claims(), nil), ReasonType},
		{"TypJWT", vTyp, is.sign(rsa1, claims(), map[string]any{"typ": "JWT"}), ReasonType},
		{"CritHeader", v, is.sign(rsa1, claims(), map[string]any{"crit": []string{"exp"}, "exp": 1}), ReasonCritical},
		{"UnknownKid", v, is.sign(rsa1, claims(), map[string]any{"kid": "nope"}), ReasonKeyNotFound},
		{"NoKidWithManyKeys", v, is.sign(rsa1, claims(), map[string]any{"kid": nil}), ReasonKeyNotFound},
		{"TamperedPayload", v, tamper(is.sign(rsa1, claims(), nil)), ReasonSignature},
		{"SignatureOfOtherKey", v, is.sign(key("rsa2"), claims(), map[string]any{"kid": "rsa1"}), ReasonSignature},
		{"ECSignatureWrongLength", v, unsigned(map[string]any{"alg": "ES256", "kid": "ec256"}, claims(), make([]byte, 63)), ReasonSignature},
		{"DuplicateClaim", v, signRaw(t, ec256, []byte(`{"iss":"`+testIssuer+`","sub":"a","sub":"b","aud":"`+testAudience+`","exp":9999999999,"tenant_id":"acme"}`), nil), ReasonMalformed},
		{"TrailingClaimData", v, signRaw(t, ec256, []byte(`{"iss":"x"}{}`), nil), ReasonMalformed},
		{"PayloadNotObject", v, signRaw(t, ec256, []byte(`["x"]`), nil), ReasonMalformed},
		{"DuplicateHeaderAlg", v, signHeader(t, rsa1, `{"alg":"RS256","kid":"rsa1","alg":"RS256"}`, claims()), ReasonMalformed},
		{"NumericKid", v, signHeader(t, rsa1, `{"alg":"RS256","kid":1}`, claims()), ReasonMalformed},
		{"EmptyKidWithManyKeys", v, signHeader(t, rsa1, `{"alg":"RS256","kid":""}`, claims()), ReasonKeyNotFound},
		{"PSSSaltNotHashLength", v, pssZeroSalt(t, is.sign(key("rsaps"), claims(), nil)), ReasonSignature},
		{"PayloadSecondSpelling", v, respell(t, is.sign(rsa1, claims(), nil)), ReasonMalformed},
		{"TwoParts", v, "a.b", ReasonMalformed},
		{"FiveParts", v, "a.b.c.d.e", ReasonMalformed},
		{"PaddedBase64", v, padded(is.sign(rsa1, claims(), nil)), ReasonMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.v.Verify(context.Background(), tt.tok, nil)
			var ite *InvalidTokenError
			if !errors.As(err, &ite) || !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("Verify = %v, want an InvalidTokenError (%v)", err, tt.want)
			}
			if ite.Reason != tt.want {
				t.Errorf("reason = %v, want %v", ite.Reason, tt.want)
			}
			if strings.Contains(err.Error(), tt.tok) || strings.Contains(err.Error(), "eyJ") {
				t.Errorf("error %q carries token material", err)
			}
		})
	}
}

// signHeader signs claims under a header given verbatim.
func signHeader(t *testing.T, k signingKey, hdr string, c map[string]any) string {
	p, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	input := b64.EncodeToString([]byte(hdr)) + "." + b64.EncodeToString(p)
	return input + "." + b64.EncodeToString(testSign(t, k, []byte(input)))
}

// pssZeroSalt re-signs a PS256 token with an empty salt, which RFC 7518
// §3.5 rules out (the salt is as long as the hash). go-jose v4 verifies PSS
// with any salt length; bastion must not.
func pssZeroSalt(t *testing.T, tok string) string {
	input := tok[:strings.LastIndexByte(tok, '.')]
	d := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPSS(rand.Reader, key("rsaps").priv.(*rsa.PrivateKey), crypto.SHA256, d[:], &rsa.PSSOptions{SaltLength: 0})
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + b64.EncodeToString(sig)
}

// respell sets a padding bit in the payload's last base64 character: the
// same bytes under a second spelling, which a lenient decoder (go-jose's)
// accepts and re-encodes before verifying.
func respell(t *testing.T, tok string) string {
	parts := strings.Split(tok, ".")
	p := []byte(parts[1])
	if len(p)%4 == 0 {
		t.Fatal("payload length leaves no padding bits")
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	p[len(p)-1] = alphabet[strings.IndexByte(alphabet, p[len(p)-1])^1]
	parts[1] = string(p)
	return strings.Join(parts, ".")
}

// tamper flips the subject after signing.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	p, _ := b64.DecodeString(parts[1])
	p = []byte(strings.Replace(string(p), "user-42", "user-43", 1))
	parts[1] = b64.EncodeToString(p)
	return strings.Join(parts, ".")
}

// padded re-encodes the signature with base64 padding, a second spelling
// of the same bytes.
func padded(tok string) string {
	parts := strings.Split(tok, ".")
	sig, _ := b64.DecodeString(parts[2])
	parts[2] = base64.URLEncoding.EncodeToString(sig) // 256 bytes: ends in "=="
	return strings.Join(parts, ".")
}

func TestJWTAlgorithmsRefusedAtConfig(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, key("rsa1"))
	base := func() JWTConfig {
		return JWTConfig{Issuer: testIssuer, Audience: testAudience, JWKSURL: is.srv.URL}
	}
	tests := []struct {
		name string
		edit func(*JWTConfig)
	}{
		{"HS256", func(c *JWTConfig) { c.Algorithms = []Algorithm{RS256, "HS256"} }},
		{"None", func(c *JWTConfig) { c.Algorithms = []Algorithm{"none"} }},
		{"Unknown", func(c *JWTConfig) { c.Algorithms = []Algorithm{"ES256K"} }},
		{"NoIssuer", func(c *JWTConfig) { c.Issuer = "" }},
		{"RelativeAudience", func(c *JWTConfig) { c.Audience = "/mcp" }},
		{"UpperCaseHostAudience", func(c *JWTConfig) { c.Audience = "https://Bastion.example.test/mcp" }},
		{"FragmentAudience", func(c *JWTConfig) { c.Audience = testAudience + "#x" }},
		{"PlainHTTPJWKS", func(c *JWTConfig) { c.JWKSURL = "http://issuer.example.test/jwks" }},
		{"FileJWKS", func(c *JWTConfig) { c.JWKSURL = "file:///etc/jwks" }},
		{"TTLBoundsInverted", func(c *JWTConfig) { c.MinCacheTTL = time.Hour; c.MaxCacheTTL = time.Minute }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base()
			tt.edit(&cfg)
			if _, err := NewJWTVerifier(cfg, is.srv.Client()); err == nil {
				t.Errorf("NewJWTVerifier accepted %+v", cfg)
			}
		})
	}
	if _, err := NewJWTVerifier(base(), nil); err == nil {
		t.Error("NewJWTVerifier accepted a nil client")
	}
	for _, u := range []string{"http://127.0.0.1:1/jwks", "http://localhost:1/jwks", "http://[::1]:1/jwks", "HTTP://127.0.0.1/jwks"} {
		cfg := base()
		cfg.JWKSURL = u
		if _, err := NewJWTVerifier(cfg, is.srv.Client()); !errors.Is(err, ErrInsecureJWKS) {
			t.Errorf("plain-http JWKS %s: %v, want ErrInsecureJWKS", u, err)
		}
	}
}

// TestJWKSRedirectToHTTPRefused: an https JWKS URL that redirects to plain
// http is not followed, so the keys never come over an unprotected hop.
func TestJWKSRedirectToHTTPRefused(t *testing.T) {
	t.Parallel()
	var plainHits atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		plainHits.Add(1)
		w.Write([]byte(`{"keys":[]}`))
	}))
	t.Cleanup(plain.Close)
	redir := httptest.NewTLSServer(http.RedirectHandler(plain.URL+"/jwks", http.StatusFound))
	t.Cleanup(redir.Close)
	v, err := NewJWTVerifier(JWTConfig{Issuer: testIssuer, Audience: testAudience, JWKSURL: redir.URL + "/jwks"}, redir.Client())
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Refresh(context.Background()); !errors.Is(err, ErrInsecureJWKS) {
		t.Errorf("Refresh through a redirect to http = %v, want ErrInsecureJWKS", err)
	}
	if n := plainHits.Load(); n != 0 {
		t.Errorf("the plain-http JWKS was fetched %d times", n)
	}
}

// TestJWKSUnknownKidRefetchIsRateLimited: unknown kids prompt one fetch per
// RefetchInterval however many are tried, and the first fetch (or any
// other) does not spend that allowance.
func TestJWKSUnknownKidRefetchIsRateLimited(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, key("rsa1"))
	v, clk := is.verifier(nil)
	ctx := context.Background()
	if _, err := v.Verify(ctx, is.sign(key("rsa1"), claims(), nil), nil); err != nil {
		t.Fatal(err)
	}
	if n := is.fetches.Load(); n != 1 {
		t.Fatalf("fetches after first token = %d, want 1", n)
	}
	unknown := func(kid string) Reason {
		t.Helper()
		_, err := v.Verify(ctx, is.sign(key("rsa1"), claims(), map[string]any{"kid": kid}), nil)
		var ite *InvalidTokenError
		if !errors.As(err, &ite) {
			t.Fatalf("unknown kid %q: %v", kid, err)
		}
		return ite.Reason
	}
	// Within the floor of the first fetch, an unknown kid costs nothing.
	clk.Advance(DefaultMinRefetch - time.Second)
	if r := unknown("x0"); r != ReasonKeyNotFound {
		t.Errorf("reason = %v", r)
	}
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("fetches after an unknown kid within the floor = %d, want 1", n)
	}
	// Past the floor, the first fetch spent nothing of the kid allowance.
	clk.Advance(2 * time.Second)
	unknown("x1")
	if n := is.fetches.Load(); n != 2 {
		t.Errorf("fetches after an unknown kid past the floor = %d, want 2 (one refetch)", n)
	}
	// A storm of random kids within the window: no more fetches.
	for i := range 50 {
		clk.Advance(500 * time.Millisecond)
		unknown(fmt.Sprintf("storm-%d", i))
	}
	if n := is.fetches.Load(); n != 2 {
		t.Errorf("fetches after 50 unknown kids within 30s = %d, want still 2", n)
	}
	clk.Advance(DefaultRefetchInterval - 25*time.Second) // 30s after x1's fetch
	unknown("x3")
	if n := is.fetches.Load(); n != 3 {
		t.Errorf("fetches after the window = %d, want 3", n)
	}
}

// TestJWKSRotationRightAfterFetch: the issuer rotates its key just after
// bastion fetched the set (at start-up, or for any other reason); a token
// under the new key is accepted as soon as the floor has passed, not 30s
// later. Real JWKS over TLS on loopback, an injected clock.
func TestJWKSRotationRightAfterFetch(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, key("rsa1"))
	is.setCacheControl("max-age=60")
	v, clk := is.verifier(nil)
	ctx := context.Background()
	if err := v.Refresh(ctx); err != nil { // the start-up fetch
		t.Fatal(err)
	}
	is.publish(key("rsa1"), key("ec256"))
	fresh := is.sign(key("ec256"), claims(), nil)
	clk.Advance(time.Second)
	if _, err := v.Verify(ctx, fresh, nil); !errors.Is(err, ErrInvalidToken) || is.fetches.Load() != 1 {
		t.Fatalf("1s after a fetch: %v, %d fetches; want refused without a fetch (the floor)", err, is.fetches.Load())
	}
	clk.Advance(DefaultMinRefetch)
	if p, err := v.Verify(ctx, fresh, nil); err != nil || p.ID() != "user-42" {
		t.Fatalf("past the floor, a token under the rotated key = %v, %v; want accepted", p, err)
	}
	if n := is.fetches.Load(); n != 2 {
		t.Errorf("fetches = %d, want 2", n)
	}
	// The same holds after an expiry-driven refetch: it does not count
	// against the kid allowance either.
	clk.Advance(2 * time.Minute) // the set expired: the next token refetches
	if _, err := v.Verify(ctx, fresh, nil); err != nil || is.fetches.Load() != 3 {
		t.Fatalf("after expiry: %v, %d fetches", err, is.fetches.Load())
	}
	is.publish(key("ec256"), key("ed1"))
	clk.Advance(DefaultMinRefetch + time.Second)
	if _, err := v.Verify(ctx, is.sign(key("ed1"), claims(), nil), nil); err != nil {
		t.Errorf("a second rotation right after an expiry refetch: %v", err)
	}
}

func TestJWKSRotation(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, key("rsa1"))
	v, clk := is.verifier(nil)
	ctx := context.Background()
	old := is.sign(key("rsa1"), claims(), nil)
	if _, err := v.Verify(ctx, old, nil); err != nil {
		t.Fatal(err)
	}
	// The issuer rotates: rsa2 in, rsa1 out.
	is.publish(key("rsa2"))
	clk.Advance(time.Minute)
	p, err := v.Verify(ctx, is.sign(key("rsa2"), claims(), nil), nil)
	if err != nil || p.ID() != "user-42" {
		t.Fatalf("token under the new kid = %v, %v; want accepted after a refetch", p, err)
	}
	if n := is.fetches.Load(); n != 2 {
		t.Errorf("fetches = %d, want 2", n)
	}
	if _, err := v.Verify(ctx, old, nil); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("token under the retired kid = %v, want refused", err)
	}
}

func TestJWKSFailureKeepsLastGoodSet(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, key("ec256"))
	is.setCacheControl("max-age=120")
	v, clk := is.verifier(nil)
	ctx := context.Background()
	tok := is.sign(key("ec256"), claims(), nil)
	if _, err := v.Verify(ctx, tok, nil); err != nil {
		t.Fatal(err)
	}
	clk.Advance(100 * time.Second)
	if _, err := v.Verify(ctx, tok, nil); err != nil || is.fetches.Load() != 1 {
		t.Fatalf("within max-age: err %v, fetches %d; want cached", err, is.fetches.Load())
	}
	is.failing.Store(true)
	clk.Advance(30 * time.Second) // past max-age=120
	if _, err := v.Verify(ctx, tok, nil); err != nil {
		t.Errorf("stale set with the issuer down = %v, want the last good set served", err)
	}
	if n := is.fetches.Load(); n != 2 {
		t.Errorf("fetches = %d, want 2 (one failed refresh)", n)
	}
	if _, err := v.Verify(ctx, tok, nil); err != nil || is.fetches.Load() != 2 {
		t.Errorf("right after a failed refresh: err %v fetches %d; want served without refetch", err, is.fetches.Load())
	}
	if err := v.Refresh(ctx); err == nil {
		t.Error("Refresh with the issuer down = nil, want its error")
	}
	is.failing.Store(false)
	if err := v.Refresh(ctx); err != nil {
		t.Errorf("Refresh = %v", err)
	}
}

func TestJWKSUnavailable(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, key("ec256"))
	is.failing.Store(true)
	v, _ := is.verifier(nil)
	_, err := v.Verify(context.Background(), is.sign(key("ec256"), claims(), nil), nil)
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrInvalidToken) {
		t.Fatalf("Verify with no JWKS ever = %v, want ErrUnavailable", err)
	}
	if got := Status(err); got != 503 {
		t.Errorf("Status = %d, want 503", got)
	}
	// A refused alg never costs a fetch.
	before := is.fetches.Load()
	_, _ = v.Verify(context.Background(), unsigned(map[string]any{"alg": "HS256"}, claims(), []byte("x")), nil)
	if is.fetches.Load() != before {
		t.Error("a token with a refused alg caused a JWKS fetch")
	}
}

func TestJWKSCacheTTL(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, key("rsa1"))
	v, _ := is.verifier(nil)
	tests := []struct {
		cc   string
		want time.Duration
	}{
		{"", 15 * time.Minute},
		{"max-age=300", 5 * time.Minute},
		{"public, max-age=7200, must-revalidate", 2 * time.Hour},
		{"max-age=5", time.Minute},
		{"max-age=999999999999", 24 * time.Hour},
		{"max-age=-1", 15 * time.Minute},
		{"no-store", time.Minute},
		{"No-Cache, max-age=600", time.Minute},
		{`max-age="600"`, 10 * time.Minute},
	}
	for _, tt := range tests {
		if got := v.cacheTTL(tt.cc); got != tt.want {
			t.Errorf("cacheTTL(%q) = %v, want %v", tt.cc, got, tt.want)
		}
	}
}

func TestJWKSSkipsUnusableKeys(t *testing.T) {
	t.Parallel()
	good := `{"kty":"OKP","crv":"Ed25519","kid":"ok","x":"` + b64.EncodeToString(key("ed1").public().(ed25519.PublicKey)) + `"}`
	tests := []struct {
		name string
		set  string
		want int // usable keys, -1 for an error
	}{
		{"Good", `{"keys":[` + good + `]}`, 1},
		{"OctSkipped", `{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"h"},` + good + `]}`, 1},
		{"EncSkipped", `{"keys":[{"kty":"OKP","crv":"Ed25519","use":"enc","kid":"e","x":"` + b64.EncodeToString(make([]byte, 32)) + `"},` + good + `]}`, 1},
		{"SmallRSASkipped", `{"keys":[{"kty":"RSA","kid":"r","n":"` + b64.EncodeToString(make([]byte, 1)) + `","e":"AQAB"}]}`, -1},
		{"OffCurveSkipped", `{"keys":[{"kty":"EC","crv":"P-256","kid":"p","x":"` + b64.EncodeToString(make([]byte, 32)) + `","y":"` + b64.EncodeToString(make([]byte, 32)) + `"}]}`, -1},
		{"Empty", `{"keys":[]}`, -1},
		{"NotJSON", `<html>`, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, err := parseJWKS([]byte(tt.set))
			switch {
			case tt.want < 0 && err == nil:
				t.Errorf("parseJWKS = %d keys, want an error", len(keys))
			case tt.want >= 0 && (err != nil || len(keys) != tt.want):
				t.Errorf("parseJWKS = %d keys, %v; want %d", len(keys), err, tt.want)
			}
		})
	}
}

func TestAlgorithmFits(t *testing.T) {
	t.Parallel()
	for _, k := range allKeys() {
		for _, a := range SupportedAlgorithms() {
			var want bool
			switch k.public().(type) {
			case *rsa.PublicKey:
				want = strings.HasPrefix(string(a), "RS") || strings.HasPrefix(string(a), "PS")
			case *ecdsa.PublicKey, ed25519.PublicKey:
				want = a == k.alg
			}
			if got := a.fits(k.public()); got != want {
				t.Errorf("%s.fits(%s key) = %v, want %v", a, k.kid, got, want)
			}
		}
	}
}

// TestJWKSConcurrentRefetch: many requests racing on one unknown kid cause
// one fetch, not one each.
func TestJWKSConcurrentRefetch(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, key("ed1"))
	v, clk := is.verifier(nil)
	ctx := context.Background()
	if err := v.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	is.publish(key("ed1"), key("ec256"))
	tok := is.sign(key("ec256"), claims(), nil)
	errs := make(chan error, 20)
	for range cap(errs) {
		go func() {
			_, err := v.Verify(ctx, tok, nil)
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Errorf("Verify under a newly published kid = %v", err)
		}
	}
	if n := is.fetches.Load(); n != 2 {
		t.Errorf("fetches = %d, want 2 (initial + one refetch for 20 racing requests)", n)
	}
}

func BenchmarkJWTVerify(b *testing.B) {
	is := newIssuer(b, key("rsa1"), key("ec256"), key("ed1"))
	v, err := NewJWTVerifier(JWTConfig{Issuer: testIssuer, Audience: testAudience, JWKSURL: is.srv.URL, Now: newClock().Now}, is.srv.Client())
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"rsa1", "ec256", "ed1"} {
		tok := is.sign(key(name), claims(), nil)
		b.Run(string(key(name).alg), func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				if _, err := v.Verify(ctx, tok, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestJWTHeaderExactNames: header members are read by exact name, so an
// "ALG" member beside "alg" changes nothing (encoding/json's struct decoding
// would have let it override "alg").
func TestJWTHeaderExactNames(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, key("rsa1"))
	v, _ := is.verifier(nil)
	tok := signHeader(t, key("rsa1"), `{"alg":"RS256","kid":"rsa1","ALG":"none","Kid":"x"}`, claims())
	if _, err := v.Verify(context.Background(), tok, nil); err != nil {
		t.Errorf("Verify = %v, want the exact-name alg and kid used", err)
	}
}

// TestJWKSOnFetch: every JWKS fetch reports its outcome, from a bounded
// set: ok, bad_status for a non-200, invalid for a body that is not a key
// set, unreachable when nothing answers.
func TestJWKSOnFetch(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, key("rsa1"))
	var mu sync.Mutex
	var got []string
	v, _ := is.verifier(func(c *JWTConfig) {
		c.OnFetch = func(o string) { mu.Lock(); got = append(got, o); mu.Unlock() }
	})
	ctx := context.Background()
	if err := v.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	is.failing.Store(true)
	if err := v.Refresh(ctx); err == nil {
		t.Fatal("Refresh against a failing issuer succeeded")
	}
	is.failing.Store(false)
	is.mu.Lock()
	is.jwks = []byte("not a key set")
	is.mu.Unlock()
	if err := v.Refresh(ctx); err == nil {
		t.Fatal("Refresh of a body that is not a key set succeeded")
	}
	is.srv.Close()
	if err := v.Refresh(ctx); err == nil {
		t.Fatal("Refresh against a closed issuer succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{FetchOK, FetchBadStatus, FetchInvalid, FetchUnreachable}
	if !slices.Equal(got, want) {
		t.Fatalf("OnFetch outcomes = %q, want %q", got, want)
	}
}
