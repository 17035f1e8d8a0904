package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bastion-mcp/bastion/principal"
)

// JWTConfig configures a JWTVerifier. The zero value of each optional field
// means its documented default.
type JWTConfig struct {
	// Issuer is the exact "iss" value required (no normalisation).
	Issuer string
	// Audience is this resource's canonical URI (RFC 8707), e.g.
	// "https://bastion.example.com/mcp". "aud" (a string or an array) must
	// contain it exactly: a trailing-slash variant is a different resource.
	Audience string
	// JWKSURL is where the issuer publishes its keys. It must be https, on
	// loopback too, and so must every redirect the fetch follows: keys read
	// over plain http could have been replaced in transit (ErrInsecureJWKS).
	JWKSURL string
	// Algorithms is the allowlist of signature algorithms; empty means
	// DefaultAlgorithms (RS256, ES256, EdDSA). Only asymmetric algorithms are
	// accepted; HS* and "none" are refused here and at verification.
	Algorithms []Algorithm
	// TenantClaim names the claim holding the tenant; default "tenant_id".
	// The claim is required and must be a non-empty string.
	TenantClaim string
	// ScopeClaim names the space-separated scope claim; default "scope". An
	// array there is accepted too, and "scp" is read when it is absent.
	ScopeClaim string
	// RolesClaim names the claim holding the caller's roles (for the
	// gateway's role-based policy); default "roles". An array of strings or
	// a space-separated string is accepted; absent means no roles. More
	// than principal.MaxRoles roles, or a role that is not 1 to
	// principal.MaxRoleLength printable characters without spaces, refuses
	// the token (ReasonRoles) rather than dropping part of the claim.
	RolesClaim string
	// OnFetch, if non-nil, is told the outcome of every JWKS fetch (one of
	// FetchOutcomes), for the operator's bastion_auth_jwks_fetches_total.
	// It runs on the fetching goroutine and must be cheap.
	OnFetch func(outcome string)
	// RequireTyp, when set (RFC 9068: "at+jwt"), is the required JWS "typ";
	// the "application/" prefix and case are ignored in the comparison.
	RequireTyp string
	// Leeway is the clock skew allowed on exp, nbf and iat; 0 means 60s, a
	// negative value means none. It is capped at 5 minutes.
	Leeway time.Duration
	// MaxTokenBytes refuses longer tokens before any parsing; 0 means 8 KiB.
	MaxTokenBytes int
	// RefetchInterval bounds the refetches an unknown kid prompts: at most
	// one per interval, however many kids are tried, so a storm of forged
	// kids costs the issuer one fetch per interval. Fetches for another
	// cause (the first one, an expired set, Refresh) do not count against
	// it, so a key rotated just after one of them is found by the next
	// unknown kid past MinRefetchInterval. 0 means 30s.
	RefetchInterval time.Duration
	// MinRefetchInterval is the least time between two fetches, whatever
	// prompted them (Refresh excepted); 0 means 5s. It is capped at
	// RefetchInterval.
	MinRefetchInterval time.Duration
	// MinCacheTTL and MaxCacheTTL bound the JWKS lifetime taken from the
	// response's Cache-Control max-age; 0 means 1 minute and 24 hours. With
	// no max-age the set lives 15 minutes (within the bounds).
	MinCacheTTL, MaxCacheTTL time.Duration
	// Now returns the current time; nil means time.Now. Tests inject a clock.
	Now func() time.Time
}

// Defaults of JWTConfig.
const (
	DefaultTenantClaim     = "tenant_id"
	DefaultScopeClaim      = "scope"
	DefaultRolesClaim      = "roles"
	DefaultLeeway          = 60 * time.Second
	DefaultMaxTokenBytes   = 8 << 10
	DefaultRefetchInterval = 30 * time.Second
	DefaultMinRefetch      = 5 * time.Second
	maxLeeway              = 5 * time.Minute
	defaultCacheTTL        = 15 * time.Minute
	maxJWKSBytes           = 512 << 10
	jwksFetchTimeout       = 10 * time.Second
)

// patSubjectPrefix starts every PAT principal's id. A JWT whose sub starts
// with it is refused, so a JWT subject can never alias a PAT principal.
const patSubjectPrefix = "pat:"

