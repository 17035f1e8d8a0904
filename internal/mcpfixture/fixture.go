//lint:file-ignore SA1019 the conformance scenarios exercise deprecated sampling.

// Package mcpfixture is the MCP server the official conformance suite
// (@modelcontextprotocol/conformance) expects to find behind a URL: the tools,
// resources, resource templates and prompts its fixture scenarios call by name.
//
// It exists to measure bastion's remote edge, never to serve users: the
// production composition root must not wire it. A Fixture builds one fresh
// *mcp.Server per call to NewServer (the edge asks for one per session on the
// stateful wire and per request on the stateless wire); the servers share only
// the key that signs multi-round requestState and the registry used to
// announce list changes to live subscription streams.
package mcpfixture

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Fixture hands out conformance servers. The zero Fixture is not usable; call
// New.
type Fixture struct {
	key []byte // signs requestState; fixed at creation

	mu   sync.Mutex
	live map[*mcp.Server]time.Time // servers that may hold a subscription stream, by creation time
}

// New returns a Fixture with a fresh random requestState key.
func New() *Fixture {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails on supported platforms
	return &Fixture{key: key, live: make(map[*mcp.Server]time.Time)}
}

// liveWindow is how long a server stays in the list-change registry while it
// has no session: long enough to be connected, short enough not to pile up.
const liveWindow = time.Minute

// Generic returns a server with only generic capabilities: one harmless tool
// and nothing the fixture scenarios call by name. It measures which
// conformance scenarios pass on any server.
func Generic() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bastion-generic", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns its text argument"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoInput) (*mcp.CallToolResult, any, error) {
			return textResult(in.Text), nil, nil
		})
	return s
}

type echoInput struct {
	Text string `json:"text" jsonschema:"text to return"`
}

// NewServer returns a new conformance server.
func (f *Fixture) NewServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bastion-conformance-fixture", Version: "1.0.0"}, &mcp.ServerOptions{
		CompletionHandler: func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
		},
		// Subscriptions are tracked by the SDK; accepting them is all the
		// scenarios need.
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	f.addTools(s)
	f.addInputRequiredTools(s)
	addResources(s)
	f.addPrompts(s)
	f.register(s)
	return s
}

func (f *Fixture) register(s *mcp.Server) {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	for old, at := range f.live {
		if now.Sub(at) > liveWindow && !hasSessions(old) {
			delete(f.live, old)
		}
	}
	f.live[s] = now
}

// changed runs fn on every live server with a session, so a list change made
// by one request reaches subscription streams held by other requests' servers.
func (f *Fixture) changed(fn func(*mcp.Server)) {
	f.mu.Lock()
	servers := make([]*mcp.Server, 0, len(f.live))
	for s := range f.live {
		servers = append(servers, s)
	}
	f.mu.Unlock()
	for _, s := range servers {
		if hasSessions(s) {
			fn(s)
		}
	}
}

func hasSessions(s *mcp.Server) bool {
	for range s.Sessions() {
		return true
	}
	return false
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// Tiny media the content scenarios expect to decode: a 1x1 PNG and a silent WAV.
const (
	pngBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	wavBase64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
)

func mustBase64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic("mcpfixture: bad embedded media: " + err.Error()) // a literal above is broken
	}
	return b
}

// signState returns payload with an HMAC so a client cannot forge or alter the
// requestState of a multi-round call.
func (f *Fixture) signState(payload string) string {
	m := hmac.New(sha256.New, f.key)
	m.Write([]byte(payload))
	return payload + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// openState verifies a requestState minted by signState and returns its payload.
func (f *Fixture) openState(state string) (string, bool) {
	i := strings.LastIndexByte(state, '.')
	if i < 0 {
		return "", false
	}
	payload, sig := state[:i], state[i+1:]
	want := f.signState(payload)
	return payload, hmac.Equal([]byte(want[i+1:]), []byte(sig))
}

func errInvalidState() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid requestState"}
}

// accepted returns the content of an accepted elicitation response, or nil.
func accepted(r mcp.InputResponseMap, key string) map[string]any {
	e, ok := r[key].(*mcp.ElicitResult)
	if !ok || e == nil || e.Action != "accept" {
		return nil
	}
	return e.Content
}

// sampled returns the first text of a sampling response.
func sampled(r mcp.InputResponseMap, key string) (string, bool) {
	res, ok := r[key].(*mcp.CreateMessageWithToolsResult)
	if !ok || res == nil {
		return "", false
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return t.Text, true
		}
	}
	return "(non-text response)", true
}

func objectSchema(props map[string]string, required ...string) json.RawMessage {
	p := make(map[string]any, len(props))
	for k, typ := range props {
		p[k] = map[string]any{"type": typ}
	}
	s := map[string]any{"type": "object", "properties": p}
	if len(required) > 0 {
		s["required"] = required
	}
	b, _ := json.Marshal(s) // maps of strings always marshal
	return b
}

func elicitName(msg string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: msg, RequestedSchema: objectSchema(map[string]string{"name": "string"}, "name")}
}

func elicitConfirm() *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: "Please confirm", RequestedSchema: objectSchema(map[string]string{"ok": "boolean"}, "ok")}
}

var errIntentional = errors.New("this tool intentionally returns an error for testing")

func formatElicit(r *mcp.ElicitResult) string {
	return fmt.Sprintf("Elicitation result: action=%s, content=%v", r.Action, r.Content)
}
