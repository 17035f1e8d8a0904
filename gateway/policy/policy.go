// Package policy is the gateway's authorization gate: a deny-by-default
// allowlist of ordered rules with real glob matching, named profiles, RBAC by
// the caller's scopes and roles, argument conditions on JSON paths, and an
// "approve" action that parks a call for a human.
//
// Semantics, in order, for a call to tool T on server S (the [server.S]
// key; globs see "S__T"):
//
//  1. S must be a configured server, else the call is denied (unknown-server).
//  2. Every active profile (the gateway's [gateway] profile and S's own
//     profile) must admit S__T: match one of its tools globs (all, if tools
//     is left out) and none of its deny globs (not-in-active-profile).
//  3. The rules are tried in file order and the FIRST rule whose conditions
//     all hold decides: allow, deny, or approve (park for a human unless the
//     approval flow replays an approved call). First match, like a firewall,
//     so the outcome of a file can be read top to bottom; put narrow denies
//     before broad allows.
//  4. No rule matched: denied (deny-default).
//
// A rule's conditions: match (S__T against any glob), principals ("tenant/id"
// against any glob), scopes (the caller holds all), roles (the caller holds
// at least one), profiles (one of them is active) and args (all hold). A
// condition left out holds for everyone; a caller without a valid principal
// satisfies no principals, scopes or roles condition.
//
// Argument conditions reach values through a path ("repo.owner",
// "files[0].path", "labels[*]"); with [*] the condition holds if ANY reached
// value satisfies it (existential). With clean_path, string values are
// compared after path.Clean ("/tmp/../etc/passwd" is "/etc/passwd"). equals compares strings, numbers
// (numerically) and booleans; glob, regex and prefix see strings, and
// numbers and booleans in their JSON text; objects, arrays and null never
// match them; exists = true needs a non-null value, exists = false needs
// none. Arguments that are not valid JSON, carry a duplicate key or nest too
// deep are denied (invalid-arguments) before any rule reads them, so a
// parser disagreement cannot slip a value past a rule.
//
// Invariant: because the default is deny, a condition that fails to match
// (an argument of an unexpected shape) can only fail closed under an allow
// rule; a deny rule with argument conditions guards only the shapes it
// names, which is why narrow allow rules are preferred.
package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bastion-mcp/bastion/gateway"
	"github.com/bastion-mcp/bastion/gateway/canon"
	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/gateway/pattern"
	"github.com/bastion-mcp/bastion/principal"
)

// The audit rule ids the gate uses besides rule names.
const (
	RuleUnknownServer    = "unknown-server"
	RuleNotInProfile     = "not-in-active-profile"
	RuleDenyDefault      = "deny-default"
	RuleInvalidArguments = "invalid-arguments"
)

// Policy is a compiled policy. It is immutable and safe for concurrent use;
// build a new one to change it.
type Policy struct {
	servers        map[string]*profile // server key → its profile, or nil
	gatewayProfile *profile            // or nil
	rules          []*rule
}

type profile struct {
	name  string
	tools []*pattern.Glob // nil: all
	deny  []*pattern.Glob
}

func (p *profile) admits(qn string) bool {
	if p.tools != nil && !pattern.MatchAny(p.tools, qn) {
		return false
	}
	return !pattern.MatchAny(p.deny, qn)
}

type rule struct {
	src        *config.Rule
	name       string
	action     string
	reason     string
	match      []*pattern.Glob // nil: any
	principals []*pattern.Glob
	scopes     []principal.Scope
	roles      []string
	profiles   []string
	args       []*argCond
}

type argOp uint8

const (
	opEquals argOp = iota + 1
	opGlob
	opRegex
	opPrefix
	opExists
)

type argCond struct {
	path   pattern.Path
	op     argOp
	equals any // string, int64, float64, bool
	glob   *pattern.Glob
	re     *regexp.Regexp
	prefix string
	exists bool
	fold   bool
	clean  bool
}

