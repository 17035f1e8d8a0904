//lint:file-ignore SA1019 the per-request log level is part of MCP 2026-07-28, deprecated with logging but still relayed.

package loop

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/principal"
)

// A client on MCP 2026-07-28 and an upstream that speaks it too talk
// multi-round-trip requests end to end: the upstream's input-required
// result reaches the client with its own question keys, the client's next
// round carries its answers back, and the upstream's request state makes
// the trip inside one of the gateway's. Every round is a request of its
// own and passes every gate and the ledger again.
//
// The gateway seals the upstream's request state before the client sees it:
// a MAC over the principal, the method, the name and the state. A round
// whose seal does not verify never reaches the upstream, so one principal
// cannot replay another's state (the upstream session is shared by all of
// them) nor carry a state from one tool to another. The key lives in memory,
// so states do not survive a restart of the gateway; the upstream's own
// rounds do not either.

const sealPrefix = "bastion-rt1."

// roundKey is the MAC key of request-state seals.
type roundKey [32]byte

func newRoundKey() (roundKey, error) {
	var k roundKey
	if _, err := rand.Read(k[:]); err != nil {
		return k, fmt.Errorf("loop: request-state key: %w", err)
	}
	return k, nil
}

func (k *roundKey) mac(p principal.Principal, method, name, inner string) []byte {
	m := hmac.New(sha256.New, k[:])
	for _, s := range []string{p.Tenant(), p.ID(), method, name, inner} {
		// Length-prefixed fields: no two field lists share an encoding.
		fmt.Fprintf(m, "%d:%s", len(s), s)
	}
	return m.Sum(nil)[:16]
}

// seal wraps the upstream's request state (possibly empty) for p's client.
func (k *roundKey) seal(p principal.Principal, method, name, inner string) string {
	return sealPrefix + base64.RawURLEncoding.EncodeToString(k.mac(p, method, name, inner)) + "." + inner
}

// open returns the upstream's request state inside state, which must have
// been sealed for p, method and name.
func (k *roundKey) open(p principal.Principal, method, name, state string) (string, bool) {
	rest, ok := strings.CutPrefix(state, sealPrefix)
	if !ok {
		return "", false
	}
	tag, inner, ok := strings.Cut(rest, ".")
	if !ok {
		return "", false
	}
	// Strict: a seal has one encoding, so a state has one spelling.
	got, err := base64.RawURLEncoding.Strict().DecodeString(tag)
	if err != nil || !hmac.Equal(got, k.mac(p, method, name, inner)) {
		return "", false
	}
	return inner, true
}

// errBadState answers a round whose request state the gateway did not
// issue to this principal for this name, as an upstream answers a state it
// cannot verify.
func errBadState() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid requestState"}
}

// clientMeta returns the _meta to send upstream on a multi-round-trip
// session: hopMeta(m) plus the client's own per-request capabilities and
// log level. The upstream judges what it may ask by the capabilities of
// the client that will answer, not by the gateway's; a client that stated
// none is forwarded as declaring none.
func clientMeta(m mcp.Meta) mcp.Meta {
	out := hopMeta(m)
	if out == nil {
		out = mcp.Meta{}
	}
	caps, ok := m[mcp.MetaKeyClientCapabilities]
	if !ok || caps == nil {
		caps = map[string]any{}
	}
	out[mcp.MetaKeyClientCapabilities] = caps
	if lvl, ok := m[mcp.MetaKeyLogLevel]; ok {
		out[mcp.MetaKeyLogLevel] = lvl
	}
	return out
}
