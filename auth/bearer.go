package auth

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
)

// maxHeaderToken caps what BearerToken accepts before any verifier runs; the
// verifiers apply their own, smaller limits.
const maxHeaderToken = 16 << 10

// BearerToken returns the bearer token of r. It reads exactly one
// Authorization header; a second header is ErrInvalidRequest. No header, or
// another scheme, is ErrNoToken. An access_token query parameter is never
// read (RFC 6750 §2.3: URLs end up in logs and Referer headers), so a token
// sent only there is as absent as one never sent, and one beside a header
// grants nothing. A form-encoded body is never read either.
func BearerToken(r *http.Request) (string, error) {
	vals := r.Header.Values("Authorization")
	switch len(vals) {
	case 0:
		return "", ErrNoToken
	case 1:
		return ParseBearer(vals[0])
	default:
		return "", ErrInvalidRequest
	}
}

// ParseBearer parses an Authorization header value "Bearer <token>". The
// scheme is matched case-insensitively (RFC 7235 §2.1) and must be followed by
// exactly one space. Another scheme, or Bearer with nothing after it, is
// ErrNoToken; a credential that is not an RFC 6750 b64token (padding inside
// it, a second space, a control byte) is an *InvalidTokenError
// (ReasonMalformed, or ReasonTooLarge): a 401 invalid_token, as for any
// unusable token, never a 400.
func ParseBearer(v string) (string, error) {
	scheme, tok, ok := strings.Cut(v, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", ErrNoToken
	}
	switch {
	case !ok || tok == "":
		return "", ErrNoToken
	case len(tok) > maxHeaderToken:
		return "", invalid(ReasonTooLarge)
	case !isB64Token(tok):
		return "", invalid(ReasonMalformed)
	}
	return tok, nil
}

// isB64Token reports whether s matches RFC 6750's
// b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' {
			continue
		}
		break
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// Challenge answers a refused request. err decides the status (see Status):
//
//	400 Bearer resource_metadata="…", error="invalid_request", error_description="…"
//	401 Bearer resource_metadata="…"                      (no credential)
//	401 Bearer resource_metadata="…", error="invalid_token", error_description="…"
//	403 Bearer resource_metadata="…", error="insufficient_scope", scope="…"
//	503 with Retry-After, no challenge
//
// The description comes from a fixed table; the body is a small JSON object
// with the same error and description. Challenge writes nothing for a nil err.
func Challenge(w http.ResponseWriter, metadataURL string, err error) {
	if err == nil {
		return
	}
	status := Status(err)
	var (
		code, desc, scope string
		ise               *InsufficientScopeError
		ite               *InvalidTokenError
	)
	switch {
	case errors.As(err, &ise):
		code, scope = "insufficient_scope", scopeList(ise.Required)
		desc = "The access token lacks a scope this operation requires."
	case status == http.StatusBadRequest:
		code, desc = "invalid_request", "Send the access token in a single Authorization: Bearer header."
	case errors.As(err, &ite):
		code, desc = "invalid_token", ite.Reason.Description()
	case errors.Is(err, ErrInvalidToken):
		code, desc = "invalid_token", "The access token is invalid."
	case status == http.StatusUnauthorized:
		desc = "An access token is required."
	case status == http.StatusServiceUnavailable:
		code, desc = "temporarily_unavailable", "Credentials cannot be checked right now; retry shortly."
	default:
		code, desc = "server_error", "The credentials could not be checked."
	}
	h := w.Header()
	switch status {
	case http.StatusServiceUnavailable:
		h.Set("Retry-After", "5")
	case http.StatusInternalServerError:
	default:
		var b strings.Builder
		b.WriteString("Bearer ")
		if metadataURL != "" {
			b.WriteString(`resource_metadata=`)
			b.WriteString(quote(metadataURL))
		}
		if code != "" {
			if metadataURL != "" {
				b.WriteString(", ")
			}
			b.WriteString(`error=`)
			b.WriteString(quote(code))
			if scope != "" {
				b.WriteString(`, scope=`)
				b.WriteString(quote(scope))
			} else {
				b.WriteString(`, error_description=`)
				b.WriteString(quote(desc))
			}
		}
		h.Set("WWW-Authenticate", strings.TrimSuffix(b.String(), " "))
	}
	body := struct {
		Error       string `json:"error,omitempty"`
		Description string `json:"error_description"`
		Scope       string `json:"scope,omitempty"`
	}{code, desc, scope}
	buf, _ := json.Marshal(body) // three strings: cannot fail
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(buf)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(buf, '\n'))
}

// quote renders s as an RFC 7230 quoted-string, dropping bytes a quoted-string
// cannot carry (control characters) rather than emitting a broken header.
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
