// Package validate checks a gateway configuration the way `bastion serve`
// would load it and prints the effective policy, for `bastion validate`.
//
// The effective policy is printed per server for the tools the file itself
// names (a server's tools list and rule match globs without wildcards);
// validate does not connect to upstreams, so tools known only at run time
// are not listed. It does check, without starting anything, that each
// upstream could start on this machine (upstream.Preflight: a stdio
// command on the child's PATH, a readable Wasm module, env: and file:
// values that resolve) and names each one that could not: an error for a
// required server, a warning for an optional one, which the gateway serves
// without.
package validate

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/bastion-mcp/bastion/gateway"
	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/gateway/gates"
	"github.com/bastion-mcp/bastion/gateway/loop"
	"github.com/bastion-mcp/bastion/gateway/pattern"
	"github.com/bastion-mcp/bastion/gateway/policy"
	"github.com/bastion-mcp/bastion/upstream"
)

// File loads the configuration at path, compiles its gate chain exactly as
// the gateway does (gates.Compile), and writes a summary and the effective
// policy to w. A problem is returned as the error (a config.Errors with
// lines when the file is at fault; one error per required upstream that
// could not start here).
func File(path string, w io.Writer) error {
	raw, err := config.Load(path)
	if err != nil {
		return err
	}
	f := raw.WithDefaults()
	g, err := gates.Compile(f, gates.Options{})
	if err != nil {
		var ce *config.Error
		if errors.As(err, &ce) {
			ce.File = path // Compile knows the section, not the file
		}
		return err
	}
	down := unavailable(f, nil)
	report(w, path, f, g.Policy, down)
	var errs config.Errors
	for _, name := range slices.Sorted(maps.Keys(down)) {
		if !f.Servers[name].Optional {
			errs = append(errs, &config.Error{File: path, Key: "server." + name,
				Msg: "cannot start on this machine (install it, fix the path, or mark it optional = true): " + down[name].Error()})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// unavailable returns, by server key, why each upstream could not start on
// this machine now (see upstream.Preflight; getenv nil means
// os.LookupEnv). The in-process review server is always available.
func unavailable(f *config.File, getenv func(string) (string, bool)) map[string]error {
	out := map[string]error{}
	for name, s := range f.Servers {
		if s.Kind == config.KindReview {
			continue
		}
		spec, err := loop.Spec(f, name, nil)
		if err == nil {
			err = upstream.Preflight(spec, getenv)
		}
		if err != nil {
			out[name] = err
		}
	}
	return out
}

// report writes the summary and effective policy of a configuration after
// WithDefaults; down names the upstreams that could not start here (see
// unavailable).
func report(w io.Writer, path string, f *config.File, pol *policy.Policy, down map[string]error) {
	fmt.Fprintf(w, "ok: %s — %d server(s), %d rule(s), inspect %s, pin %s, rate limits %s\n",
		path, len(f.Servers), len(f.Policy.Rules), f.Inspect.Mode, f.Pin.Mode, limits(f.RateLimit))
	if f.Gateway.Profile != "" {
		fmt.Fprintf(w, "active profile: %s\n", f.Gateway.Profile)
	}
	known := knownTools(f)
	for _, name := range slices.Sorted(maps.Keys(f.Servers)) {
		s := f.Servers[name]
		ns := s.Namespace
		fmt.Fprintf(w, "\nserver %s (%s, namespace %s, timeout %s)", name, s.Kind, ns, time.Duration(s.Timeout))
		if s.Profile != "" {
			fmt.Fprintf(w, " profile %s", s.Profile)
		}
		if s.Optional {
			fmt.Fprint(w, " optional")
		}
		fmt.Fprintln(w)
		if err := down[name]; err != nil {
			verdict := "error: the gateway would start without it and report it not ready"
			if s.Optional {
				verdict = "warning: optional, the gateway serves without it (ready, degraded)"
			}
			fmt.Fprintf(w, "  unavailable on this machine: %v\n  %s\n", err, verdict)
		}
		tools := known[name]
		if len(tools) == 0 {
			fmt.Fprintf(w, "  (no tools named in the file; list them in [server.%s] tools = [...] to see their policy)\n", name)
			continue
		}
		for _, t := range tools {
			fmt.Fprintf(w, "  %s\n", gateway.QualifiedName(ns, t))
			for _, line := range pol.Explain(name, t) {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
	}
}

func limits(r config.RateLimit) string {
	var parts []string
	for _, b := range []struct {
		name string
		b    *config.Bucket
	}{{"global", r.Global}, {"per principal", r.PerPrincipal}, {"per tool", r.PerTool}} {
		if b.b != nil {
			parts = append(parts, fmt.Sprintf("%s %g/s burst %d", b.name, b.b.Rate, b.b.Burst))
		}
	}
	if len(parts) == 0 {
		return "off"
	}
	return strings.Join(parts, ", ")
}

// knownTools collects, per server, the tools the file names: its tools
// list and every wildcard-free SERVER__TOOL in a rule's match.
func knownTools(f *config.File) map[string][]string {
	out := map[string][]string{}
	add := func(s, t string) {
		if !slices.Contains(out[s], t) {
			out[s] = append(out[s], t)
		}
	}
	for name, s := range f.Servers {
		for _, t := range s.Tools {
			add(name, t)
		}
	}
	for _, r := range f.Policy.Rules {
		for _, m := range r.Match {
			g, err := pattern.CompileGlob(m)
			if err != nil {
				continue
			}
			lit, ok := g.Literal()
			if !ok {
				continue
			}
			srv, tool, ok := strings.Cut(lit, gateway.Separator)
			if _, known := f.Servers[srv]; ok && known && tool != "" {
				add(srv, tool)
			}
		}
	}
	for s := range out {
		slices.Sort(out[s])
	}
	return out
}
