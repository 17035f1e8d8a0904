// Package pin is the rug-pull gate: it hashes each upstream tool's
// definition canonically, compares it with the hash an operator approved,
// and hides and denies a tool whose definition drifted or that appeared after
// the server's tools were approved.
//
// The hash is SHA-256 over the canonical JSON (package canon) of an object
// with exactly these members, each null when the tool lacks it:
// annotations, description, icons, inputSchema, name, outputSchema, title.
// icons is covered because what a user sees is part of what was approved;
// _meta is not, because it is protocol and vendor metadata that may change
// without the tool changing.
//
// Invariants: in strict mode a tool is callable and listed only if its
// current hash equals its approved hash; a server's first observation pins
// its tools only when TOFU is on, and after that first approval a new tool
// is held until `bastion pin approve`; Check and Visible read an immutable
// snapshot and take no lock; a tool never observed is denied.
package pin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/bastion-mcp/bastion/gateway"
	"github.com/bastion-mcp/bastion/gateway/canon"
)

// Hash is the SHA-256 of a tool's canonical definition. The zero Hash is
// not a valid hash.
type Hash [sha256.Size]byte

// String returns the hash in lower-case hex.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// IsValid reports whether h is not the zero Hash.
func (h Hash) IsValid() bool { return h != Hash{} }

// ParseHash parses 64 hex digits.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*len(h) {
		return Hash{}, fmt.Errorf("pin: hash must be %d hex digits", 2*len(h))
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return Hash{}, fmt.Errorf("pin: hash is not hex")
	}
	return h, nil
}

// hashed lists the members of a tool definition the hash covers, sorted.
var hashed = [...]string{"annotations", "description", "icons", "inputSchema", "name", "outputSchema", "title"}

// Canonical returns the canonical form of a tool definition (a tools/list
// entry): the covered members, sorted, canonical, absent ones null.
func Canonical(tool json.RawMessage) ([]byte, error) {
	v, err := canon.Decode(tool)
	if err != nil {
		return nil, fmt.Errorf("pin: tool definition: %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("pin: tool definition is not a JSON object")
	}
	if name, _ := obj["name"].(string); name == "" {
		return nil, errors.New("pin: tool definition has no name")
	}
	sub := make(map[string]any, len(hashed))
	for _, k := range hashed {
		sub[k] = obj[k] // nil when absent
	}
	return canon.Append(nil, sub)
}

// Sum returns a tool definition's name and hash.
func Sum(tool json.RawMessage) (string, Hash, error) {
	c, err := Canonical(tool)
	if err != nil {
		return "", Hash{}, err
	}
	var named struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(tool, &named) // Canonical already parsed it
	return named.Name, sha256.Sum256(c), nil
}

// Store keeps approved hashes per server. Load returns nil when the server's
// tools were never approved and a non-nil (possibly empty) map once they
// were: the difference decides whether a new tool is trusted on first use
// or held. Save replaces the server's pins. Implementations must be safe for
// concurrent use.
type Store interface {
	Load(ctx context.Context, server string) (map[string]Hash, error)
	Save(ctx context.Context, server string, pins map[string]Hash) error
}

// MemStore is an in-memory Store, for tests and single-process use.
type MemStore struct {
	mu   sync.Mutex
	pins map[string]map[string]Hash
}

// Load implements Store.
func (m *MemStore) Load(_ context.Context, server string) (map[string]Hash, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pins[server]
	if !ok {
		return nil, nil
	}
	return maps.Clone(p), nil
}

// Save implements Store.
func (m *MemStore) Save(_ context.Context, server string, pins map[string]Hash) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pins == nil {
		m.pins = map[string]map[string]Hash{}
	}
	c := maps.Clone(pins)
	if c == nil {
		c = map[string]Hash{}
	}
	m.pins[server] = c
	return nil
}

// Mode is how the gate treats drift and new tools.
type Mode uint8

