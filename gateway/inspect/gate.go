package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bastion-mcp/bastion/gateway"
	"github.com/bastion-mcp/bastion/gateway/config"
)

// Mode is what the gate does with a finding.
type Mode uint8

// The modes.
const (
	// Warn lets the call through and records the finding. It is the zero
	// Mode, as warn is [inspect] mode's default (config.File.WithDefaults),
	// so a forgotten mode still reports.
	Warn Mode = iota
	// Off scans nothing.
	Off
	// Enforce refuses the call, the result or the tool.
	Enforce
)

// ParseMode parses "off", "warn" or "enforce". An empty mode is an error:
// the default is config.File.WithDefaults's to fill, not the gate's.
func ParseMode(s string) (Mode, error) {
	switch s {
	case config.ModeWarn:
		return Warn, nil
	case config.ModeOff:
		return Off, nil
	case config.ModeEnforce:
		return Enforce, nil
	}
	return 0, fmt.Errorf("inspect: mode must be off, warn or enforce, got %q", s)
}

// String returns the mode's configuration name.
func (m Mode) String() string {
	switch m {
	case Off:
		return config.ModeOff
	case Enforce:
		return config.ModeEnforce
	}
	return config.ModeWarn
}

// The audit rules of the gate.
const (
	RuleSecret    = "secret-exfil"
	RuleInjection = "injection"
	RuleOversize  = "inspect-oversize"
	RulePoisoned  = "poisoned-description"
)

// Gate is the inspect gate: Check scans arguments, CheckResult scans
// results, ObserveTools scans definitions. It is safe for concurrent use.
type Gate struct {
	scanner *Scanner
	mode    Mode

	mu       sync.Mutex                         // serializes ObserveTools
	poisoned atomic.Pointer[map[toolKey]Result] // replaced whole under mu; read lock-free
}

type toolKey struct{ server, tool string }

// NewGate returns a Gate.
func NewGate(s *Scanner, m Mode) *Gate {
	g := &Gate{scanner: s, mode: m}
	g.poisoned.Store(&map[toolKey]Result{})
	return g
}

// decide turns a scan of surface into a Decision: in enforce mode a
// denial, otherwise an allow carrying every finding as a warning.
func (g *Gate) decide(r Result, surface string) gateway.Decision {
	d := gateway.Allow(gateway.GateInspect, "")
	if r.Clean() {
		return d
	}
	if g.mode == Enforce {
		rule, reason := Describe(r, surface)
		return gateway.Deny(gateway.GateInspect, rule, reason)
	}
	d.Warnings = Warnings(r, surface)
	return d
}

// Warnings returns what a scan of surface found as warnings, "RULE:
// REASON", one per rule (secrets, injections, oversize), so a scan that
// found both a secret and an injection reports both. Like Describe, they
// name detectors and the surface, never what was matched.
func Warnings(r Result, surface string) []string {
	var out []string
	secrets, injections := r.byCategory()
	if len(secrets) > 0 {
		out = append(out, RuleSecret+": secret detected ("+strings.Join(secrets, ", ")+") in "+surface)
	}
	if len(injections) > 0 {
		out = append(out, RuleInjection+": prompt injection detected ("+strings.Join(injections, ", ")+") in "+surface)
	}
	if r.Oversize {
		out = append(out, RuleOversize+": "+surface+" too large to inspect")
	}
	return out
}

// Describe returns the audit rule and the client-safe reason for a scan of
// surface ("arguments", "result", "tool description"): it names detectors,
// never what they matched.
func Describe(r Result, surface string) (rule, reason string) {
	secrets, injections := r.byCategory()
	switch {
	case len(secrets) > 0:
		return RuleSecret, "secret detected (" + strings.Join(secrets, ", ") + ") in " + surface
	case len(injections) > 0:
		return RuleInjection, "prompt injection detected (" + strings.Join(injections, ", ") + ") in " + surface
	}
	return RuleOversize, surface + " too large to inspect"
}

// Check implements gateway.Gate: it refuses a call to a tool whose
// definition was flagged, then scans the arguments.
func (g *Gate) Check(_ context.Context, a *gateway.CallArgs) (gateway.Decision, error) {
	if g.mode == Off {
		return gateway.Allow(gateway.GateInspect, ""), nil
	}
	var warnings []string
	if r, bad := (*g.poisoned.Load())[toolKey{a.Server, a.Tool}]; bad {
		_, why := Describe(r, "its description")
		if g.mode == Enforce {
			return gateway.Deny(gateway.GateInspect, RulePoisoned, "tool is withheld: "+why), nil
		}
		// Warn mode calls the tool, and says on the call that its
		// definition was flagged.
		warnings = append(warnings, RulePoisoned+": "+why)
	}
	d := gateway.Allow(gateway.GateInspect, "")
	if len(a.Arguments) > 0 {
		d = g.decide(g.scanner.ScanJSON(a.Arguments), "arguments")
	}
	if len(warnings) > 0 && d.Allow {
		d.Warnings = append(warnings, d.Warnings...)
	}
	return d, nil
}

// CheckResult implements gateway.ResultGate. In enforce mode a flagged
// result is replaced by the denial; the model never sees it.
func (g *Gate) CheckResult(_ context.Context, _ *gateway.CallArgs, result json.RawMessage) (gateway.Decision, error) {
	if g.mode == Off || len(result) == 0 {
		return gateway.Allow(gateway.GateInspect, ""), nil
	}
	return g.decide(g.scanner.ScanJSON(result), "result"), nil
}

// byCategory returns the names of the detectors that fired, secrets and
// injections apart.
func (r Result) byCategory() (secrets, injections []string) {
	for _, f := range r.Findings {
		if f.Category == Secret {
			secrets = append(secrets, f.Detector)
		} else {
			injections = append(injections, f.Detector)
		}
	}
	return secrets, injections
}

// ToolFinding is a flagged tool definition.
type ToolFinding struct {
	Tool   string
	Rule   string // of the first finding, as Describe
	Reason string
	// Warnings are every finding, as Warnings gives them.
	Warnings []string
}

// ObserveTools scans the definitions server offers now (at connect and on
// list_changed) and replaces what the gate knows of that server. In enforce
// mode the flagged tools are hidden (Visible) and refused (Check).
func (g *Gate) ObserveTools(server string, tools []json.RawMessage) []ToolFinding {
	if g.mode == Off {
		return nil
	}
	var out []ToolFinding
	flagged := map[string]Result{}
	for _, t := range tools {
		var named struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(t, &named) != nil {
			continue
		}
		r := g.scanner.ScanTool(t)
		if r.Clean() {
			continue
		}
		rule, reason := Describe(r, "tool description")
		out = append(out, ToolFinding{Tool: named.Name, Rule: rule, Reason: reason, Warnings: Warnings(r, "tool description")})
		flagged[named.Name] = r
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	next := maps.Clone(*g.poisoned.Load())
	maps.DeleteFunc(next, func(k toolKey, _ Result) bool { return k.server == server })
	for n, r := range flagged {
		next[toolKey{server, n}] = r
	}
	g.poisoned.Store(&next)
	return out
}

// Visible reports whether tools/list may show tool of server: false only
// for a flagged definition in enforce mode.
func (g *Gate) Visible(server, tool string) bool {
	if g.mode != Enforce {
		return true
	}
	_, bad := (*g.poisoned.Load())[toolKey{server, tool}]
	return !bad
}
