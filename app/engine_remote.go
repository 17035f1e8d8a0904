package app

import (
	"context"
	"log/slog"
	"strings"

	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/engine/remote"
	"github.com/bastion-mcp/bastion/enginehttp"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/review"
)

// EnginePoolConfig sends reviews to a pool of engines over the signed job
// API (`bastion engine serve` on other machines) instead of this process's
// browser, which then needs no Chromium.
type EnginePoolConfig struct {
	// URLs are the engines' base URLs (at least one).
	URLs []string
	// SecretsFile is a secrets file in enginehttp's format (0600,
	// "INSTALLATION-ID SECRET" lines): the line of Installation is this
	// server's identity at the engines.
	SecretsFile string
	// Installation picks the line; "" means the file's only one.
	Installation string
}

// engineRunner is what the composition needs of its engine: the review
// port, a readiness check and a close. *Engine (the local browser pool)
// and *remoteEngine implement it.
type engineRunner interface {
	review.Engine
	Ready(ctx context.Context) error
	Close() error
}

// remoteEngine is the engine pool client; it holds no resource to close.
type remoteEngine struct{ *remote.Engine }

func (remoteEngine) Close() error { return nil }

// readyName is the /readyz check's name for the engine in use.
func readyName(e engineRunner) string {
	if _, ok := e.(remoteEngine); ok {
		return "engines"
	}
	return "browser"
}

// openEnginePool reads the secrets file with enginehttp's parser and
// returns the pool client. The engines run on the operator's network, so
// every connection goes through guard's private-allowing twin
// (egress.Guard.WithPrivate, the one home for "an upstream the operator
// runs"); its deny lists and metadata denial still hold.
func openEnginePool(guard *egress.Guard, pc EnginePoolConfig, log *slog.Logger) (remoteEngine, error) {
	if len(pc.URLs) == 0 || pc.SecretsFile == "" {
		return remoteEngine{}, fault.New(fault.InvalidArgument, "an engine pool needs --engine-url and --engine-secret-file")
	}
	f, err := enginehttp.OpenSecretsFile(pc.SecretsFile, log)
	if err != nil {
		return remoteEngine{}, fault.Wrap(err, fault.InvalidArgument, "cannot use the engine secrets file: %v", err)
	}
	secrets := f.Current()
	inst := pc.Installation
	if ids := secrets.Installations(); inst == "" && len(ids) == 1 {
		inst = ids[0]
	}
	secret, ok := secrets.Lookup(inst)
	if !ok {
		return remoteEngine{}, fault.New(fault.InvalidArgument,
			"the engine secrets file has no line for installation %q (it has: %s); pass --engine-installation", inst, strings.Join(secrets.Installations(), ", "))
	}
	e, err := remote.New(remote.Options{URLs: pc.URLs, Installation: inst, Secret: secret, Guard: guard.WithPrivate(), Logger: log})
	if err != nil {
		return remoteEngine{}, err
	}
	return remoteEngine{e}, nil
}
