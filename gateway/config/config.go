// Package config reads the gateway's part of bastion.toml: the upstream
// servers, the policy rules and profiles, rate limits, inspection,
// pinning, and where the audit ledger, the approvals and the pins are kept.
// File.WithDefaults is the one place the gateway's defaults are decided.
//
// Invariants: decoding is strict, so an unknown key (a typo that would
// silently disable a control) is an error naming its line and column; every
// glob and regular expression is compiled while loading, so a file that
// loads cannot fail later on a pattern; an explicit empty list where "any"
// would be the omitted meaning (match = []) is an error rather than a rule
// that silently never (or always) applies; a missing file is a readable
// error, never a default configuration. Load returns a value that is never
// modified afterwards (WithDefaults returns a copy).
//
// The edge and the store are configured by `bastion serve`'s flags, not
// here; a table this package does not declare is an unknown key.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	toml "github.com/pelletier/go-toml/v2"
)

// File is the decoded configuration. The TOML layout, by example:
//
//	[gateway]
//	profile = "readonly"          # active gateway-wide profile (optional)
//	timeout = "30s"               # default per-call upstream timeout
//	startup_wait = "5s"           # how long start-up waits for upstreams
//	max_in_flight_per_principal = 256  # calls in flight per principal (default scales with the CPUs)
//	in_flight = { "acme/ci-bot" = 1024 }  # per-principal bounds, "TENANT/ID"
//
//	[server.github]
//	kind = "stdio"                # review | stdio | http | sse | wasm
//	command = "github-mcp"
//	args = ["stdio"]
//	env = { GITHUB_TOKEN = "env:GH_TOKEN" }   # literal, env:NAME or file:PATH
//	namespace = "gh"              # client-facing prefix, default the server key
//	tools = ["create_issue"]      # tools this server is expected to offer (for validate)
//	optional = true               # the gateway is ready without it (default false)
//
//	[[policy.rule]]
//	name = "no-delete-prod"
//	action = "deny"               # allow | deny | approve
//	match = ["github__delete_*"]  # globs on SERVER__TOOL (SERVER is the [server.X] key)
//	args = [{ path = "name", glob = "prod-*" }]
//
//	[profiles.readonly]
//	tools = ["*__get_*", "*__list_*"]
//	deny = ["*__delete_*"]
//
//	[ratelimit]
//	global = { rate = 100.0, burst = 200 }
//	per_principal = { rate = 5.0, burst = 10 }
//	per_tool = { rate = 20.0, burst = 40 }
//
//	[inspect]
//	mode = "enforce"              # off | warn | enforce
//	[[inspect.pattern]]
//	name = "acme_key"
//	kind = "secret"               # secret | injection
//	regex = 'acme_sk_[0-9a-f]{8}'
//
//	[pin]
//	mode = "strict"               # strict | warn
type File struct {
	Gateway   Gateway            `toml:"gateway"`
	Servers   map[string]*Server `toml:"server"`
	Policy    Policy             `toml:"policy"`
	Profiles  map[string]Profile `toml:"profiles"`
	RateLimit RateLimit          `toml:"ratelimit"`
	Inspect   Inspect            `toml:"inspect"`
	Pin       Pin                `toml:"pin"`
	Audit     Audit              `toml:"audit"`
	Approvals Approvals          `toml:"approvals"`
	Pins      Pins               `toml:"pins"`
}

// Gateway holds gateway-wide settings.
type Gateway struct {
	// Profile is the active gateway-wide profile; empty means none.
	Profile string `toml:"profile"`
	// Timeout is the default per-call upstream timeout; WithDefaults sets
	// zero to DefaultTimeout (there is no "no timeout").
	Timeout Duration `toml:"timeout"`
	// StartupWait bounds how long start-up waits for the upstreams' first
	// sessions before serving the ones that are up; WithDefaults sets zero
	// to DefaultStartupWait. An upstream not up by then is served once it
	// connects (clients get tools/list_changed).
	StartupWait Duration `toml:"startup_wait"`
	// MaxInFlightPerPrincipal bounds one principal's calls in flight at the
	// HTTP edge (429 past it); zero means the edge's default, which scales
	// with the machine (edge.DefaultMaxInFlightPerPrincipal: 32 per CPU, at
	// least 64), so one agent fanning out is served and only a flood is
	// refused. At most edge.MaxInFlightPerPrincipalCap.
	MaxInFlightPerPrincipal int `toml:"max_in_flight_per_principal"`
	// InFlight gives named principals, keyed "TENANT/ID", a bound of their
	// own in place of MaxInFlightPerPrincipal (a busy automation account
	// more, a shared one less).
	InFlight map[string]int `toml:"in_flight"`
}

// The upstream kinds.
const (
	KindReview = "review" // the in-process design-review server
	KindStdio  = "stdio"
	KindHTTP   = "http" // Streamable HTTP
	KindSSE    = "sse"  // legacy HTTP+SSE
	KindWasm   = "wasm" // WASI preview 1 module speaking stdio, under wazero
)

