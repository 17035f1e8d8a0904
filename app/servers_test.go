package app

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/principal"
)

// TestPrincipalServers checks that a principal gets its own server again,
// and that another identity, or the same identity with other scopes or
// roles, never gets it.
func TestPrincipalServers(t *testing.T) {
	built := map[*mcp.Server]principal.Principal{}
	c := newPrincipalServers(func(p principal.Principal) *mcp.Server {
		srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		built[srv] = p
		return srv
	})
	must := func(p principal.Principal, err error) principal.Principal {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	alice := must(principal.New("t1", "alice", principal.AllScopes()...))
	aliceRead := must(principal.New("t1", "alice", principal.AllScopes()[0]))
	aliceAdmin := must(alice.WithRoles("admin"))
	bob := must(principal.New("t1", "bob", principal.AllScopes()...))
	otherTenant := must(principal.New("t2", "alice", principal.AllScopes()...))

	first := c.For(alice)
	if again := c.For(alice); again != first {
		t.Error("alice's second request got a new server, want her first one")
	}
	for name, p := range map[string]principal.Principal{
		"fewer scopes": aliceRead, "a role": aliceAdmin, "another id": bob, "another tenant": otherTenant,
	} {
		srv := c.For(p)
		if srv == first {
			t.Errorf("%s: got alice's server", name)
		}
		if !built[srv].Equal(p) {
			t.Errorf("%s: got a server built for %v", name, built[srv])
		}
	}
	// aliceRead and aliceAdmin replaced her entry: she gets a rebuild,
	// never a server bound to other rights.
	if got := c.For(alice); !built[got].Equal(alice) {
		t.Errorf("alice got a server built for %v", built[got])
	}
}
