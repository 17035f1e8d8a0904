package loop

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/upstream"
)

// Spec converts the configured server keyed name into an upstream.Spec.
// An in-process server (kind review) needs connect, which returns a fresh
// transport to it per session; other kinds ignore it.
func Spec(f *config.File, name string, connect func(context.Context) (mcp.Transport, error)) (upstream.Spec, error) {
	s, ok := f.Servers[name]
	if !ok {
		return upstream.Spec{}, fmt.Errorf("loop: no server %q in the configuration", name)
	}
	spec := upstream.Spec{Name: name, Timeout: f.TimeoutOr(s), Args: s.Args, ProtocolVersion: s.Protocol}
	switch s.Kind {
	case config.KindReview:
		if connect == nil {
			return upstream.Spec{}, fmt.Errorf("loop: server %s: the in-process server is not available", name)
		}
		spec.Kind, spec.Connect = upstream.InProcess, connect
	case config.KindStdio:
		spec.Kind, spec.Command = upstream.Stdio, s.Command
	case config.KindHTTP:
		spec.Kind, spec.URL = upstream.HTTP, s.URL
	case config.KindSSE:
		spec.Kind, spec.URL = upstream.SSE, s.URL
	case config.KindWasm:
		spec.Kind, spec.Module, spec.MemoryMB, spec.ReadOnly = upstream.Wasm, s.Wasm, s.MemoryMB, s.ReadOnly
	default:
		return upstream.Spec{}, fmt.Errorf("loop: server %s: unknown kind %q", name, s.Kind)
	}
	if len(s.Env) > 0 {
		spec.Env = map[string]upstream.Value{}
		for k, v := range s.Env {
			spec.Env[k] = v
		}
	}
	if len(s.Headers) > 0 {
		spec.Headers = map[string]upstream.Value{}
		for k, v := range s.Headers {
			spec.Headers[k] = v
		}
	}
	return spec, nil
}

// StandardDialer opens each configured server with upstream.New, whose
// supervisor connects in the background (Conn.WaitFirst or Session wait for
// it). inProcess supplies the transports of in-process
// servers by key (the review server); base holds the shared dependencies
// (logger, egress guard, Wasm cache, backoff); its Events is replaced.
func StandardDialer(f *config.File, base upstream.Deps, inProcess map[string]func(context.Context) (mcp.Transport, error)) Dialer {
	return func(ctx context.Context, name string, ev upstream.Events) (*upstream.Conn, error) {
		spec, err := Spec(f, name, inProcess[name])
		if err != nil {
			return nil, err
		}
		deps := base
		deps.Events = ev
		if f.Servers[name].AllowPrivate && deps.Guard != nil {
			deps.Guard = deps.Guard.WithPrivate()
		}
		return upstream.New(ctx, spec, deps)
	}
}
