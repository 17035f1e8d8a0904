package auth

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/bastion-mcp/bastion/principal"
)

// AccessTokenType is the JWS "typ" of an RFC 9068 access token; set it as
// JWTConfig.RequireTyp to refuse ID tokens and other JWTs an issuer signs
// with the same keys.
const AccessTokenType = "at+jwt"

// SessionMethod is the MCP method whose scopes MethodScopes requires of
// every request: see MethodScopes.
const SessionMethod = "initialize"

// MethodScopes is a per-method scope policy for the MCP path: a JSON-RPC
// request whose method is a key needs every scope listed for it. The
// SessionMethod ("initialize") entry is the scope of the MCP path itself:
// a session begins with initialize, and the 2026-07-28 wire has none, so
// its scopes are required of every MCP request on both wires, whatever the
// method (a client can neither skip it nor continue a session with a
// weaker token). The nil policy requires nothing.
type MethodScopes map[string][]principal.Scope

// ParseMethodScopes reads a policy from specs of the form
// METHOD=SCOPE[,SCOPE…] (scopes separated by commas or spaces), one method
// per spec; a method named twice gets the union. Only scopes bastion knows
// are accepted: a policy naming another could never be met.
func ParseMethodScopes(specs []string) (MethodScopes, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	m := MethodScopes{}
	for _, spec := range specs {
		method, list, ok := strings.Cut(spec, "=")
		method = strings.TrimSpace(method)
		if !ok || method == "" || strings.ContainsAny(method, " \t") {
			return nil, fmt.Errorf("auth: method scope %q: want METHOD=SCOPE[,SCOPE...]", spec)
		}
		names := strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' })
		if len(names) == 0 {
			return nil, fmt.Errorf("auth: method scope %q names no scope", spec)
		}
		for _, n := range names {
			s, known := principal.ParseScope(n)
			if !known {
				return nil, fmt.Errorf("auth: method scope %q: unknown scope %q (bastion's scopes are %s)", spec, n, scopeList(principal.AllScopes()))
			}
			if !slices.Contains(m[method], s) {
				m[method] = append(m[method], s)
			}
		}
	}
	return m, nil
}

// Required returns the scopes a request carrying methods needs (the
// SessionMethod's included, see MethodScopes), sorted and without
// duplicates; nil when it needs none.
func (m MethodScopes) Required(methods []string) []principal.Scope {
	if len(m) == 0 {
		return nil
	}
	set := map[principal.Scope]bool{}
	for _, s := range m[SessionMethod] {
		set[s] = true
	}
	for _, meth := range methods {
		for _, s := range m[meth] {
			set[s] = true
		}
	}
	if len(set) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(set))
}

// String renders m as its specs, sorted by method, for logs.
func (m MethodScopes) String() string {
	parts := make([]string, 0, len(m))
	for _, meth := range slices.Sorted(maps.Keys(m)) {
		names := make([]string, len(m[meth]))
		for i, s := range m[meth] {
			names[i] = string(s)
		}
		parts = append(parts, meth+"="+strings.Join(names, ","))
	}
	return strings.Join(parts, " ")
}
