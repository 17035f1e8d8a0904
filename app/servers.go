package app

import (
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/principal"
)

// maxCachedServers bounds principalServers. Past it the cache starts over:
// a server costs a few hundred kilobytes, and a principal whose server was
// dropped only pays one rebuild.
const maxCachedServers = 1024

// principalServers hands out one design-review server per principal and
// keeps it for that principal's next clients. Building a server is most of
// the cost of a request on the stateless wire, where every request is a
// client of its own: the SDK re-reads every tool's input schema on AddTool.
// A server is bound to its principal (every call is made as that principal,
// whatever the request's context says), so it is never handed to another
// principal, nor to the same identity with other scopes or roles.
type principalServers struct {
	build func(principal.Principal) *mcp.Server

	mu sync.Mutex
	m  map[identity]boundServer
}

type identity struct{ tenant, id string }

type boundServer struct {
	p   principal.Principal
	srv *mcp.Server
}

func newPrincipalServers(build func(principal.Principal) *mcp.Server) *principalServers {
	return &principalServers{build: build, m: map[identity]boundServer{}}
}

// For returns p's server, building it on first use.
func (c *principalServers) For(p principal.Principal) *mcp.Server {
	k := identity{p.Tenant(), p.ID()}
	c.mu.Lock()
	b, ok := c.m[k]
	c.mu.Unlock()
	if ok && b.p.Equal(p) {
		return b.srv
	}
	// Built unlocked, so one principal's first request does not hold up
	// everyone else's; two racing first requests build twice and one wins.
	srv := c.build(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCachedServers {
		clear(c.m)
	}
	c.m[k] = boundServer{p, srv}
	return srv
}
