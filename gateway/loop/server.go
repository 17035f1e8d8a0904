//lint:file-ignore SA1019 sampling, elicitation, roots and logging are part of MCP 2025-11-25, the revision bastion targets and must relay; deprecated only from 2026-07-28.

package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/principal"
)

// client is one downstream client's server and what it currently shows.
type client struct {
	l       *Loop
	p       principal.Principal
	srv     *mcp.Server
	created time.Time

	mu        sync.Mutex // guards the fields below and the srv registries' contents
	gen       uint64
	tools     map[string]*toolEntry
	prompts   map[string]*promptEntry
	resources map[string]*resourceEntry
	templates map[string]*templateEntry
}

// NewServer returns a fresh MCP server for one client acting as p. It
// lists only what p may see, answers tools/call through the gates, and is
// told (and tells its client) when the catalog changes.
func (l *Loop) NewServer(_ context.Context, p principal.Principal) *mcp.Server {
	c := &client{
		l:         l,
		p:         p,
		created:   time.Now(),
		tools:     map[string]*toolEntry{},
		prompts:   map[string]*promptEntry{},
		resources: map[string]*resourceEntry{},
		templates: map[string]*templateEntry{},
	}
	c.srv = mcp.NewServer(&mcp.Implementation{Name: "bastion", Title: "bastion gateway", Version: l.version}, &mcp.ServerOptions{
		Logger:   l.log,
		PageSize: l.pageSize,
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Logging:     &mcp.LoggingCapabilities{},
			Completions: &mcp.CompletionCapabilities{},
		},
		CompletionHandler:  c.complete,
		SubscribeHandler:   c.subscribe,
		UnsubscribeHandler: c.unsubscribe,
	})
	c.srv.AddReceivingMiddleware(c.middleware)
	c.sync(l.cat.Load())
	l.register(c)
	return c.srv
}

// register adds c to the clients told about catalog changes, first
// dropping clients whose servers have had no session for a while (a
// stateless request's server, or a client that left).
func (l *Loop) register(c *client) {
	l.clientsMu.Lock()
	defer l.clientsMu.Unlock()
	// A sweep walks every client, so it runs at most once a second: a
	// stateless wire builds a server per request.
	if len(l.clients) >= 64 && time.Since(l.swept) > time.Second {
		l.sweepLocked()
	}
	l.clients[c] = struct{}{}
}

// clientIdle is how long a server may exist without a session before it
// stops receiving catalog updates.
const clientIdle = 10 * time.Second

func (l *Loop) sweepLocked() {
	l.swept = time.Now()
	for c := range l.clients {
		if time.Since(c.created) < clientIdle {
			continue
		}
		live := false
		for range c.srv.Sessions() {
			live = true
			break
		}
		if !live {
			delete(l.clients, c)
		}
	}
}

func (l *Loop) liveClients() []*client {
	l.clientsMu.Lock()
	defer l.clientsMu.Unlock()
	l.sweepLocked()
	out := make([]*client, 0, len(l.clients))
	for c := range l.clients {
		out = append(out, c)
	}
	return out
}

// middleware answers a tools/call for a name this client does not list
// (unknown, hidden by policy, drifted or flagged) through the governed path,
// so it gets a denial result rather than the SDK's protocol error; listed
// names reach their registered handler, which is the same governed path.
// Before any list it brings the client's registries up to date, and it
// passes the client's logging level on to the upstreams.
func (c *client) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			r, ok := req.(*mcp.CallToolRequest)
			if ok && r.Params != nil && !c.lists(r.Params.Name) {
				res, err := c.l.callTool(ctx, c, r)
				return typed(r.Session, res), err
			}
		case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
			c.sync(c.l.cat.Load())
		case "logging/setLevel":
			c.l.wantLogs(ctx)
		}
		return next(ctx, method, req)
	}
}

// lists reports whether the client's server has name registered.
func (c *client) lists(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.tools[name]
	return ok
}

