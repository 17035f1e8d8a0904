package config

import (
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/bastion-mcp/bastion/gateway/pattern"
	"github.com/bastion-mcp/bastion/principal"
)

// Ref is a configured value that may name where a secret lives instead of
// holding it: "env:NAME" reads bastion's environment variable NAME when the
// upstream starts, "file:PATH" reads a file (a trailing newline dropped);
// anything else is the literal value. References keep credentials out of
// the file and out of bastion's own process environment of children.
type Ref string

// String never prints a literal value: it may be a secret.
func (r Ref) String() string {
	if r.IsReference() {
		return string(r)
	}
	return "(literal)"
}

// IsReference reports whether r is an env: or file: reference.
func (r Ref) IsReference() bool {
	return strings.HasPrefix(string(r), "env:") || strings.HasPrefix(string(r), "file:")
}

// Resolve returns r's value. getenv looks up environment variables (pass
// os.LookupEnv); a missing variable or unreadable file is an error that names
// the reference, never a value.
func (r Ref) Resolve(getenv func(string) (string, bool)) (string, error) {
	s := string(r)
	switch {
	case strings.HasPrefix(s, "env:"):
		v, ok := getenv(s[len("env:"):])
		if !ok {
			return "", fmt.Errorf("config: %s is not set", s)
		}
		return v, nil
	case strings.HasPrefix(s, "file:"):
		b, err := os.ReadFile(s[len("file:"):])
		if err != nil {
			return "", fmt.Errorf("config: cannot read %s: %w", s, err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	return s, nil
}

var (
	nameRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)
	ruleRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)
	envRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// checker collects errors with their positions.
type checker struct {
	loc  *locator
	errs Errors
}

// at records an error for key in the section header (the nth occurrence of
// an array table, 0 for a plain table).
func (c *checker) at(header string, nth int, key string, format string, args ...any) {
	line := c.loc.find(header, nth, key)
	k := header
	if key != "" {
		k += "." + key
	}
	c.errs = append(c.errs, &Error{Line: line, Key: k, Msg: fmt.Sprintf(format, args...)})
}

func validate(f *File, data []byte) Errors {
	c := &checker{loc: newLocator(data)}
	if f.Gateway.Profile != "" {
		if _, ok := f.Profiles[f.Gateway.Profile]; !ok {
			c.at("gateway", 0, "profile", "profile %q is not defined as [profiles.%s]", f.Gateway.Profile, f.Gateway.Profile)
		}
	}
	if len(f.Servers) == 0 {
		c.errs = append(c.errs, &Error{Msg: "no [server.NAME] table: the gateway has nothing to govern"})
	}
	names := make([]string, 0, len(f.Servers))
	for n := range f.Servers {
		names = append(names, n)
	}
	slices.Sort(names)
	namespaces := map[string]string{}
	for _, n := range names {
		c.server(f, n, f.Servers[n], namespaces)
	}
	pnames := make([]string, 0, len(f.Profiles))
	for n := range f.Profiles {
		pnames = append(pnames, n)
	}
	slices.Sort(pnames)
	for _, n := range pnames {
		p := f.Profiles[n]
		h := "profiles." + n
		if !nameRE.MatchString(n) {
			c.at(h, 0, "", "profile name must be 1-64 letters, digits, '-' or '_'")
		}
		c.globs(h, 0, "tools", p.Tools, true)
		c.globs(h, 0, "deny", p.Deny, true)
	}
	seen := map[string]bool{}
	for i := range f.Policy.Rules {
		c.rule(f, i, &f.Policy.Rules[i], seen)
	}
	if f.Gateway.MaxInFlightPerPrincipal < 0 {
		c.at("gateway", 0, "max_in_flight_per_principal", "must not be negative (0 means the default)")
	}
	for _, k := range slices.Sorted(maps.Keys(f.Gateway.InFlight)) {
		if tenant, id, ok := strings.Cut(k, "/"); !ok || tenant == "" || id == "" {
			c.at("gateway", 0, "in_flight", "key %q must be TENANT/ID", k)
		}
		if f.Gateway.InFlight[k] < 1 {
			c.at("gateway", 0, "in_flight", "%q: a bound must be at least 1", k)
		}
	}
	c.rateLimit(&f.RateLimit)
	c.inspect(&f.Inspect)
	switch f.Pin.Mode {
	case "", PinStrict, PinWarn:
	default:
		c.at("pin", 0, "mode", "must be %q or %q, got %q", PinStrict, PinWarn, f.Pin.Mode)
	}
	slices.SortStableFunc(c.errs, func(a, b *Error) int { return a.Line - b.Line })
	return c.errs
}

func (c *checker) server(f *File, name string, s *Server, namespaces map[string]string) {
	h := "server." + name
	if s == nil {
		return
	}
	if !nameRE.MatchString(name) || strings.Contains(name, "__") {
		c.at(h, 0, "", "server name must be 1-64 letters, digits, '-' or '_' without %q", "__")
	}
	ns := s.NamespaceOf(name)
	if s.Namespace != "" && (!nameRE.MatchString(ns) || strings.Contains(ns, "__")) {
		c.at(h, 0, "namespace", "namespace must be 1-64 letters, digits, '-' or '_' without %q", "__")
	}
	if other, dup := namespaces[ns]; dup {
		c.at(h, 0, "namespace", "namespace %q is also used by server %q (tool names would collide)", ns, other)
	}
	namespaces[ns] = name
	if s.Profile != "" {
		if _, ok := f.Profiles[s.Profile]; !ok {
			c.at(h, 0, "profile", "profile %q is not defined as [profiles.%s]", s.Profile, s.Profile)
		}
	}
	for _, t := range s.Tools {
		if t == "" || len(t) > 128 {
			c.at(h, 0, "tools", "tool names must be 1-128 bytes")
		}
	}
	only := func(key string, set bool, kinds ...string) {
		if set && !slices.Contains(kinds, s.Kind) {
			c.at(h, 0, key, "does not apply to kind %q (only to %s)", s.Kind, strings.Join(kinds, ", "))
		}
	}
	switch s.Kind {
	case KindReview:
	case KindStdio:
		if strings.TrimSpace(s.Command) == "" {
			c.at(h, 0, "command", "a stdio server needs a command")
		}
	case KindHTTP, KindSSE:
		u, err := url.Parse(s.URL)
		switch {
		case s.URL == "":
			c.at(h, 0, "url", "a %s server needs a url", s.Kind)
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			c.at(h, 0, "url", "must be an absolute http or https URL")
		case u.User != nil:
			c.at(h, 0, "url", "must not carry credentials; use headers = { Authorization = \"env:NAME\" }")
		}
	case KindWasm:
		if strings.TrimSpace(s.Wasm) == "" {
			c.at(h, 0, "wasm", "a wasm server needs the path of its module")
		}
		if s.MemoryMB < 0 || s.MemoryMB > 4096 {
			c.at(h, 0, "memory_mb", "must be between 1 and 4096")
		}
	case "":
		c.at(h, 0, "kind", "missing; one of review, stdio, http, sse, wasm")
	default:
		c.at(h, 0, "kind", "unknown kind %q; one of review, stdio, http, sse, wasm", s.Kind)
	}
	only("command", s.Command != "", KindStdio)
	only("args", s.Args != nil, KindStdio, KindWasm)
	only("env", s.Env != nil, KindStdio, KindWasm)
	only("url", s.URL != "", KindHTTP, KindSSE)
	only("headers", s.Headers != nil, KindHTTP, KindSSE)
	only("wasm", s.Wasm != "", KindWasm)
	only("memory_mb", s.MemoryMB != 0, KindWasm)
	only("readonly", s.ReadOnly != nil, KindWasm)
	only("allow_private", s.AllowPrivate, KindHTTP, KindSSE)
	switch s.Protocol {
	case "", "2025-11-25", "2026-07-28":
	default:
		c.at(h, 0, "protocol", "unknown MCP revision %q; one of 2025-11-25, 2026-07-28", s.Protocol)
	}
	if s.Kind == KindSSE && s.Protocol == "2026-07-28" {
		c.at(h, 0, "protocol", "the legacy SSE transport speaks 2025-11-25 at most")
	}
	for k, v := range s.Env {
		if !envRE.MatchString(k) {
			c.at(h, 0, "env", "%q is not a valid environment variable name", k)
		}
		c.ref(h, "env", v)
	}
	for k, v := range s.Headers {
		if !headerRE.MatchString(k) {
			c.at(h, 0, "headers", "%q is not a valid header name", k)
		}
		c.ref(h, "headers", v)
	}
}

func (c *checker) ref(h, key string, r Ref) {
	s := string(r)
	switch {
	case strings.HasPrefix(s, "env:"):
		if !envRE.MatchString(s[len("env:"):]) {
			c.at(h, 0, key, "%q does not name a valid environment variable", s)
		}
	case strings.HasPrefix(s, "file:"):
		if len(s) == len("file:") {
			c.at(h, 0, key, "file: reference without a path")
		}
	}
}

func (c *checker) globs(h string, nth int, key string, gs []string, emptyOK bool) {
	if gs != nil && len(gs) == 0 && !emptyOK {
		c.at(h, nth, key, "explicit empty list; leave %s out to mean any", key)
		return
	}
	for _, g := range gs {
		if _, err := pattern.CompileGlob(g); err != nil {
			c.at(h, nth, key, "%v", err)
		}
	}
}

func (c *checker) rule(f *File, i int, r *Rule, seen map[string]bool) {
	const h = "policy.rule"
	label := fmt.Sprintf("policy.rule[%d]", i)
	at := func(key, format string, args ...any) {
		line := c.loc.find(h, i, key)
		k := label
		if key != "" {
			k += "." + key
		}
		c.errs = append(c.errs, &Error{Line: line, Key: k, Msg: fmt.Sprintf(format, args...)})
	}
	switch {
	case r.Name == "":
		at("name", "a rule needs a name (the ledger and metrics record it)")
	case !ruleRE.MatchString(r.Name):
		at("name", "rule names are 1-128 letters, digits, '_', '.', ':' or '-'")
	case seen[r.Name]:
		at("name", "duplicate rule name %q", r.Name)
	}
	seen[r.Name] = true
	switch r.Action {
	case ActionAllow, ActionDeny, ActionApprove:
	case "":
		at("action", "missing; one of allow, deny, approve")
	default:
		at("action", "unknown action %q; one of allow, deny, approve", r.Action)
	}
	for _, l := range []struct {
		key  string
		list []string
	}{{"match", r.Match}, {"principals", r.Principals}, {"scopes", r.Scopes}, {"roles", r.Roles}, {"profiles", r.Profiles}} {
		if l.list != nil && len(l.list) == 0 {
			at(l.key, "explicit empty list; leave %s out to mean any", l.key)
		}
	}
	for _, g := range slices.Concat(r.Match, r.Principals) {
		if _, err := pattern.CompileGlob(g); err != nil {
			at("match", "%v", err)
		}
	}
	for _, s := range r.Scopes {
		if _, ok := principal.ParseScope(s); !ok {
			at("scopes", "unknown scope %q", s)
		}
	}
	for _, s := range r.Roles {
		if strings.TrimSpace(s) == "" {
			at("roles", "empty role name")
		}
	}
	for _, p := range r.Profiles {
		if _, ok := f.Profiles[p]; !ok {
			at("profiles", "profile %q is not defined as [profiles.%s]", p, p)
		}
	}
	for j := range r.Args {
		if err := checkArg(&r.Args[j]); err != nil {
			at("args", "args[%d]: %v", j, err)
		}
	}
}

func checkArg(a *ArgRule) error {
	if _, err := pattern.ParsePath(a.Path); err != nil {
		return err
	}
	n := 0
	if a.Equals != nil {
		n++
		switch v := a.Equals.(type) {
		case string, int64, bool:
		case float64:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("equals must be finite")
			}
		default:
			return fmt.Errorf("equals must be a string, number or boolean, not %T", a.Equals)
		}
	}
	if a.Glob != nil {
		n++
		if _, err := pattern.CompileGlob(*a.Glob); err != nil {
			return err
		}
	}
	if a.Regex != nil {
		n++
		if _, err := pattern.CompileRegexp(*a.Regex); err != nil {
			return err
		}
	}
	if a.Prefix != nil {
		n++
	}
	if a.Exists != nil {
		n++
	}
	if n != 1 {
		return fmt.Errorf("must set exactly one of equals, glob, regex, prefix, exists (found %d)", n)
	}
	return nil
}

func (c *checker) rateLimit(r *RateLimit) {
	for _, b := range []struct {
		key string
		b   *Bucket
	}{{"global", r.Global}, {"per_principal", r.PerPrincipal}, {"per_tool", r.PerTool}} {
		if b.b == nil {
			continue
		}
		if !(b.b.Rate > 0) || math.IsInf(b.b.Rate, 0) {
			c.at("ratelimit", 0, b.key, "rate must be a positive number of calls per second")
		}
		if b.b.Burst < 1 {
			c.at("ratelimit", 0, b.key, "burst must be at least 1 (a bucket smaller than one call admits nothing)")
		}
	}
	if r.MaxKeys < 0 {
		c.at("ratelimit", 0, "max_keys", "must not be negative")
	}
}

func (c *checker) inspect(in *Inspect) {
	switch in.Mode {
	case "", ModeOff, ModeWarn, ModeEnforce:
	default:
		c.at("inspect", 0, "mode", "must be off, warn or enforce, got %q", in.Mode)
	}
	seen := map[string]bool{}
	for i, p := range in.Patterns {
		const h = "inspect.pattern"
		label := fmt.Sprintf("inspect.pattern[%d]", i)
		at := func(key, format string, args ...any) {
			c.errs = append(c.errs, &Error{Line: c.loc.find(h, i, key), Key: label + "." + key, Msg: fmt.Sprintf(format, args...)})
		}
		if !ruleRE.MatchString(p.Name) {
			at("name", "pattern names are 1-128 letters, digits, '_', '.', ':' or '-'")
		} else if seen[p.Name] {
			at("name", "duplicate pattern name %q", p.Name)
		}
		seen[p.Name] = true
		if p.Kind != "secret" && p.Kind != "injection" {
			at("kind", "must be secret or injection, got %q", p.Kind)
		}
		if p.Regex == "" {
			at("regex", "missing")
		} else if re, err := pattern.CompileRegexp(p.Regex); err != nil {
			at("regex", "%v", err)
		} else if re.MatchString("") {
			at("regex", "matches the empty string, so it would flag everything")
		}
	}
}