// Server is one upstream, [server.NAME].
type Server struct {
	Kind string `toml:"kind"`
	// Namespace prefixes the server's tools for clients (NAMESPACE__tool);
	// WithDefaults sets empty to the server's key.
	Namespace string `toml:"namespace"`
	// Unprefixed serves the server's tools and prompts under their own
	// names, without NAMESPACE__ (for a gateway in front of one server that
	// clients must see unchanged); a collision with another server's name
	// is still refused at start. Policy globs still see SERVER__TOOL.
	Unprefixed bool `toml:"unprefixed"`
	// Profile is a profile every call to this server must also pass.
	Profile string `toml:"profile"`
	// Tools lists tool names the operator expects this server to offer.
	// Only `bastion validate` reads it (to print their effective policy);
	// it grants nothing.
	Tools []string `toml:"tools"`
	// Timeout overrides the gateway's per-call timeout; WithDefaults sets
	// zero to the gateway's.
	Timeout Duration `toml:"timeout"`
	// Optional marks a server the gateway is complete without: while it is
	// unavailable /readyz stays ready (status "degraded", naming it) and
	// `bastion validate` warns instead of failing. Either way the gateway
	// serves the servers that are up, hides this one's tools and refuses
	// calls to it until it connects.
	Optional bool `toml:"optional"`
	// Protocol is the MCP revision offered to the server: "2025-11-25"
	// or "2026-07-28"; empty (left so by WithDefaults) is the upstream
	// package's default revision, 2025-11-25. An http or in-process server also gets
	// a 2026-07-28 session beside its default one, for clients on that
	// revision; a stdio or wasm server is one process, never started twice,
	// so it speaks only this revision and 2026-07-28 clients reach a
	// 2025-11-25 one through the gateway's bridge.
	Protocol string `toml:"protocol"`

	// stdio and wasm
	Command string         `toml:"command"` // stdio only
	Args    []string       `toml:"args"`
	Env     map[string]Ref `toml:"env"` // the child's whole environment besides PATH

	// http and sse
	URL     string         `toml:"url"`
	Headers map[string]Ref `toml:"headers"` // per-upstream credentials, e.g. Authorization
	// AllowPrivate lets the egress guard reach this server on a loopback or
	// private address, over http (metadata endpoints stay denied). Off, an
	// upstream must be a public https server like any other destination.
	AllowPrivate bool `toml:"allow_private"`

	// wasm
	Wasm     string   `toml:"wasm"`      // path of the .wasm module
	MemoryMB int      `toml:"memory_mb"` // memory cap; WithDefaults sets zero to DefaultWasmMemoryMB
	ReadOnly []string `toml:"readonly"`  // host directories granted read-only; none by default
}

// Policy is [policy]: an ordered list of rules.
type Policy struct {
	Rules []Rule `toml:"rule"`
}

// The rule actions.
const (
	ActionAllow   = "allow"
	ActionDeny    = "deny"
	ActionApprove = "approve"
)

// Rule is one [[policy.rule]]. A list left out means "any"; an explicit
// empty list is an error.
type Rule struct {
	Name   string `toml:"name"`
	Action string `toml:"action"`
	// Reason is shown with a denial or an approval request.
	Reason string `toml:"reason"`
	// Match globs SERVER__TOOL, where SERVER is the [server.X] key (not the
	// namespace, so renaming a namespace never changes policy).
	Match []string `toml:"match"`
	// Principals globs the caller's "tenant/id".
	Principals []string `toml:"principals"`
	// Scopes the caller must all hold.
	Scopes []string `toml:"scopes"`
	// Roles of which the caller must hold at least one.
	Roles []string `toml:"roles"`
	// Profiles: the rule applies only while one of them is active.
	Profiles []string `toml:"profiles"`
	// Args are argument conditions, all of which must hold.
	Args []ArgRule `toml:"args"`
}

// ArgRule is one condition on a JSON path of the call's arguments. Exactly
// one operator is set.
type ArgRule struct {
	// Path is dotted object keys with [n] array indexes and [*] for "any
	// element": "repo.owner", "files[0].path", "labels[*]".
	Path   string  `toml:"path"`
	Equals any     `toml:"equals"` // a string, integer, float or boolean
	Glob   *string `toml:"glob"`
	Regex  *string `toml:"regex"` // RE2, compiled at load, size-limited
	Prefix *string `toml:"prefix"`
	// Exists true: the path holds a non-null value; false: it does not.
	Exists *bool `toml:"exists"`
	// IgnoreCase folds case for equals (strings), glob and prefix.
	IgnoreCase bool `toml:"ignore_case"`
	// CleanPath compares string values after path.Clean, so
	// "/etc/../etc/passwd" meets prefix "/etc/" and "./a//b" equals "a/b".
	CleanPath bool `toml:"clean_path"`
}