// Claims is what a verified access token says, for callers that want more
// than the Principal (session binding, audit).
type Claims struct {
	Principal principal.Principal
	Issuer    string
	Subject   string
	Audience  []string
	ClientID  string // client_id, else azp; recorded, never the identity
	Tenant    string
	Scopes    []principal.Scope // the scopes bastion knows; others dropped
	Roles     []string          // sorted, deduplicated; nil when the claim is absent
	ID        string            // jti
	Expiry    time.Time
	NotBefore time.Time // zero when absent
	IssuedAt  time.Time // zero when absent
}

// JWTVerifier verifies OAuth 2.1 access tokens (JWTs) for one resource. It is
// safe for concurrent use.
type JWTVerifier struct {
	// Fixed at creation.
	cfg     JWTConfig
	client  *http.Client
	allowed []Algorithm

	// fetchMu serialises JWKS fetches and is held across the network call;
	// lock order is fetchMu before mu.
	fetchMu sync.Mutex

	mu          sync.Mutex // guards the fields below
	keys        []verifyKey
	expires     time.Time // when keys should be refreshed
	lastAttempt time.Time // last fetch attempt, successful or not
	lastKidTry  time.Time // last fetch attempt an unknown kid prompted
	lastErr     error     // last fetch failure, for logs; nil after a success
}

// NewJWTVerifier checks cfg and returns a verifier that fetches the JWKS
// with client (the caller passes the egress-guarded client) on first use.
func NewJWTVerifier(cfg JWTConfig, client *http.Client) (*JWTVerifier, error) {
	if client == nil {
		return nil, errors.New("auth: NewJWTVerifier needs an *http.Client")
	}
	if cfg.Issuer == "" {
		return nil, errors.New("auth: JWTConfig.Issuer is required")
	}
	if err := checkResourceURI(cfg.Audience); err != nil {
		return nil, fmt.Errorf("auth: JWTConfig.Audience: %w", err)
	}
	if err := checkJWKSURL(cfg.JWKSURL); err != nil {
		return nil, fmt.Errorf("auth: JWTConfig.JWKSURL: %w", err)
	}
	allowed := slices.Clone(cfg.Algorithms)
	if len(allowed) == 0 {
		allowed = DefaultAlgorithms()
	}
	for _, a := range allowed {
		if !slices.Contains(SupportedAlgorithms(), a) {
			if strings.HasPrefix(string(a), "HS") || strings.EqualFold(string(a), "none") {
				return nil, fmt.Errorf("auth: algorithm %q refused: only asymmetric signatures are verified", a)
			}
			return nil, fmt.Errorf("auth: algorithm %q is not supported", a)
		}
	}
	if cfg.TenantClaim == "" {
		cfg.TenantClaim = DefaultTenantClaim
	}
	if cfg.ScopeClaim == "" {
		cfg.ScopeClaim = DefaultScopeClaim
	}
	if cfg.RolesClaim == "" {
		cfg.RolesClaim = DefaultRolesClaim
	}
	switch {
	case cfg.Leeway == 0:
		cfg.Leeway = DefaultLeeway
	case cfg.Leeway < 0:
		cfg.Leeway = 0
	case cfg.Leeway > maxLeeway:
		cfg.Leeway = maxLeeway
	}
	if cfg.MaxTokenBytes <= 0 {
		cfg.MaxTokenBytes = DefaultMaxTokenBytes
	}
	if cfg.RefetchInterval <= 0 {
		cfg.RefetchInterval = DefaultRefetchInterval
	}
	if cfg.MinRefetchInterval <= 0 {
		cfg.MinRefetchInterval = DefaultMinRefetch
	}
	cfg.MinRefetchInterval = min(cfg.MinRefetchInterval, cfg.RefetchInterval)
	if cfg.MinCacheTTL <= 0 {
		cfg.MinCacheTTL = time.Minute
	}
	if cfg.MaxCacheTTL <= 0 {
		cfg.MaxCacheTTL = 24 * time.Hour
	}
	if cfg.MaxCacheTTL < cfg.MinCacheTTL {
		return nil, errors.New("auth: JWTConfig.MaxCacheTTL is below MinCacheTTL")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &JWTVerifier{cfg: cfg, client: httpsOnly(client), allowed: allowed}, nil
}

// ErrInsecureJWKS is matched (errors.Is) when the JWKS URL, or a redirect
// the fetch was sent to, is not https.
var ErrInsecureJWKS = errors.New("auth: the JWKS must be fetched over https")

// httpsOnly returns a copy of c that refuses to follow a redirect to
// anything but https, so an https JWKS URL cannot be downgraded in flight.
func httpsOnly(c *http.Client) *http.Client {
	cc := *c
	next := c.CheckRedirect
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != "https" {
			return fmt.Errorf("%w: redirected to %s", ErrInsecureJWKS, req.URL.Scheme)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("auth: JWKS fetch: stopped after 10 redirects")
		}
		return nil
	}
	return &cc
}