// New compiles the policy of f. f must have come from config.Load or
// config.Parse (which already checked it); New still reports any pattern it
// cannot compile.
func New(f *config.File) (*Policy, error) {
	p := &Policy{servers: map[string]*profile{}}
	profiles := map[string]*profile{}
	for name, pc := range f.Profiles {
		pr := &profile{name: name}
		var err error
		if pc.Tools != nil {
			if pr.tools, err = pattern.CompileGlobs(pc.Tools); err != nil {
				return nil, fmt.Errorf("policy: profile %s: %w", name, err)
			}
			if pr.tools == nil {
				pr.tools = []*pattern.Glob{} // tools = [] admits nothing
			}
		}
		if pr.deny, err = pattern.CompileGlobs(pc.Deny); err != nil {
			return nil, fmt.Errorf("policy: profile %s: %w", name, err)
		}
		profiles[name] = pr
	}
	if f.Gateway.Profile != "" {
		p.gatewayProfile = profiles[f.Gateway.Profile]
		if p.gatewayProfile == nil {
			return nil, fmt.Errorf("policy: unknown gateway profile %q", f.Gateway.Profile)
		}
	}
	for name, s := range f.Servers {
		var pr *profile
		if s != nil && s.Profile != "" {
			if pr = profiles[s.Profile]; pr == nil {
				return nil, fmt.Errorf("policy: server %s: unknown profile %q", name, s.Profile)
			}
		}
		p.servers[name] = pr
	}
	for i := range f.Policy.Rules {
		r, err := compileRule(&f.Policy.Rules[i], profiles)
		if err != nil {
			return nil, fmt.Errorf("policy: rule %d (%s): %w", i, f.Policy.Rules[i].Name, err)
		}
		p.rules = append(p.rules, r)
	}
	return p, nil
}

func compileRule(c *config.Rule, profiles map[string]*profile) (*rule, error) {
	r := &rule{src: c, name: c.Name, action: c.Action, reason: c.Reason, roles: c.Roles, profiles: c.Profiles}
	switch c.Action {
	case config.ActionAllow, config.ActionDeny, config.ActionApprove:
	default:
		return nil, fmt.Errorf("unknown action %q", c.Action)
	}
	var err error
	if c.Match != nil {
		if r.match, err = pattern.CompileGlobs(c.Match); err != nil {
			return nil, err
		}
	}
	if c.Principals != nil {
		if r.principals, err = pattern.CompileGlobs(c.Principals); err != nil {
			return nil, err
		}
	}
	for _, s := range c.Scopes {
		sc, ok := principal.ParseScope(s)
		if !ok {
			return nil, fmt.Errorf("unknown scope %q", s)
		}
		r.scopes = append(r.scopes, sc)
	}
	for _, pn := range c.Profiles {
		if profiles[pn] == nil {
			return nil, fmt.Errorf("unknown profile %q", pn)
		}
	}
	for j := range c.Args {
		a, err := compileArg(&c.Args[j])
		if err != nil {
			return nil, fmt.Errorf("args[%d]: %w", j, err)
		}
		r.args = append(r.args, a)
	}
	return r, nil
}

func compileArg(c *config.ArgRule) (*argCond, error) {
	path, err := pattern.ParsePath(c.Path)
	if err != nil {
		return nil, err
	}
	a := &argCond{path: path, fold: c.IgnoreCase, clean: c.CleanPath}
	switch {
	case c.Equals != nil:
		a.op, a.equals = opEquals, c.Equals
		if s, ok := c.Equals.(string); ok && a.fold {
			a.equals = strings.ToLower(s)
		}
	case c.Glob != nil:
		g := *c.Glob
		if a.fold {
			g = strings.ToLower(g)
		}
		a.op = opGlob
		if a.glob, err = pattern.CompileGlob(g); err != nil {
			return nil, err
		}
	case c.Regex != nil:
		a.op = opRegex
		if a.re, err = pattern.CompileRegexp(*c.Regex); err != nil {
			return nil, err
		}
	case c.Prefix != nil:
		a.op, a.prefix = opPrefix, *c.Prefix
		if a.fold {
			a.prefix = strings.ToLower(a.prefix)
		}
	case c.Exists != nil:
		a.op, a.exists = opExists, *c.Exists
	default:
		return nil, fmt.Errorf("no operator")
	}
	return a, nil
}

