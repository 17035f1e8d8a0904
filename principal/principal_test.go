package principal

import (
	"slices"
	"strings"
	"testing"
)

func TestWithRoles(t *testing.T) {
	t.Parallel()
	p, err := New("acme", "alice", ReviewsRead)
	if err != nil {
		t.Fatal(err)
	}
	q, err := p.WithRoles("reviewer", "admin", "reviewer")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := q.Roles(), []string{"admin", "reviewer"}; !slices.Equal(got, want) {
		t.Errorf("Roles() = %v, want %v (sorted, deduplicated)", got, want)
	}
	if p.Roles() != nil {
		t.Errorf("WithRoles changed the original: %v", p.Roles())
	}
	if !q.HasRole("admin") || q.HasRole("root") || p.HasRole("admin") {
		t.Error("HasRole disagrees with the roles")
	}
	if !q.Same(p) || !q.Has(ReviewsRead) {
		t.Error("WithRoles lost the identity or the scopes")
	}

	// Cloned on read: a caller cannot edit a principal's roles.
	r := q.Roles()
	r[0] = "root"
	if q.HasRole("root") || !q.HasRole("admin") {
		t.Error("editing the slice Roles returned changed the principal")
	}
	// Cloned on write too.
	in := []string{"b", "a"}
	q2, err := p.WithRoles(in...)
	if err != nil {
		t.Fatal(err)
	}
	in[0] = "root"
	if q2.HasRole("root") || !slices.Equal(in, []string{"root", "a"}) {
		t.Errorf("WithRoles kept or reordered the caller's slice: %v, %v", q2.Roles(), in)
	}

	cleared, err := q.WithRoles()
	if err != nil || cleared.Roles() != nil {
		t.Errorf("WithRoles() = %v, %v; want no roles", cleared.Roles(), err)
	}

	many := make([]string, MaxRoles+1)
	for i := range many {
		many[i] = "r" + strings.Repeat("x", i)
	}
	if _, err := p.WithRoles(many[:MaxRoles]...); err != nil {
		t.Errorf("%d roles refused: %v", MaxRoles, err)
	}
	for name, roles := range map[string][]string{
		"too many":    many,
		"empty":       {""},
		"space":       {"two words"},
		"tab":         {"a\tb"},
		"control":     {"a\x00"},
		"nbsp":        {"a\u00a0b"},
		"bad utf8":    {"a\xffb"},
		"too long":    {strings.Repeat("r", MaxRoleLength+1)},
		"one of many": {"ok", "not ok"},
	} {
		if _, err := p.WithRoles(roles...); err == nil {
			t.Errorf("%s: WithRoles(%q) accepted", name, roles)
		}
	}
	if _, err := p.WithRoles(strings.Repeat("r", MaxRoleLength)); err != nil {
		t.Errorf("a role of %d bytes refused: %v", MaxRoleLength, err)
	}
	if _, err := (Principal{}).WithRoles("admin"); err == nil {
		t.Error("the zero Principal got roles")
	}
}