// checkResourceURI requires an absolute http(s) URI with a lower-case scheme
// and host and no fragment: RFC 8707 compares resource URIs as strings, so
// the configured value must already be canonical.
func checkResourceURI(s string) error {
	u, err := url.Parse(s)
	if err != nil || s == "" {
		return errors.New("must be an absolute URI")
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return errors.New("must be an absolute http(s) URI with a host")
	}
	if u.Fragment != "" || strings.Contains(s, "#") {
		return errors.New("must not have a fragment")
	}
	if !strings.HasPrefix(s, u.Scheme+"://"+strings.ToLower(u.Host)) {
		return errors.New("scheme and host must be lower case")
	}
	return nil
}

// checkJWKSURL requires an absolute https URL. Plain http is refused on
// loopback too: a test or development issuer serves TLS with its own CA.
func checkJWKSURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return errors.New("must be an absolute URL")
	}
	if u.Scheme != "https" {
		return fmt.Errorf("%w, not %q (a loopback or test issuer too: serve it with TLS and a test CA)", ErrInsecureJWKS, u.Scheme)
	}
	return nil
}

// Verify is a Verifier: it returns the principal of a valid token.
func (v *JWTVerifier) Verify(ctx context.Context, token string, _ *http.Request) (principal.Principal, error) {
	c, err := v.VerifyClaims(ctx, token)
	if err != nil {
		return principal.Principal{}, err
	}
	return c.Principal, nil
}

// VerifyClaims verifies token and returns its claims. Errors are
// *InvalidTokenError (errors.Is ErrInvalidToken) or ErrUnavailable when no
// key set could be fetched; none contains any part of the token.
func (v *JWTVerifier) VerifyClaims(ctx context.Context, token string) (*Claims, error) {
	if len(token) > v.cfg.MaxTokenBytes {
		return nil, invalid(ReasonTooLarge)
	}
	j, err := parseCompact(token)
	if err != nil {
		return nil, err
	}
	// Header policy first: a token with a refused alg must not cost a fetch.
	if j.header.HasCrit {
		return nil, invalid(ReasonCritical)
	}
	alg := Algorithm(j.header.Alg)
	if !slices.Contains(v.allowed, alg) {
		return nil, invalid(ReasonAlgorithm)
	}
	if v.cfg.RequireTyp != "" && !sameMediaType(j.header.Typ, v.cfg.RequireTyp) {
		return nil, invalid(ReasonType)
	}
	cands, err := v.keysFor(ctx, j.header.Kid)
	if err != nil {
		return nil, err
	}
	fitting := 0
	verified := false
	for _, k := range cands {
		if !alg.fits(k.key) || (k.alg != "" && k.alg != alg) {
			continue
		}
		fitting++
		if alg.verify(k.key, j.signed, j.sig) {
			verified = true
			break
		}
	}
	switch {
	case fitting == 0:
		return nil, invalid(ReasonAlgorithm)
	case !verified:
		return nil, invalid(ReasonSignature)
	}
	// Only now, with the signature checked, are the claims read.
	return v.checkClaims(j.payload)
}

// sameMediaType compares JWS "typ" values: case-insensitively, with an
// optional "application/" prefix (RFC 7515 §4.1.9).
func sameMediaType(got, want string) bool {
	norm := func(s string) string {
		s = strings.ToLower(s)
		return strings.TrimPrefix(s, "application/")
	}
	return got != "" && norm(got) == norm(want)
}

