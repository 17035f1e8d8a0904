package edge

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// Wire is one of the two MCP HTTP wires.
type Wire int

const (
	// WireStateful is the 2025-11-25 (and earlier) wire: initialize, then
	// requests carrying Mcp-Session-Id.
	WireStateful Wire = iota + 1
	// WireStateless is the 2026-07-28 wire: every request stands alone and
	// carries its protocol version in MCP-Protocol-Version and _meta.
	WireStateless
)

func (w Wire) String() string {
	switch w {
	case WireStateful:
		return "stateful"
	case WireStateless:
		return "stateless"
	}
	return "invalid"
}

const (
	protocolVersionHeader = "Mcp-Protocol-Version"
	// firstStatelessVersion is the first protocol version with no session.
	// Versions are dates, so string order is time order.
	firstStatelessVersion = "2026-07-28"
	metaProtocolVersion   = "io.modelcontextprotocol/protocolVersion"
)

// methods that exist only on the stateless wire.
var statelessMethods = map[string]bool{"server/discover": true, "subscriptions/listen": true}

// Route picks the wire for a request from its method, headers and (for POST)
// body, which it only reads. A session id always means the stateful wire; a
// protocol version header of 2026-07-28 or later, a per-request _meta
// protocol version, or a stateless-only method means the stateless wire;
// anything else (initialize included) goes to the stateful wire, whose SDK
// handler answers what it does not understand.
func Route(method string, h http.Header, body []byte) Wire {
	if h.Get(sessionHeader) != "" {
		return WireStateful
	}
	if v := h.Get(protocolVersionHeader); v != "" && v >= firstStatelessVersion {
		return WireStateless
	}
	if method != http.MethodPost || !bodyIsStateless(body) {
		return WireStateful
	}
	return WireStateless
}

// peekMessage is the part of a JSON-RPC message routing looks at.
type peekMessage struct {
	Method string `json:"method"`
	Params struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
}

func (m *peekMessage) stateless() bool {
	if statelessMethods[m.Method] {
		return true
	}
	_, ok := m.Params.Meta[metaProtocolVersion]
	return ok
}

// bodyIsStateless reports whether any message in body (one message or a
// batch) speaks the stateless protocol. Malformed bodies are not stateless.
func bodyIsStateless(body []byte) bool {
	body = bytes.TrimLeft(body, " \t\r\n")
	if len(body) == 0 {
		return false
	}
	if body[0] == '[' {
		var batch []peekMessage
		if json.Unmarshal(body, &batch) != nil {
			return false
		}
		for i := range batch {
			if batch[i].stateless() {
				return true
			}
		}
		return false
	}
	var m peekMessage
	return json.Unmarshal(body, &m) == nil && m.stateless()
}

// Methods returns the methods of the JSON-RPC messages in body (one message
// or a batch), in order; responses carry none. Malformed bodies have none.
func Methods(body []byte) []string {
	body = bytes.TrimLeft(body, " \t\r\n")
	if len(body) == 0 {
		return nil
	}
	var batch []peekMessage
	if body[0] == '[' {
		if json.Unmarshal(body, &batch) != nil {
			return nil
		}
	} else {
		var m peekMessage
		if json.Unmarshal(body, &m) != nil {
			return nil
		}
		batch = []peekMessage{m}
	}
	var methods []string
	for i := range batch {
		if batch[i].Method != "" {
			methods = append(methods, batch[i].Method)
		}
	}
	return methods
}
