package policy

import (
	"fmt"
	"strings"

	"github.com/bastion-mcp/bastion/gateway"
	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/gateway/pattern"
)

// Explain describes, in evaluation order, what decides a call to tool on
// server for any caller: the profiles that apply, each rule whose match
// globs cover the tool with its conditions, and the default. It stops at
// the first rule without conditions, since no later rule is reachable.
// `bastion validate` prints it.
func (p *Policy) Explain(server, tool string) []string {
	sp, ok := p.servers[server]
	if !ok {
		return []string{"deny: server is not configured (" + RuleUnknownServer + ")"}
	}
	qn := server + gateway.Separator + tool
	var out []string
	var active []string
	for _, pr := range [...]*profile{p.gatewayProfile, sp} {
		if pr == nil {
			continue
		}
		if !pr.admits(qn) {
			return append(out, fmt.Sprintf("deny: not admitted by active profile %q (%s)", pr.name, RuleNotInProfile))
		}
		active = append(active, pr.name)
	}
	for _, r := range p.rules {
		if r.match != nil && !pattern.MatchAny(r.match, qn) {
			continue
		}
		conds := r.conditions(active)
		if conds == "-" { // its profile condition can never hold
			continue
		}
		if conds == "" {
			return append(out, fmt.Sprintf("%s (rule %q)", r.action, r.name))
		}
		out = append(out, fmt.Sprintf("%s (rule %q) when %s", r.action, r.name, conds))
	}
	return append(out, "deny ("+RuleDenyDefault+")")
}

// conditions renders r's conditions other than match; "-" means it can
// never apply with the active profiles.
func (r *rule) conditions(active []string) string {
	var parts []string
	if r.profiles != nil {
		hit := false
		for _, n := range r.profiles {
			for _, a := range active {
				hit = hit || n == a
			}
		}
		if !hit {
			return "-"
		}
	}
	if c := r.src.Principals; c != nil {
		parts = append(parts, "principal matches "+strings.Join(c, " or "))
	}
	if c := r.src.Scopes; c != nil {
		parts = append(parts, "caller holds scopes "+strings.Join(c, " and "))
	}
	if c := r.src.Roles; c != nil {
		parts = append(parts, "caller has role "+strings.Join(c, " or "))
	}
	for _, a := range r.src.Args {
		parts = append(parts, describeArg(&a))
	}
	return strings.Join(parts, ", ")
}

func describeArg(a *config.ArgRule) string {
	fold := ""
	if a.IgnoreCase {
		fold = " (ignoring case)"
	}
	if a.CleanPath {
		fold += " (as a cleaned path)"
	}
	switch {
	case a.Equals != nil:
		return fmt.Sprintf("args %s equals %#v%s", a.Path, a.Equals, fold)
	case a.Glob != nil:
		return fmt.Sprintf("args %s matches glob %q%s", a.Path, *a.Glob, fold)
	case a.Regex != nil:
		return fmt.Sprintf("args %s matches regex %q", a.Path, *a.Regex)
	case a.Prefix != nil:
		return fmt.Sprintf("args %s starts with %q%s", a.Path, *a.Prefix, fold)
	case a.Exists != nil && *a.Exists:
		return fmt.Sprintf("args %s is present", a.Path)
	case a.Exists != nil:
		return fmt.Sprintf("args %s is absent", a.Path)
	}
	return "args " + a.Path
}