const (
	// Strict hides and denies drifted and unapproved tools.
	Strict Mode = iota
	// Warn lets them through with a warning for the ledger.
	Warn
)

// Options configure a Gate. The zero value is strict without TOFU.
type Options struct {
	Mode Mode
	// TOFU pins a server's tools the first time they are observed, if the
	// server was never approved. Without it every tool waits for Approve.
	TOFU bool
}

// The audit rules the gate uses.
const (
	RuleRugPull  = "rug-pull"
	RuleHeld     = "pin-held"
	RuleUnseen   = "pin-unseen"
	RuleUnhashed = "pin-invalid"
)

// The reasons the model reads.
const (
	ReasonDrift    = "tool definition changed since it was approved (rug-pull protection)"
	ReasonHeld     = "tool not yet approved"
	ReasonUnseen   = "tool definition has not been observed from its server"
	ReasonUnhashed = "tool definition is malformed and cannot be pinned"
)

type server struct {
	pinned   map[string]Hash // nil: never approved
	observed map[string]Hash // zero Hash: observed but malformed
}

// Gate is the pin gate. Observe and Approve change its state; Check and
// Visible read an immutable snapshot.
type Gate struct {
	store Store
	opts  Options

	mu    sync.Mutex                         // serializes writers: Observe, Approve
	state atomic.Pointer[map[string]*server] // replaced whole under mu, never mutated
}

// New returns a Gate over store.
func New(store Store, opts Options) *Gate {
	g := &Gate{store: store, opts: opts}
	empty := map[string]*server{}
	g.state.Store(&empty)
	return g
}

// Report is what an observation found for one server.
type Report struct {
	Matched []string // pinned and unchanged
	Added   []string // not pinned (held in strict mode once approved)
	Changed []string // pinned with a different hash: rug-pull
	Removed []string // pinned but no longer offered
	Invalid []string // could not be hashed
	Pinned  bool     // the server's tools have been approved (or TOFU-pinned) at least once
}

