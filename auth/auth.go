// Package auth turns a bearer credential into a principal.Principal: an OAuth
// 2.1 access token (a JWT checked against an issuer's JWKS, RFC 9068/8707) or
// a bastion personal access token (bst_…), and answers refusals with RFC 6750
// challenges that point at RFC 9728 protected-resource metadata.
//
// Invariants: a credential is read only from a single Authorization header,
// never from the query string or body; a Principal reaches a handler's
// context only after a Verifier accepted the credential (principal.NewContext
// is called here and nowhere else on the request path); no error, log value or
// response produced here contains a token, and client-facing descriptions
// come from a fixed table so they cannot carry internal detail.
package auth

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/bastion-mcp/bastion/principal"
)

// A Verifier checks a bearer token and returns the principal it stands for.
// r is the request that carried it (for verifiers that bind a token to a
// connection); it may be nil. A Verifier's errors are ErrInvalidToken (in a
// chain, possibly as an *InvalidTokenError), ErrUnavailable when the check
// could not be made, or an *InsufficientScopeError.
type Verifier func(ctx context.Context, token string, r *http.Request) (principal.Principal, error)

// Errors a Verifier or BearerToken returns. Use errors.Is: the concrete error
// is often a wrapper with a reason for logs.
var (
	// ErrNoToken means the request carried no bearer credential (or used a
	// scheme bastion does not support). It becomes a 401 whose challenge has
	// no error code, as RFC 6750 §3.1 asks.
	ErrNoToken = errors.New("auth: no bearer token")
	// ErrInvalidRequest means the credentials were presented in a refused
	// way: two Authorization headers. It becomes a 400 invalid_request. A
	// malformed token is ErrInvalidToken (401), and a token in the query
	// string is not read at all (ErrNoToken when it is the only one).
	ErrInvalidRequest = errors.New("auth: malformed credentials")
	// ErrInvalidToken means the token was presented properly but is not
	// acceptable (bad signature, expired, revoked, wrong audience…). It
	// becomes a 401 invalid_token.
	ErrInvalidToken = errors.New("auth: invalid token")
	// ErrUnavailable means the token could not be checked right now (the
	// JWKS or the token store is unreachable). It becomes a 503: telling the
	// client its token is bad would send it to re-authenticate for nothing.
	ErrUnavailable = errors.New("auth: credential check unavailable")
)

// Reason says why a token was refused. Reasons go to logs and metrics; the
// client sees only Description, a fixed sentence.
type Reason uint8

// The reasons a token is refused.
const (
	ReasonMalformed      Reason = iota + 1 // not a well-formed compact JWS / PAT
	ReasonTooLarge                         // longer than the configured limit
	ReasonAlgorithm                        // alg outside the allowlist or not matching the key
	ReasonKeyNotFound                      // kid unknown, or missing with several keys
	ReasonSignature                        // signature does not verify
	ReasonType                             // typ is not the required one (RFC 9068)
	ReasonIssuer                           // iss differs
	ReasonAudience                         // aud lacks this resource
	ReasonExpired                          // exp passed
	ReasonNoExpiry                         // exp missing
	ReasonNotYetValid                      // nbf in the future
	ReasonIssuedInFuture                   // iat in the future
	ReasonSubject                          // sub missing or unusable
	ReasonTenant                           // tenant claim missing or unusable
	ReasonChecksum                         // PAT checksum wrong (typo or forgery)
	ReasonUnknown                          // PAT not on record
	ReasonRevoked                          // PAT revoked
	ReasonCritical                         // JWS crit header present
	ReasonRoles                            // roles claim malformed, too long or too many
)

