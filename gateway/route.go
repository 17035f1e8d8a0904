package gateway

import (
	"context"
	"strings"
	"unicode"
)

// Separator joins a server's namespace and a tool's name in the name the
// client sees: "github__create_issue".
const Separator = "__"

// QualifiedName returns the client-facing name of tool on a server whose
// namespace is ns.
func QualifiedName(ns, tool string) string { return ns + Separator + tool }

// A Router resolves the name a client called to the upstream server and the
// tool's name there. The gateway loop owns the live table (it changes on
// connect and list_changed); Routes is a fixed one.
type Router interface {
	Route(name string) (server, tool string, ok bool)
}

// Route is one entry of a Routes table.
type Route struct{ Server, Tool string }

// Routes is an immutable routing table from client-facing name to upstream.
// Build a new one to change it; a nil Routes routes nothing.
type Routes map[string]Route

// Route implements Router.
func (r Routes) Route(name string) (string, string, bool) {
	rt, ok := r[name]
	return rt.Server, rt.Tool, ok
}

// RoutingGate is the first gate: a call to a name no governed server exposes
// is refused before anything else looks at it. It fills a.Server and a.Tool.
type RoutingGate struct {
	Router Router
}

// Check implements Gate.
func (g RoutingGate) Check(_ context.Context, a *CallArgs) (Decision, error) {
	if g.Router != nil {
		if s, t, ok := g.Router.Route(a.Name); ok {
			a.Server, a.Tool = s, t
			return Allow(GateRouting, ""), nil
		}
	}
	return Deny(GateRouting, "unknown-tool", "no governed server exposes tool "+quote(a.Name)), nil
}

// quote renders a client-supplied name for a Reason: quoted, cut to 128
// bytes and with control characters escaped, so a crafted name can neither
// flood the text nor break the line it sits in.
func quote(s string) string {
	const max = 128
	cut := false
	if len(s) > max {
		s, cut = strings.ToValidUTF8(s[:max], ""), true
	}
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch {
		case r == '\'' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case unicode.In(r, unicode.Cc, unicode.Cf): // controls, bidi and zero-width characters
			b.WriteString("?")
		default:
			b.WriteRune(r)
		}
	}
	if cut {
		b.WriteString("…")
	}
	b.WriteByte('\'')
	return b.String()
}

// Quote renders a client-supplied name for a Reason (see quote); gates in
// the subpackages use it so every denial quotes names the same way.
func Quote(s string) string { return quote(s) }
