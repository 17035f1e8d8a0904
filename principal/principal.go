// Package principal defines who is calling: a tenant, an identity within it,
// the scopes its credential grants and the roles it states (for the
// gateway's role-based policy; roles grant nothing in review.Service).
//
// Invariants: a Principal is immutable once built; the zero Principal is
// invalid and holds no scope, so code that forgets to authenticate fails
// closed. Principals travel in a context under an unexported key and are only
// ever put there by the authentication layer.
package principal

import (
	"context"
	"errors"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Scope is a permission a credential grants.
type Scope string

// The scopes bastion knows.
const (
	ReviewsRead   Scope = "reviews:read"
	ReviewsWrite  Scope = "reviews:write"
	ReviewsCancel Scope = "reviews:cancel"
	TargetsWrite  Scope = "targets:write"
)

// AllScopes lists every scope, for a local operator's principal.
func AllScopes() []Scope {
	return []Scope{ReviewsRead, ReviewsWrite, ReviewsCancel, TargetsWrite}
}

// ParseScope reports the Scope named s, or false if bastion has no such scope.
func ParseScope(s string) (Scope, bool) {
	sc := Scope(s)
	return sc, slices.Contains(AllScopes(), sc)
}

// Principal is an authenticated caller. Compare principals with Same, not ==.
type Principal struct {
	tenant string
	id     string
	scopes []Scope  // sorted, deduplicated
	roles  []string // sorted, deduplicated; never shared with a caller
}

// Bounds on roles: a credential naming more, or longer, roles is refused
// rather than truncated, so a policy never sees half of what was stated.
const (
	MaxRoles      = 64
	MaxRoleLength = 128
)

// New builds a Principal. Tenant and id must be non-empty and free of control
// characters; unknown scopes are an error.
func New(tenant, id string, scopes ...Scope) (Principal, error) {
	if !validName(tenant) {
		return Principal{}, errors.New("principal: tenant must be 1-128 printable characters")
	}
	if !validName(id) {
		return Principal{}, errors.New("principal: id must be 1-128 printable characters")
	}
	sc := make([]Scope, 0, len(scopes))
	for _, s := range scopes {
		if !slices.Contains(AllScopes(), s) {
			return Principal{}, errors.New("principal: unknown scope " + string(s))
		}
		sc = append(sc, s)
	}
	slices.Sort(sc)
	return Principal{tenant: tenant, id: id, scopes: slices.Compact(sc)}, nil
}

// Local is the principal of a local operator: tenant "local", every scope.
func Local() Principal {
	p, _ := New("local", "local-operator", AllScopes()...)
	return p
}

func validName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// IsValid reports whether p was built by New (the zero Principal is not).
func (p Principal) IsValid() bool { return p.tenant != "" && p.id != "" }

// Tenant returns the tenant p acts in.
func (p Principal) Tenant() string { return p.tenant }

// ID returns p's identity within its tenant.
func (p Principal) ID() string { return p.id }

// Scopes returns a copy of p's scopes, sorted.
func (p Principal) Scopes() []Scope { return slices.Clone(p.scopes) }

// Roles returns a copy of p's roles, sorted; nil when it has none.
func (p Principal) Roles() []string { return slices.Clone(p.roles) }

// HasRole reports whether p is valid and holds role.
func (p Principal) HasRole(role string) bool {
	return p.IsValid() && slices.Contains(p.roles, role)
}

// WithRoles returns a copy of p holding exactly roles (sorted and
// deduplicated; none clears them). A role is 1 to MaxRoleLength printable
// characters without spaces; more than MaxRoles distinct roles, an invalid
// role or an invalid p is an error.
func (p Principal) WithRoles(roles ...string) (Principal, error) {
	if !p.IsValid() {
		return Principal{}, errors.New("principal: roles need a valid principal")
	}
	var rs []string
	if len(roles) > 0 {
		rs = slices.Clone(roles)
		slices.Sort(rs)
		rs = slices.Compact(rs)
	}
	if len(rs) > MaxRoles {
		return Principal{}, errors.New("principal: too many roles")
	}
	for _, r := range rs {
		if !validRole(r) {
			return Principal{}, errors.New("principal: a role must be 1-128 printable characters without spaces")
		}
	}
	q := p
	q.roles = rs
	return q, nil
}

func validRole(s string) bool {
	if s == "" || len(s) > MaxRoleLength || !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) })
}

// Has reports whether p is valid and holds scope s.
func (p Principal) Has(s Scope) bool {
	return p.IsValid() && slices.Contains(p.scopes, s)
}

// Same reports whether p and q are the same identity in the same tenant.
func (p Principal) Same(q Principal) bool {
	return p.IsValid() && p.tenant == q.tenant && p.id == q.id
}

// Equal reports whether p and q are the same identity with the same scopes
// and roles: whether one may stand in for the other in every decision.
func (p Principal) Equal(q Principal) bool {
	return p.Same(q) && slices.Equal(p.scopes, q.scopes) && slices.Equal(p.roles, q.roles)
}

// String returns "tenant/id" for logs.
func (p Principal) String() string { return p.tenant + "/" + p.id }

type ctxKey struct{}

// NewContext returns a context carrying p.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the principal in ctx, if a valid one is there.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(Principal)
	return p, ok && p.IsValid()
}
