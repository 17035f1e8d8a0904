package rest

import "github.com/bastion-mcp/bastion/principal"

// RouteScope is a route's method, pattern and the scope its table row
// names, for the external tests.
type RouteScope struct {
	Method, Pattern string
	Scope           principal.Scope
}

func RouteScopes() []RouteScope {
	var out []RouteScope
	for _, rt := range routes() {
		out = append(out, RouteScope{rt.method, rt.pattern, rt.scope})
	}
	return out
}
