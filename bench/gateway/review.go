package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/bastion-mcp/bastion/app"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/gateway/loop"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/reviewmcp"
	"github.com/bastion-mcp/bastion/upstream"
)

// noCaptures is the review engine of a service whose workers never start:
// the benchmark polls a queued job, so no capture is ever asked for.
type noCaptures struct{}

var errNoCaptures = errors.New("bench/gateway runs no captures")

func (noCaptures) Review(context.Context, engine.Request) (*design.Result, error) {
	return nil, errNoCaptures
}

func (noCaptures) Recheck(context.Context, engine.RecheckRequest) ([]design.RecheckOutcome, error) {
	return nil, errNoCaptures
}

// reviewTarget is the gateway's first upstream as `bastion serve --gateway`
// runs it: the design-review server in this process, on a review.Service
// over SQLite in a fresh data directory under workDir, its tools called as
// the caller without a session (loop.PrincipalServer.Call) and its listing
// over upstream.Pipe. The tool is the one an agent calls most,
// design_review_get, polling a queued job; the same server answers the
// direct path over a session, and the relay over upstream.Pipe.
func reviewTarget(ctx context.Context, workDir string, p principal.Principal, version string) (target, error) {
	dir, err := os.MkdirTemp(workDir, "bench-gateway-review-")
	if err != nil {
		return target{}, err
	}
	b, err := app.OpenBase(ctx, app.Config{DataDir: dir, AllowPrivate: true})
	if err != nil {
		os.RemoveAll(dir)
		return target{}, err
	}
	fail := func(err error) (target, error) {
		b.Close()
		os.RemoveAll(dir)
		return target{}, err
	}
	auth := review.TargetPolicy{Guard: b.Guard, Targets: b.Targets, AllowPrivate: true}
	svc, err := review.New(review.Deps{Store: b.Store, Engine: noCaptures{}, Authorizer: auth}, riversqlite.New(b.DB.SQL()), review.Options{})
	if err != nil {
		return fail(err)
	}
	sub, err := svc.Submit(ctx, p, &review.SubmitParams{URL: "https://127.0.0.1:9/", ClientRequestID: "bench-gateway"})
	if err != nil {
		return fail(fmt.Errorf("submitting the review to poll: %w", err))
	}
	// As app.OpenGateway wires it: the review server made as the caller,
	// its tools called in process without a session, listing over a session.
	opts := func(p principal.Principal) reviewmcp.Options {
		return reviewmcp.Options{PrincipalFrom: func(context.Context) (principal.Principal, bool) { return p, true }}
	}
	srv := reviewmcp.NewServer(svc, opts(p))
	connectUp := func(ctx context.Context) (mcp.Transport, error) { return upstream.ServeInProcess(ctx, srv) }
	asCaller := loop.PrincipalServer{
		Connect: func(ctx context.Context, p principal.Principal) (mcp.Transport, error) {
			return upstream.ServeInProcess(ctx, reviewmcp.NewServer(svc, opts(p)))
		},
		Call: func(p principal.Principal) mcp.ToolHandler { return reviewmcp.NewToolHandler(svc, opts(p)) },
	}
	return target{
		title:        "review: the design-review server in this process over SQLite, polling a queued job with design_review_get (agent hop: in-memory transport; gateway to upstream: its tool handler, as serve --gateway calls it; relay to upstream: upstream.Pipe)",
		server:       `kind = "review"`,
		tool:         "design_review_get",
		args:         map[string]any{"job_id": sub.Job.JobID},
		argRule:      "job_id",
		inProcess:    map[string]func(context.Context) (mcp.Transport, error){"echo": connectUp},
		dialUp:       connectUp,
		forPrincipal: map[string]loop.PrincipalServer{"echo": asCaller},
		direct:       own(func() (*mcp.ClientSession, error) { return connect(ctx, srv, version) }),
		close: func() {
			b.Close()
			os.RemoveAll(dir)
		},
	}, nil
}