// sync makes the client's registries show exactly what cat holds and p may
// see. The SDK announces list_changed for whatever changed.
func (c *client) sync(cat *catalog) {
	l := c.l
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == cat.gen {
		return
	}
	c.gen = cat.gen

	var drop []string
	want := map[string]*toolEntry{}
	for q, e := range cat.tools {
		if l.toolVisible(c.p, e) {
			want[q] = e
		}
	}
	for q, e := range c.tools {
		if w, ok := want[q]; !ok || w != e {
			drop = append(drop, q)
			delete(c.tools, q)
		}
	}
	if len(drop) > 0 {
		c.srv.RemoveTools(drop...)
	}
	for q, e := range want {
		if _, ok := c.tools[q]; ok {
			continue
		}
		if addTool(c.srv, e.def, c.callHandler(), l.log) {
			c.tools[q] = e
		}
	}

	drop = drop[:0]
	for q, e := range c.prompts {
		if w, ok := cat.prompts[q]; !ok || w != e || !l.nameVisible(c.p, e.server, e.prompt) {
			drop = append(drop, q)
			delete(c.prompts, q)
		}
	}
	if len(drop) > 0 {
		c.srv.RemovePrompts(drop...)
	}
	for q, e := range cat.prompts {
		if _, ok := c.prompts[q]; ok || !l.nameVisible(c.p, e.server, e.prompt) {
			continue
		}
		c.srv.AddPrompt(e.def, c.getPrompt(e))
		c.prompts[q] = e
	}

	drop = drop[:0]
	for u, e := range c.resources {
		if w, ok := cat.resources[u]; !ok || w != e || !l.nameVisible(c.p, e.server, e.def.Name) {
			drop = append(drop, u)
			delete(c.resources, u)
		}
	}
	if len(drop) > 0 {
		c.srv.RemoveResources(drop...)
	}
	for u, e := range cat.resources {
		if _, ok := c.resources[u]; ok || !l.nameVisible(c.p, e.server, e.def.Name) {
			continue
		}
		c.srv.AddResource(e.def, c.readResource(e.server, e.def.Name))
		c.resources[u] = e
	}

	drop = drop[:0]
	for u, e := range c.templates {
		if w, ok := cat.templates[u]; !ok || w != e || !l.nameVisible(c.p, e.server, e.def.Name) {
			drop = append(drop, u)
			delete(c.templates, u)
		}
	}
	if len(drop) > 0 {
		c.srv.RemoveResourceTemplates(drop...)
	}
	for u, e := range cat.templates {
		if _, ok := c.templates[u]; ok || !l.nameVisible(c.p, e.server, e.def.Name) {
			continue
		}
		if addTemplate(c.srv, e.def, c.readResource(e.server, e.def.Name), l.log) {
			c.templates[u] = e
		}
	}
}

// toolVisible reports whether p's tools/list shows e: the policy would let
// p call it, its pin matches and its description was not flagged.
func (l *Loop) toolVisible(p principal.Principal, e *toolEntry) bool {
	return l.policy.Visible(p, e.server, e.tool) && l.pins.Visible(e.server, e.tool) && l.inspect.Visible(e.server, e.tool)
}

// nameVisible is the policy's view of a prompt or resource name.
func (l *Loop) nameVisible(p principal.Principal, server, name string) bool {
	return l.policy.Visible(p, server, name)
}

// callHandler is every listed tool's handler: the governed call.
func (c *client) callHandler() mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return c.l.callTool(ctx, c, req)
	}
}

// addTool lists t with handler h. The SDK panics on a tool without an
// object input schema; such a tool is not listed (and a call to it is
// denied by the middleware's path like any unlisted name).
func addTool(s *mcp.Server, t *mcp.Tool, h mcp.ToolHandler, log *slog.Logger) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			log.Warn("upstream tool not listable", "tool", t.Name, "err", fmt.Sprint(r))
			ok = false
		}
	}()
	s.AddTool(t, h)
	return true
}

func addTemplate(s *mcp.Server, t *mcp.ResourceTemplate, h mcp.ResourceHandler, log *slog.Logger) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			log.Warn("upstream resource template not listable", "template", t.URITemplate, "err", fmt.Sprint(r))
			ok = false
		}
	}()
	s.AddResourceTemplate(t, h)
	return true
}

// typed gives a result the gateway answers itself (not through a registered
// tool's handler, where the SDK does it) the resultType a 2026-07-28 client
// expects: "complete", or "input_required" when it asks for input. Older
// clients get none, as from the SDK. The field is the SDK's own, set the
// one way its API allows, by decoding.
func typed(ss *mcp.ServerSession, res *mcp.CallToolResult) *mcp.CallToolResult {
	if res == nil || ss == nil || !multiRoundTrip(ss) {
		return res
	}
	raw, err := json.Marshal(res)
	if err != nil || bytes.Contains(raw, []byte(`"resultType":`)) || len(raw) < 2 {
		return res
	}
	kind := `{"resultType":"complete",`
	if res.InputRequests != nil {
		kind = `{"resultType":"input_required",`
	}
	if string(raw) == "{}" {
		kind = kind[:len(kind)-1]
	}
	out := new(mcp.CallToolResult)
	if err := json.Unmarshal(append([]byte(kind), raw[1:]...), out); err != nil {
		return res
	}
	return out
}