// call is the per-call evaluation state: the qualified name and the
// arguments, decoded at most once and only if a rule reads them.
type call struct {
	a       *gateway.CallArgs
	qn      string
	profile []string // active profile names
	args    any
	argErr  error
	decoded bool
}

func (c *call) arguments() (any, error) {
	if !c.decoded {
		c.decoded = true
		raw := c.a.Arguments
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
		c.args, c.argErr = canon.Decode(raw)
	}
	return c.args, c.argErr
}

// Check implements gateway.Gate.
func (p *Policy) Check(_ context.Context, a *gateway.CallArgs) (gateway.Decision, error) {
	sp, ok := p.servers[a.Server]
	if !ok {
		return gateway.Deny(gateway.GatePolicy, RuleUnknownServer,
			"server "+gateway.Quote(a.Server)+" is not governed by bastion"), nil
	}
	c := call{a: a, qn: a.Server + gateway.Separator + a.Tool}
	for _, pr := range [...]*profile{p.gatewayProfile, sp} {
		if pr == nil {
			continue
		}
		if !pr.admits(c.qn) {
			return gateway.Deny(gateway.GatePolicy, RuleNotInProfile,
				"tool "+gateway.Quote(displayName(a))+" is not in the active profile "+gateway.Quote(pr.name)), nil
		}
		c.profile = append(c.profile, pr.name)
	}
	for _, r := range p.rules {
		hit, err := r.matches(&c)
		if err != nil {
			return gateway.Deny(gateway.GatePolicy, RuleInvalidArguments,
				"the arguments are not valid JSON (or repeat a key), so no rule can judge them"), nil
		}
		if !hit {
			continue
		}
		return r.decide(a), nil
	}
	return gateway.Deny(gateway.GatePolicy, RuleDenyDefault,
		"no policy rule allows tool "+gateway.Quote(displayName(a))+" for this caller"), nil
}

func displayName(a *gateway.CallArgs) string {
	if a.Name != "" {
		return a.Name
	}
	return a.Server + gateway.Separator + a.Tool
}

func (r *rule) decide(a *gateway.CallArgs) gateway.Decision {
	switch r.action {
	case config.ActionAllow:
		return gateway.Allow(gateway.GatePolicy, r.name)
	case config.ActionApprove:
		if a.Approved {
			return gateway.Allow(gateway.GatePolicy, r.name)
		}
		why := r.reason
		if why == "" {
			why = "this call needs a human's approval"
		}
		return gateway.Decision{
			Gate:     gateway.GatePolicy,
			Rule:     r.name,
			Reason:   "call to " + gateway.Quote(displayName(a)) + " is waiting for human approval (rule " + gateway.Quote(r.name) + "): " + why,
			Approval: &gateway.Approval{Rule: r.name, Reason: why},
		}
	}
	reason := "policy rule " + gateway.Quote(r.name) + " denies tool " + gateway.Quote(displayName(a))
	if r.reason != "" {
		reason += ": " + r.reason
	}
	return gateway.Deny(gateway.GatePolicy, r.name, reason)
}

// matchesCaller checks every condition but the arguments.
func (r *rule) matchesCaller(qn string, pr principal.Principal, active []string) bool {
	if r.match != nil && !pattern.MatchAny(r.match, qn) {
		return false
	}
	if r.profiles != nil && !slices.ContainsFunc(r.profiles, func(n string) bool { return slices.Contains(active, n) }) {
		return false
	}
	if r.principals != nil || r.scopes != nil || r.roles != nil {
		if !pr.IsValid() {
			return false
		}
	}
	if r.principals != nil && !pattern.MatchAny(r.principals, pr.String()) {
		return false
	}
	for _, s := range r.scopes {
		if !pr.Has(s) {
			return false
		}
	}
	if r.roles != nil && !slices.ContainsFunc(r.roles, pr.HasRole) {
		return false
	}
	return true
}