var reasonText = [...]struct{ name, desc string }{
	ReasonMalformed:      {"malformed", "The access token is malformed."},
	ReasonTooLarge:       {"too_large", "The access token is too large."},
	ReasonAlgorithm:      {"algorithm", "The access token uses a signing algorithm this resource does not accept."},
	ReasonKeyNotFound:    {"key_not_found", "The access token was signed with an unknown key."},
	ReasonSignature:      {"signature", "The access token signature is invalid."},
	ReasonType:           {"type", "The access token has the wrong type."},
	ReasonIssuer:         {"issuer", "The access token was issued by an untrusted issuer."},
	ReasonAudience:       {"audience", "The access token was not issued for this resource."},
	ReasonExpired:        {"expired", "The access token expired."},
	ReasonNoExpiry:       {"no_expiry", "The access token has no expiry."},
	ReasonNotYetValid:    {"not_yet_valid", "The access token is not valid yet."},
	ReasonIssuedInFuture: {"issued_in_future", "The access token was issued in the future."},
	ReasonSubject:        {"subject", "The access token has no usable subject."},
	ReasonTenant:         {"tenant", "The access token names no usable tenant."},
	ReasonChecksum:       {"checksum", "The access token is malformed."},
	ReasonUnknown:        {"unknown", "The access token is not recognised."},
	ReasonRevoked:        {"revoked", "The access token was revoked."},
	ReasonCritical:       {"critical_header", "The access token uses an unsupported extension."},
	ReasonRoles:          {"roles", "The access token's roles claim is unusable."},
}

// String returns the reason's stable snake_case name, for logs and metrics.
func (r Reason) String() string {
	if int(r) < len(reasonText) && reasonText[r].name != "" {
		return reasonText[r].name
	}
	return "invalid"
}

// Description returns a fixed sentence safe to send a client.
func (r Reason) Description() string {
	if int(r) < len(reasonText) && reasonText[r].desc != "" {
		return reasonText[r].desc
	}
	return "The access token is invalid."
}

// InvalidTokenError is an ErrInvalidToken with its reason. It never holds the
// token or any part of it.
type InvalidTokenError struct {
	Reason Reason
}

func (e *InvalidTokenError) Error() string { return "auth: invalid token: " + e.Reason.String() }

// Is makes errors.Is(err, ErrInvalidToken) true.
func (e *InvalidTokenError) Is(target error) bool { return target == ErrInvalidToken }

func invalid(r Reason) error { return &InvalidTokenError{Reason: r} }

// InsufficientScopeError means the principal is authenticated but lacks a
// scope the operation needs. Required lists every scope the operation needs,
// so a client can ask for them all in one step-up.
type InsufficientScopeError struct {
	Required []principal.Scope
}

func (e *InsufficientScopeError) Error() string {
	return "auth: insufficient scope: requires " + scopeList(e.Required)
}

func scopeList(ss []principal.Scope) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return strings.Join(parts, " ")
}

// CheckScopes returns an *InsufficientScopeError unless p holds every scope
// in required, and ErrNoToken if p is not a valid principal.
func CheckScopes(p principal.Principal, required ...principal.Scope) error {
	if !p.IsValid() {
		return ErrNoToken
	}
	for _, s := range required {
		if !p.Has(s) {
			return &InsufficientScopeError{Required: slices.Clone(required)}
		}
	}
	return nil
}

// RequireScope is CheckScopes on the principal in ctx: handlers call it
// first and pass a non-nil result to Challenge.
func RequireScope(ctx context.Context, required ...principal.Scope) error {
	p, _ := principal.FromContext(ctx)
	return CheckScopes(p, required...)
}

// Status returns the HTTP status Challenge writes for err: 400, 401, 403, 503,
// or 500 for an error this package does not know.
func Status(err error) int {
	var ise *InsufficientScopeError
	switch {
	case err == nil:
		return http.StatusOK
	case errors.As(err, &ise):
		return http.StatusForbidden
	case errors.Is(err, ErrInvalidRequest):
		return http.StatusBadRequest
	case errors.Is(err, ErrNoToken), errors.Is(err, ErrInvalidToken):
		return http.StatusUnauthorized
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// Middleware authenticates each request with v and puts the principal in the
// request context; refusals are answered with Challenge and never reach next.
// metadataURL is this resource's RFC 9728 metadata URL (see MetadataURL).
func Middleware(v Verifier, metadataURL string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tok, err := BearerToken(r)
			if err != nil {
				Challenge(w, metadataURL, err)
				return
			}
			p, err := v(r.Context(), tok, r)
			if err == nil && !p.IsValid() {
				// A verifier that forgot to fill in the principal must not
				// let the request through as nobody.
				err = invalid(ReasonSubject)
			}
			if err != nil {
				Challenge(w, metadataURL, err)
				return
			}
			next.ServeHTTP(w, r.WithContext(principal.NewContext(r.Context(), p)))
		})
	}
}