func (v *JWTVerifier) checkClaims(payload []byte) (*Claims, error) {
	var raw map[string]json.RawMessage
	if err := decodeObject(payload, &raw); err != nil {
		return nil, invalid(ReasonMalformed)
	}
	var c Claims
	var ok bool
	now := v.cfg.Now()
	leeway := v.cfg.Leeway

	if c.Issuer, ok = stringClaim(raw, "iss"); !ok || c.Issuer != v.cfg.Issuer {
		return nil, invalid(ReasonIssuer)
	}
	if c.Audience, ok = stringsClaim(raw, "aud"); !ok || !slices.Contains(c.Audience, v.cfg.Audience) {
		return nil, invalid(ReasonAudience)
	}
	if _, present := raw["exp"]; !present {
		return nil, invalid(ReasonNoExpiry)
	}
	if c.Expiry, ok = timeClaim(raw, "exp"); !ok {
		return nil, invalid(ReasonMalformed)
	}
	if !now.Before(c.Expiry.Add(leeway)) {
		return nil, invalid(ReasonExpired)
	}
	if _, present := raw["nbf"]; present {
		if c.NotBefore, ok = timeClaim(raw, "nbf"); !ok {
			return nil, invalid(ReasonMalformed)
		}
		if now.Add(leeway).Before(c.NotBefore) {
			return nil, invalid(ReasonNotYetValid)
		}
	}
	if _, present := raw["iat"]; present {
		if c.IssuedAt, ok = timeClaim(raw, "iat"); !ok {
			return nil, invalid(ReasonMalformed)
		}
		if now.Add(leeway).Before(c.IssuedAt) {
			return nil, invalid(ReasonIssuedInFuture)
		}
	}
	if c.Subject, ok = stringClaim(raw, "sub"); !ok || c.Subject == "" || strings.HasPrefix(c.Subject, patSubjectPrefix) {
		return nil, invalid(ReasonSubject)
	}
	if c.Tenant, ok = stringClaim(raw, v.cfg.TenantClaim); !ok || c.Tenant == "" {
		return nil, invalid(ReasonTenant)
	}
	if _, err := principal.New(c.Tenant, "probe"); err != nil {
		return nil, invalid(ReasonTenant)
	}
	c.ClientID, _ = stringClaim(raw, "client_id")
	if c.ClientID == "" {
		c.ClientID, _ = stringClaim(raw, "azp")
	}
	c.ID, _ = stringClaim(raw, "jti")

	scopeRaw, present := raw[v.cfg.ScopeClaim]
	if !present {
		scopeRaw, present = raw["scp"]
	}
	if present {
		names, ok := scopeNames(scopeRaw)
		if !ok {
			return nil, invalid(ReasonMalformed)
		}
		for _, n := range names {
			if s, known := principal.ParseScope(n); known {
				c.Scopes = append(c.Scopes, s)
			}
		}
	}
	p, err := principal.New(c.Tenant, c.Subject, c.Scopes...)
	if err != nil {
		return nil, invalid(ReasonSubject)
	}
	if rolesRaw, present := raw[v.cfg.RolesClaim]; present {
		names, ok := scopeNames(rolesRaw)
		// null decodes as an empty string; a roles claim must say what it
		// means.
		ok = ok && !bytes.Equal(bytes.TrimSpace(rolesRaw), []byte("null"))
		// Bound the claim before WithRoles sorts it: a token may carry a
		// huge array, and deduplication must not make an oversized claim
		// acceptable.
		if !ok || len(names) > principal.MaxRoles {
			return nil, invalid(ReasonRoles)
		}
		if p, err = p.WithRoles(names...); err != nil {
			return nil, invalid(ReasonRoles)
		}
	}
	c.Principal = p
	c.Scopes = p.Scopes()
	c.Roles = p.Roles()
	return &c, nil
}

// stringClaim returns claim name as a string; ok is false when it is absent
// or not a JSON string.
func stringClaim(raw map[string]json.RawMessage, name string) (string, bool) {
	b, present := raw[name]
	if !present {
		return "", false
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return "", false
	}
	return s, true
}

// stringsClaim reads a claim that may be one string or an array of strings
// (as "aud" may, RFC 7519 §4.1.3).
func stringsClaim(raw map[string]json.RawMessage, name string) ([]string, bool) {
	b, present := raw[name]
	if !present {
		return nil, false
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return []string{s}, true
	}
	var ss []string
	if err := json.Unmarshal(b, &ss); err != nil {
		return nil, false
	}
	return ss, true
}

// scopeNames reads a scope claim: a space-separated string (RFC 8693 §4.2)
// or an array of strings ("scp" as some issuers write it).
func scopeNames(b json.RawMessage) ([]string, bool) {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return strings.Fields(s), true
	}
	var ss []string
	if err := json.Unmarshal(b, &ss); err != nil {
		return nil, false
	}
	return ss, true
}

// maxNumericDate bounds NumericDate values to year ~36812 so that the
// conversion to time.Time cannot overflow.
const maxNumericDate = 1 << 40

// timeClaim reads a NumericDate (seconds since the epoch, maybe fractional).
func timeClaim(raw map[string]json.RawMessage, name string) (time.Time, bool) {
	var f float64
	if err := json.Unmarshal(raw[name], &f); err != nil {
		return time.Time{}, false
	}
	if math.IsNaN(f) || f < 0 || f > maxNumericDate {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true
}