func (r *rule) matches(c *call) (bool, error) {
	if !r.matchesCaller(c.qn, c.a.Principal, c.profile) {
		return false, nil
	}
	if len(r.args) == 0 {
		return true, nil
	}
	args, err := c.arguments()
	if err != nil {
		return false, err
	}
	for _, ac := range r.args {
		if !ac.holds(args) {
			return false, nil
		}
	}
	return true, nil
}

func (ac *argCond) holds(args any) bool {
	if ac.op == opExists {
		found := walk(args, ac.path, func(v any) bool { return v != nil })
		return found == ac.exists
	}
	return walk(args, ac.path, ac.test)
}

// walk calls fn on every value path reaches in v and reports whether fn
// returned true for any of them.
func walk(v any, path pattern.Path, fn func(any) bool) bool {
	if len(path) == 0 {
		return fn(v)
	}
	st := path[0]
	if st.IsKey {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		e, ok := m[st.Key]
		return ok && walk(e, path[1:], fn)
	}
	arr, ok := v.([]any)
	if !ok {
		return false
	}
	if st.Index >= 0 {
		return st.Index < len(arr) && walk(arr[st.Index], path[1:], fn)
	}
	for _, e := range arr {
		if walk(e, path[1:], fn) {
			return true
		}
	}
	return false
}

func (ac *argCond) test(v any) bool {
	if s, ok := v.(string); ok && ac.clean {
		v = path.Clean(s)
	}
	if ac.op == opEquals {
		return equals(ac.equals, v, ac.fold)
	}
	var s string
	switch t := v.(type) {
	case string:
		s = t
	case json.Number:
		s = string(t)
	case bool:
		s = strconv.FormatBool(t)
	default:
		return false
	}
	switch ac.op {
	case opGlob:
		if ac.fold {
			s = strings.ToLower(s)
		}
		return ac.glob.Match(s)
	case opRegex:
		return ac.re.MatchString(s)
	case opPrefix:
		if ac.fold {
			s = strings.ToLower(s)
		}
		return strings.HasPrefix(s, ac.prefix)
	}
	return false
}

func equals(want, v any, fold bool) bool {
	switch w := want.(type) {
	case string:
		s, ok := v.(string)
		if fold {
			return ok && strings.ToLower(s) == w
		}
		return ok && s == w
	case bool:
		b, ok := v.(bool)
		return ok && b == w
	case int64:
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return i == w
		}
		f, err := strconv.ParseFloat(string(n), 64) // 1.0 equals 1
		return err == nil && f == float64(w)
	case float64:
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		f, err := strconv.ParseFloat(string(n), 64)
		return err == nil && f == w
	}
	return false
}

// Visible reports whether tools/list should show tool on server to the
// caller pr (its scopes and roles): the server is governed, the active profiles
// admit it, and the first rule that can decide without the arguments allows
// or asks for approval (a rule with argument conditions decides nothing
// here unless it allows, since some arguments might satisfy it).
func (p *Policy) Visible(pr principal.Principal, server, tool string) bool {
	sp, ok := p.servers[server]
	if !ok {
		return false
	}
	qn := server + gateway.Separator + tool
	var active []string
	for _, prof := range [...]*profile{p.gatewayProfile, sp} {
		if prof == nil {
			continue
		}
		if !prof.admits(qn) {
			return false
		}
		active = append(active, prof.name)
	}
	for _, r := range p.rules {
		if !r.matchesCaller(qn, pr, active) {
			continue
		}
		if r.action == config.ActionDeny {
			if len(r.args) == 0 {
				return false
			}
			continue
		}
		return true
	}
	return false
}