// Profile is a named mask, [profiles.NAME]: while active, a tool must match
// one of Tools (all tools if Tools is left out) and none of Deny. Globs are
// on SERVER__TOOL.
type Profile struct {
	Tools []string `toml:"tools"`
	Deny  []string `toml:"deny"`
}

// RateLimit is [ratelimit]; a bucket left out is off.
type RateLimit struct {
	Global       *Bucket `toml:"global"`
	PerPrincipal *Bucket `toml:"per_principal"`
	PerTool      *Bucket `toml:"per_tool"`
	// MaxKeys bounds how many per-principal and per-tool buckets are kept
	// each; WithDefaults sets zero to DefaultMaxKeys.
	MaxKeys int `toml:"max_keys"`
}

// Bucket is a token bucket: Rate tokens a second, up to Burst.
type Bucket struct {
	Rate  float64 `toml:"rate"`
	Burst int     `toml:"burst"`
}

// The inspection modes.
const (
	ModeOff     = "off"
	ModeWarn    = "warn"
	ModeEnforce = "enforce"
)

// Inspect is [inspect].
type Inspect struct {
	// Mode is off, warn or enforce; WithDefaults sets empty to warn, so a
	// forgotten key still reports.
	Mode string `toml:"mode"`
	// Disable names built-in detectors to turn off (e.g. "generic_secret").
	Disable  []string  `toml:"disable"`
	Patterns []Pattern `toml:"pattern"`
}

// Pattern is an operator-defined detector.
type Pattern struct {
	Name  string `toml:"name"`
	Kind  string `toml:"kind"` // "secret" or "injection"
	Regex string `toml:"regex"`
}

// The pin modes.
const (
	PinStrict = "strict"
	PinWarn   = "warn"
)

// Pin is [pin].
type Pin struct {
	// Mode is strict (drifted tools hidden and denied, new tools held) or
	// warn (both allowed with a warning); WithDefaults sets empty to strict.
	Mode string `toml:"mode"`
	// TOFU, when true, pins a server's tools on its first connect; false
	// holds every tool until `bastion pin approve`. WithDefaults sets nil
	// to true.
	TOFU *bool `toml:"tofu"`
}

// Duration is a time.Duration written as a Go duration string ("30s").
type Duration time.Duration

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q (write e.g. \"30s\" or \"1m\")", b)
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", b)
	}
	*d = Duration(v)
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// MaxFileSize bounds a configuration file.
const MaxFileSize = 4 << 20

// Load reads and validates the file at path.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &Error{File: path, Msg: "configuration file not found (pass --config FILE)"}
	}
	if err != nil {
		return nil, &Error{File: path, Msg: "cannot read configuration: " + err.Error()}
	}
	return Parse(path, data)
}

// Parse decodes and validates data; name labels errors.
func Parse(name string, data []byte) (*File, error) {
	if len(data) > MaxFileSize {
		return nil, &Error{File: name, Msg: fmt.Sprintf("configuration is larger than %d bytes", MaxFileSize)}
	}
	var f File
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, decodeError(name, err)
	}
	if errs := validate(&f, data); len(errs) > 0 {
		for _, e := range errs {
			e.File = name
		}
		return nil, errs
	}
	return &f, nil
}

// Error is one configuration problem. Line and Column are 1-based; zero
// means the position is not known; an empty File means the file is not
// known either.
type Error struct {
	File         string
	Line, Column int
	Key          string // dotted key, when known
	Msg          string
}

func (e *Error) Error() string {
	pos := e.File
	if e.Line > 0 {
		pos += fmt.Sprintf(":%d", e.Line)
		if e.Column > 0 {
			pos += fmt.Sprintf(":%d", e.Column)
		}
	}
	// A problem found after loading (gates.Compile's) may not know the
	// file; it then starts with the key.
	if pos != "" {
		pos += ": "
	}
	if e.Key != "" {
		return pos + e.Key + ": " + e.Msg
	}
	return pos + e.Msg
}

// Errors is every problem found in one file, in file order where known.
type Errors []*Error

func (es Errors) Error() string {
	var b bytes.Buffer
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap lets errors.As find each *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

func decodeError(name string, err error) error {
	var sm *toml.StrictMissingError
	if errors.As(err, &sm) {
		var es Errors
		for i := range sm.Errors {
			de := &sm.Errors[i]
			row, col := de.Position()
			es = append(es, &Error{File: name, Line: row, Column: col, Key: keyString(de.Key()),
				Msg: "unknown key (a typo here would silently disable a control)"})
		}
		return es
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return &Error{File: name, Line: row, Column: col, Key: keyString(de.Key()), Msg: de.Error()}
	}
	return &Error{File: name, Msg: err.Error()}
}

func keyString(k toml.Key) string {
	var b bytes.Buffer
	for i, p := range k {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}