// Observe records the tool definitions a server offers now (at connect and
// on every notifications/tools/list_changed) and returns how they compare
// with the approved pins. A server never approved is pinned here if TOFU is on.
func (g *Gate) Observe(ctx context.Context, srv string, tools []json.RawMessage) (Report, error) {
	observed := make(map[string]Hash, len(tools))
	var invalid []string
	for _, t := range tools {
		name, h, err := Sum(t)
		if err != nil {
			var n struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(t, &n) == nil && n.Name != "" {
				observed[n.Name] = Hash{}
				invalid = append(invalid, n.Name)
			}
			continue
		}
		observed[name] = h
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	pinned, err := g.store.Load(ctx, srv)
	if err != nil {
		return Report{}, fmt.Errorf("pin: load pins of %s: %w", srv, err)
	}
	if pinned == nil && g.opts.TOFU {
		pinned = map[string]Hash{}
		for n, h := range observed {
			if h.IsValid() {
				pinned[n] = h
			}
		}
		if err := g.store.Save(ctx, srv, pinned); err != nil {
			return Report{}, fmt.Errorf("pin: save first pins of %s: %w", srv, err)
		}
	}
	g.publishLocked(srv, &server{pinned: pinned, observed: observed})
	r := diff(pinned, observed)
	r.Invalid = invalid
	return r, nil
}

func (g *Gate) publishLocked(srv string, s *server) {
	next := maps.Clone(*g.state.Load())
	next[srv] = s
	g.state.Store(&next)
}

func diff(pinned, observed map[string]Hash) Report {
	r := Report{Pinned: pinned != nil}
	for n, h := range observed {
		p, ok := pinned[n]
		switch {
		case !h.IsValid():
		case !ok:
			r.Added = append(r.Added, n)
		case p != h:
			r.Changed = append(r.Changed, n)
		default:
			r.Matched = append(r.Matched, n)
		}
	}
	for n := range pinned {
		if _, ok := observed[n]; !ok {
			r.Removed = append(r.Removed, n)
		}
	}
	for _, l := range []*[]string{&r.Matched, &r.Added, &r.Changed, &r.Removed} {
		slices.Sort(*l)
	}
	return r
}

// Approve pins the currently observed definitions of the named tools of srv,
// or, with no names, exactly the tools srv offers now (dropping pins of
// tools it no longer offers). It is what `bastion pin approve` calls.
func (g *Gate) Approve(ctx context.Context, srv string, tools ...string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := (*g.state.Load())[srv]
	if s == nil {
		return fmt.Errorf("pin: server %s has not been observed; connect it first", srv)
	}
	pinned, err := g.store.Load(ctx, srv)
	if err != nil {
		return fmt.Errorf("pin: load pins of %s: %w", srv, err)
	}
	next := map[string]Hash{}
	if len(tools) > 0 {
		maps.Copy(next, pinned)
	}
	names := tools
	if len(names) == 0 {
		names = slices.Sorted(maps.Keys(s.observed))
	}
	for _, n := range names {
		h, ok := s.observed[n]
		if !ok {
			return fmt.Errorf("pin: server %s does not offer tool %q", srv, n)
		}
		if !h.IsValid() {
			if len(tools) == 0 {
				continue
			}
			return fmt.Errorf("pin: tool %q of %s has a malformed definition", n, srv)
		}
		next[n] = h
	}
	if err := g.store.Save(ctx, srv, next); err != nil {
		return fmt.Errorf("pin: save pins of %s: %w", srv, err)
	}
	g.publishLocked(srv, &server{pinned: next, observed: s.observed})
	return nil
}

// Reload re-reads srv's approved pins from the store, which another process
// (`bastion pin approve`) may have changed, and puts them in force. It
// reports whether they differ from the pins in force before; a server not
// yet observed is left alone.
func (g *Gate) Reload(ctx context.Context, srv string) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := (*g.state.Load())[srv]
	if s == nil {
		return false, nil
	}
	pinned, err := g.store.Load(ctx, srv)
	if err != nil {
		return false, fmt.Errorf("pin: load pins of %s: %w", srv, err)
	}
	if (pinned == nil) == (s.pinned == nil) && maps.Equal(pinned, s.pinned) {
		return false, nil
	}
	g.publishLocked(srv, &server{pinned: pinned, observed: s.observed})
	return true, nil
}

// verdict is the lock-free decision for one tool: rule and reason are empty
// when the tool may be used.
func (g *Gate) verdict(srv, tool string) (rule, reason string) {
	s := (*g.state.Load())[srv]
	if s == nil {
		return RuleUnseen, ReasonUnseen
	}
	h, ok := s.observed[tool]
	switch {
	case !ok:
		return RuleUnseen, ReasonUnseen
	case !h.IsValid():
		return RuleUnhashed, ReasonUnhashed
	}
	p, ok := s.pinned[tool]
	switch {
	case !ok:
		return RuleHeld, ReasonHeld
	case p != h:
		return RuleRugPull, ReasonDrift
	}
	return "", ""
}

// Check implements gateway.Gate.
func (g *Gate) Check(_ context.Context, a *gateway.CallArgs) (gateway.Decision, error) {
	rule, reason := g.verdict(a.Server, a.Tool)
	if rule == "" {
		return gateway.Allow(gateway.GatePin, ""), nil
	}
	if g.opts.Mode == Warn {
		d := gateway.Allow(gateway.GatePin, "")
		d.Warnings = []string{rule + ": " + reason}
		return d, nil
	}
	return gateway.Deny(gateway.GatePin, rule, reason), nil
}

// Visible reports whether tools/list may show tool of srv: in strict mode
// only a tool whose definition matches its pin; in warn mode every observed
// tool.
func (g *Gate) Visible(srv, tool string) bool {
	rule, _ := g.verdict(srv, tool)
	return rule == "" || (g.opts.Mode == Warn && rule != RuleUnseen)
}
