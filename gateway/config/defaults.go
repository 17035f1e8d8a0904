package config

import (
	"cmp"
	"time"
)

// The defaults WithDefaults fills in.
const (
	// DefaultTimeout bounds a call when neither the gateway nor the server
	// sets a timeout: one wedged upstream must never hold a caller forever.
	DefaultTimeout = 30 * time.Second
	// DefaultStartupWait is how long start-up waits for upstreams: long
	// enough for a child process to start on a loaded machine, short enough
	// that one broken upstream delays the others only briefly.
	DefaultStartupWait = 5 * time.Second
	// DefaultWasmMemoryMB caps a Wasm upstream's memory when memory_mb is
	// unset.
	DefaultWasmMemoryMB = 64
	// DefaultMaxKeys bounds the keyed rate-limit buckets.
	DefaultMaxKeys = 10000
)

// WithDefaults returns a copy of f with every gateway default filled in, so
// what the gateway runs is what the copy says: [gateway] timeout and
// startup_wait, each server's namespace, timeout and (for wasm) memory_mb,
// [ratelimit] max_keys, [inspect] mode (warn), [pin] mode (strict) and tofu
// (true). Each field's comment names its default. It is the one place these
// are decided: the gateway loop, the gate chain (gateway/gates) and
// `bastion validate` all read a File that went through it. Applying it
// twice changes nothing; f itself is never modified (the copy shares its
// lists and profiles, which nothing modifies).
//
// What the file leaves to others stays empty: a server's protocol (the
// upstream package's default revision), the ledger's segment size and
// checkpoint cadence (audit.Options), and the paths of the ledger, the
// approvals and the pins, which depend on the environment
// ($XDG_DATA_HOME) and are resolved where the gateway is composed.
func (f *File) WithDefaults() *File {
	c := *f
	c.Gateway.Timeout = Duration(f.TimeoutOr(nil))
	c.Gateway.StartupWait = Duration(f.StartupWaitOr())
	c.Servers = make(map[string]*Server, len(f.Servers))
	for name, s := range f.Servers {
		if s == nil {
			c.Servers[name] = nil // Parse refuses none; keep what a hand-built File says
			continue
		}
		d := *s
		d.Namespace = s.NamespaceOf(name)
		d.Timeout = Duration(f.TimeoutOr(s))
		if d.Kind == KindWasm && d.MemoryMB == 0 {
			d.MemoryMB = DefaultWasmMemoryMB
		}
		c.Servers[name] = &d
	}
	c.RateLimit.MaxKeys = cmp.Or(f.RateLimit.MaxKeys, DefaultMaxKeys)
	c.Inspect.Mode = cmp.Or(f.Inspect.Mode, ModeWarn)
	c.Pin.Mode = cmp.Or(f.Pin.Mode, PinStrict)
	if f.Pin.TOFU == nil {
		tofu := true
		c.Pin.TOFU = &tofu
	}
	return &c
}

// StartupWaitOr returns [gateway] startup_wait, else DefaultStartupWait.
// On a File from WithDefaults it is startup_wait itself.
func (f *File) StartupWaitOr() time.Duration {
	return time.Duration(cmp.Or(f.Gateway.StartupWait, Duration(DefaultStartupWait)))
}

// TimeoutOr returns the per-call timeout of s: its own, else the gateway's,
// else DefaultTimeout (s nil: the gateway's). On a File from WithDefaults it
// is s.Timeout itself.
func (f *File) TimeoutOr(s *Server) time.Duration {
	if s != nil && s.Timeout > 0 {
		return time.Duration(s.Timeout)
	}
	return time.Duration(cmp.Or(f.Gateway.Timeout, Duration(DefaultTimeout)))
}

// NamespaceOf returns the client-facing namespace of the server keyed name:
// its namespace, else name. On a File from WithDefaults it is s.Namespace.
func (s *Server) NamespaceOf(name string) string { return cmp.Or(s.Namespace, name) }
