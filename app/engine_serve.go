package app

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/bastion-mcp/bastion/edge"
	"github.com/bastion-mcp/bastion/enginehttp"
	"github.com/bastion-mcp/bastion/fault"
)

// EngineServeConfig is what `bastion engine serve` decides.
type EngineServeConfig struct {
	// Listen is the job API's address (default 127.0.0.1:8787, loopback).
	Listen string
	// SecretsFile is the installations' secrets file (required).
	SecretsFile string
	// Timeouts bound each connection; zero fields mean edge's defaults.
	Timeouts edge.Timeouts
	// Listening, if non-nil, is called with the base URL once bound.
	Listening func(baseURL string)
}

// RunEngineServe is `bastion engine serve`: it reads the secrets file,
// binds the listener, opens the composition in cfg (the same store, River
// jobs and browser pool as bastion serve), starts the job workers and
// serves the signed job API (enginehttp) until ctx ends, then stops
// gracefully. Each installation's jobs are review.Service jobs of its own
// tenant, so its verified hosts (bastion targets --tenant ID) decide what
// it may have reviewed.
func RunEngineServe(ctx context.Context, cfg Config, ec EngineServeConfig) error {
	if ec.Listen == "" {
		ec.Listen = "127.0.0.1:8787"
	}
	if ec.SecretsFile == "" {
		return fault.New(fault.InvalidArgument, "--secrets is required: a file of INSTALLATION-ID SECRET lines (bastion engine secret rotate makes one)")
	}
	secrets, err := enginehttp.OpenSecretsFile(ec.SecretsFile, cfg.Logger)
	if err != nil {
		return fault.Wrap(err, fault.InvalidArgument, "cannot use the secrets file: %v", err)
	}
	ln, err := net.Listen("tcp", ec.Listen)
	if err != nil {
		return listenError(err, ec.Listen, "--listen")
	}
	defer ln.Close()
	a, err := Open(ctx, cfg)
	if err != nil {
		return err
	}
	stop := func() error {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), StopGrace)
		defer cancel()
		return a.Close(stopCtx)
	}
	if err := a.Start(ctx); err != nil {
		return errors.Join(err, stop())
	}
	// The job API is never a review target, even under --allow-private.
	defer a.Guard.ExcludeListener(ln.Addr())()
	base := "http://" + ln.Addr().String()
	h := enginehttp.NewHandler(a.Service, enginehttp.Options{
		Secrets: secrets.Current, Logger: a.Log, BaseURL: base,
		Ready: []func(context.Context) error{a.Ping, a.Migrated, a.engine.Ready},
	})
	srv := edge.NewServer(ln.Addr().String(), h, ec.Timeouts)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	a.Log.Info("bastion engine serve: listening", "url", base, "installations", len(secrets.Current().Installations()))
	if ec.Listening != nil {
		ec.Listening(base)
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
		serveErr = fault.Wrap(serveErr, fault.Unavailable, "the listener failed")
	}
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultDrainTimeout)
	defer cancel()
	if err := srv.Shutdown(drainCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		serveErr = errors.Join(serveErr, err)
	}
	a.Log.Info("bastion engine serve: stopped")
	return errors.Join(serveErr, stop())
}
