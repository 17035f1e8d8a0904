package auth

import (
	"slices"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/principal"
)

func TestParseMethodScopes(t *testing.T) {
	t.Parallel()
	m, err := ParseMethodScopes([]string{"initialize=reviews:read", "tools/call=reviews:write, reviews:cancel", "tools/call=reviews:write"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.String(), "initialize=reviews:read tools/call=reviews:write,reviews:cancel"; got != want {
		t.Errorf("policy = %q, want %q", got, want)
	}
	for _, tt := range []struct {
		methods []string
		want    []principal.Scope
	}{
		// initialize's scopes are required of every request.
		{nil, []principal.Scope{principal.ReviewsRead}},
		{[]string{"tools/list"}, []principal.Scope{principal.ReviewsRead}},
		{[]string{"ping", "tools/call"}, []principal.Scope{principal.ReviewsCancel, principal.ReviewsRead, principal.ReviewsWrite}},
	} {
		if got := m.Required(tt.methods); !slices.Equal(got, tt.want) {
			t.Errorf("Required(%v) = %v, want %v", tt.methods, got, tt.want)
		}
	}
	if got := MethodScopes(nil).Required([]string{"initialize"}); got != nil {
		t.Errorf("the nil policy requires %v", got)
	}
	if m, err := ParseMethodScopes(nil); m != nil || err != nil {
		t.Errorf("no specs = %v, %v; want a nil policy", m, err)
	}
	for _, bad := range []string{"initialize", "=reviews:read", "initialize=", "initialize=admin", "tools call=reviews:read"} {
		if _, err := ParseMethodScopes([]string{bad}); err == nil {
			t.Errorf("ParseMethodScopes(%q) accepted it", bad)
		} else if bad == "initialize=admin" && !strings.Contains(err.Error(), "reviews:read") {
			t.Errorf("unknown scope error %q does not list the known scopes", err)
		}
	}
}
