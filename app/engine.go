package app

import (
	"context"
	"errors"
	"log/slog"

	"github.com/bastion-mcp/bastion/capture"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/egress/browserproxy"
	"github.com/bastion-mcp/bastion/engine/local"
	"github.com/bastion-mcp/bastion/fault"
)

// EngineConfig is what the browser half of the composition needs.
type EngineConfig struct {
	// Guard decides every connection the browser makes.
	Guard *egress.Guard
	// AllowPrivate lets the browser reach loopback and private targets
	// over http, and over https with their own certificates (trusted for
	// those addresses only; see browserproxy.Options.PrivateTLS). The guard
	// must have been built with Policy.AllowPrivate.
	AllowPrivate bool
	// Chrome is the browser executable; "" means capture.FindChrome().
	Chrome string
	// TrustSPKI lists extra certificate SPKI hashes the browser accepts
	// (the offline demo's site).
	TrustSPKI []string
	// Engine tunes the local engine; its Logger defaults to Logger.
	Engine local.Options
	Logger *slog.Logger
}

// Engine is the browser half of the composition: the egress proxy, the
// Chromium pool behind it and the local engine over both. `bastion review`
// uses it alone; Open builds it under review.Service.
type Engine struct {
	*local.Engine
	proxy *browserproxy.Proxy
	pool  *capture.Pool
}

// OpenEngine starts the egress proxy and the Chromium pool and returns the
// local engine over them. It fails with a typed error when the proxy
// cannot listen or no browser is installed. ctx bounds the start only.
func OpenEngine(ctx context.Context, cfg EngineConfig) (*Engine, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// RequireAuth: the shared listener serves only capture sessions, so
	// Chromium's own background traffic gets 407 and has no way out.
	proxy, err := browserproxy.New(cfg.Guard, browserproxy.Options{AllowHTTP: cfg.AllowPrivate, PrivateTLS: cfg.AllowPrivate, RequireAuth: true, Logger: cfg.Logger})
	if err != nil {
		return nil, fault.Wrap(err, fault.Unavailable, "the egress proxy could not start")
	}
	copts := capture.Options{Chrome: cfg.Chrome, ProxyAddr: proxy.Addr(), Sessions: proxy, Logger: cfg.Logger, IgnoreCertErrorsSPKIList: cfg.TrustSPKI}
	if spki := proxy.PrivateTLSSPKI(); spki != "" {
		copts.IgnoreCertErrorsSPKIList = append(copts.IgnoreCertErrorsSPKIList, spki)
	}
	pool, err := capture.NewPool(context.WithoutCancel(ctx), copts)
	if err != nil {
		proxy.Close()
		return nil, fault.Wrap(err, fault.Unavailable, "no browser found: install chromium (make deps) or set BASTION_CHROMIUM")
	}
	opts := cfg.Engine
	if opts.Logger == nil {
		opts.Logger = cfg.Logger
	}
	return &Engine{Engine: local.New(pool, cfg.Guard, opts), proxy: proxy, pool: pool}, nil
}

// Ready reports whether a browser runs, launching one if none does (the
// pool relaunches lazily after a crash): the readiness check, and the
// warm-up before serving.
func (e *Engine) Ready(ctx context.Context) error {
	if e.pool.BrowserPID() != 0 {
		return nil
	}
	return e.pool.Warm(ctx)
}

// Close stops the browser, then the proxy.
func (e *Engine) Close() error {
	return errors.Join(e.pool.Close(), e.proxy.Close())
}
