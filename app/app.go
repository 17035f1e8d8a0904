// Package app is the composition root of bastion's design-review server: it
// builds the egress guard, the browser egress proxy, the Chromium pool, the
// local engine, the store (SQLite, or PostgreSQL for many replicas), the targets registry, review.Service and
// its MCP server, in that order, and tears them down in reverse. `bastion
// stdio` and `bastion serve` only call it.
//
// Invariants: there is no mock or fixture anywhere in the composition, so
// every judgment comes from a real capture; the only way a URL reaches the
// browser is review.Service's Authorizer, which is the egress guard's target
// check plus the tenant's verified-host registry; the unsafe demo wiring
// (Config.Demo) is off unless a caller sets it, and it changes only where one
// stub host resolves, where its classified address is dialed and which one
// certificate the browser trusts. Under AllowPrivate the browser also trusts
// the egress proxy's own in-memory key, which the proxy presents only for
// loopback and private https destinations (browserproxy.Options.PrivateTLS).
//
// It also answers what the CLI asks about this machine and this build: the
// logger every command writes (NewLogger: text or JSON, library routine at
// DEBUG), the build's identity (ReadBuildInfo, for --version) and what a
// review needs here (Doctor, which starts the browser as OpenEngine does).
package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/store"
	"github.com/bastion-mcp/bastion/store/migration"
	"github.com/bastion-mcp/bastion/store/postgres"
	"github.com/bastion-mcp/bastion/store/sqlite"
	"github.com/bastion-mcp/bastion/targets"
	"github.com/bastion-mcp/bastion/tracing"
)

// Config is what a command decides about the composition. The zero value
// (plus a Logger) is the production default.
type Config struct {
	// DataDir holds the store; "" means sqlite.DefaultDataDir().
	DataDir string
	// AllowPrivate lets the local operator's agent review a development
	// server: the guard allows loopback and private addresses (metadata
	// endpoints stay denied), and a target whose every address is private
	// needs no ownership proof. Public targets still need one.
	AllowPrivate bool
	// Chrome is the browser executable; "" means capture.FindChrome().
	Chrome string
	// Logger receives every log record; nil discards. Never stdout for
	// stdio: stdout is the protocol.
	Logger *slog.Logger
	// Review tunes the service; zero fields mean review's defaults.
	Review review.Options
	// Demo, when set, wires the offline demo. Never set it in production.
	Demo *Demo
	// EnginePool, when set, sends reviews to remote engines instead of
	// this process's browser (app/engine_remote.go); Chrome is then unused.
	EnginePool *EnginePoolConfig

	// DatabaseURL, when set, puts the store (and River's jobs) on
	// PostgreSQL instead of SQLite in DataDir, so several replicas can share
	// it. It connects as the serving role, which must not own the tables
	// (see store/postgres).
	DatabaseURL string
	// MigrateURL connects as the owner of bastion's tables, which migrates
	// them and grants the serving role DML only (postgres.Options.MigrateURL).
	MigrateURL string
	// UnsafeAllowOwnerRole lets the serving role own the tables, which makes
	// row-level security decorative. Development on a one-user database only.
	UnsafeAllowOwnerRole bool

	// Tracing is the process's tracing (tracing.New); nil means off. The
	// command that made it shuts it down: the App only starts spans with it.
	Tracing *tracing.Provider

	// egressRefused is the guard's Refused hook, set by Open to count
	// refusals on the App's registry.
	egressRefused func(fault.Code)
}

// Store is everything the composition keeps: jobs, targets, personal
// access tokens and feedback events, on SQLite or PostgreSQL.
type Store interface {
	store.Store
	targets.Store
	auth.PATStore
	store.FeedbackStore
	Close() error
}

// Demo is the offline demo's unsafe wiring: Host resolves to StubAddr (a
// public address, classified like any other), the connection to
// StubAddr:443 is opened to Site instead (egress.Policy.UnsafeDialOverride),
// the browser trusts the one certificate whose SPKI hash is SPKI, and the
// local tenant has Host pre-verified.
type Demo struct {
	// Tenant has Host pre-verified; "" means LocalTenant.
	Tenant   string
	Host     string
	StubAddr netip.Addr
	Site     netip.AddrPort
	SPKI     string
}

// LocalTenant is the tenant of the local principal (principal.Local()).
const LocalTenant = "local"

// Base is the part of the composition every command needs: the store, the
// egress guard and the targets registry. It launches no browser.
type Base struct {
	Config Config
	// Store is DB or PG, whichever is open.
	Store Store
	// DB is the SQLite store, nil on PostgreSQL.
	DB *sqlite.DB
	// PG is the PostgreSQL store, nil on SQLite.
	PG      *postgres.DB
	Guard   *egress.Guard
	Targets *targets.Registry
	Log     *slog.Logger
}

// OpenBase opens (creating and migrating) the store in cfg.DataDir, or on
// cfg.DatabaseURL, and builds the guard and the registry over it.
func OpenBase(ctx context.Context, cfg Config) (*Base, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	b := &Base{Log: cfg.Logger}
	if cfg.DatabaseURL != "" {
		pg, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Options{
			MigrateURL: cfg.MigrateURL, UnsafeAllowOwnerRole: cfg.UnsafeAllowOwnerRole, Logger: cfg.Logger,
		})
		if err != nil {
			return nil, postgresOpenError(err)
		}
		b.Store, b.PG = pg, pg
		return b.finish(ctx, cfg)
	}
	if cfg.DataDir == "" {
		d, err := sqlite.DefaultDataDir()
		if err != nil {
			return nil, fault.Wrap(err, fault.InternalError, "no data directory: pass --data-dir")
		}
		cfg.DataDir = d
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fault.Wrap(err, fault.InvalidArgument, "bad data directory %q", cfg.DataDir)
	}
	cfg.DataDir = dir
	db, err := sqlite.Open(ctx, sqlite.PathIn(dir), sqlite.Options{Logger: cfg.Logger})
	if err != nil {
		return nil, sqliteOpenError(err, dir)
	}
	b.Store, b.DB = db, db
	return b.finish(ctx, cfg)
}

// sqliteOpenError says why the store in dir could not be opened and what
// fixes it; the cause (the OS's or SQLite's error) stays attached for the
// operator.
func sqliteOpenError(err error, dir string) error {
	var fix string
	switch {
	case errors.Is(err, sqlite.ErrFull):
		fix = "its file system is full: free space there, or pass --data-dir on another disk"
	case errors.Is(err, sqlite.ErrNotWritable):
		fix = "it is not writable by this user (a read-only file system or permissions): make it writable, or pass --data-dir with a writable directory"
	case errors.Is(err, migration.ErrChanged):
		fix = "an applied migration differs from this binary's: run the binary that made this store, or pass --data-dir for a new one"
	default:
		fix = "see the cause; --data-dir chooses another directory"
	}
	return fault.Wrap(err, fault.Unavailable, "cannot open the store in %s: %s", dir, fix).WithNext(fault.None)
}

// insufficientPrivilege is PostgreSQL's SQLSTATE for a missing privilege.
const insufficientPrivilege = "42501"

// postgresOpenError says why the PostgreSQL store could not be opened and
// which flag fixes it; the cause (never the URL: pgx's errors name host,
// user and database, not the password) stays attached for the operator.
func postgresOpenError(err error) error {
	var pe *pgconn.PgError
	var ce *pgconn.ConnectError
	switch {
	case errors.Is(err, postgres.ErrUnsafeRole):
		return fault.Wrap(err, fault.InvalidArgument, "the database role bypasses row-level security: serve as a role that owns no table (bastion's CreateAppRole) and migrate with --migrate-url")
	case errors.Is(err, postgres.ErrMigrationsPending):
		return fault.Wrap(err, fault.InvalidArgument, "the PostgreSQL schema is behind this binary and the serving role does not migrate: start once with --migrate-url (the owner role's URL), which also grants the serving role what it needs")
	case errors.Is(err, postgres.ErrMigrationChanged):
		return fault.Wrap(err, fault.InvalidArgument, "an applied PostgreSQL migration differs from this binary's: run the binary that migrated this database")
	case errors.As(err, &pe) && pe.Code == insufficientPrivilege:
		return fault.Wrap(err, fault.InvalidArgument, "the database role lacks a privilege on bastion's schema: start once with --migrate-url (the owner role's URL) so it grants the serving role what it needs")
	case errors.As(err, &ce):
		return fault.Wrap(err, fault.Unavailable, "cannot connect to PostgreSQL: check --database-url (host, port, user, password, database) and that the server accepts connections").WithNext(fault.None)
	}
	return fault.Wrap(err, fault.Unavailable, "cannot open the PostgreSQL store: see the cause").WithNext(fault.None)
}

// finish builds the guard and the registry over the open store.
func (b *Base) finish(ctx context.Context, cfg Config) (*Base, error) {
	b.Config = cfg
	policy := egress.Policy{AllowPrivate: cfg.AllowPrivate, Logger: cfg.Logger, Refused: cfg.egressRefused}
	var resolver egress.Resolver = net.DefaultResolver
	if d := cfg.Demo; d != nil {
		resolver = egress.StaticResolver{d.Host: {d.StubAddr}}.Over(resolver)
		policy.UnsafeDialOverride = map[netip.AddrPort]netip.AddrPort{netip.AddrPortFrom(d.StubAddr, 443): d.Site}
	}
	guard := egress.NewGuard(policy, resolver)
	b.Guard = guard
	b.Targets = targets.NewRegistry(b.Store, net.DefaultResolver, guard.HTTPClient(egress.ClientOptions{}), nil, targets.Options{})
	if d := cfg.Demo; d != nil {
		tenant := d.Tenant
		if tenant == "" {
			tenant = LocalTenant
		}
		if err := b.seedDemo(ctx, tenant, d.Host); err != nil {
			b.Store.Close()
			return nil, err
		}
	}
	return b, nil
}

// seedDemo records host as verified for tenant, for a day. Only the demo
// does this: everyone else proves ownership (bastion targets).
func (b *Base) seedDemo(ctx context.Context, tenant, host string) error {
	tok := make([]byte, 16)
	rand.Read(tok)
	now := time.Now()
	err := b.Store.TargetPut(ctx, targets.Target{
		Tenant: tenant, Host: host, Token: hex.EncodeToString(tok), Method: "demo",
		CreatedAt: now, VerifiedAt: now, ExpiresAt: now.Add(24 * time.Hour),
	})
	if err != nil {
		return fmt.Errorf("app: seed the demo target: %w", err)
	}
	return nil
}

// Close closes the store.
func (b *Base) Close() error { return b.Store.Close() }

// Ping reports whether the store answers.
func (b *Base) Ping(ctx context.Context) error {
	if b.PG != nil {
		return b.PG.Ping(ctx)
	}
	return b.DB.SQL().PingContext(ctx)
}

// Migrated reports whether the store's schema is the one this binary
// expects, for readiness.
func (b *Base) Migrated(ctx context.Context) error {
	if b.PG != nil {
		return b.PG.Migrated(ctx)
	}
	return b.DB.Migrated(ctx)
}

// App is the whole design-review server. Create it with Open, run its jobs
// with Start, serve it with Serve, and Close it.
type App struct {
	*Base
	Service *review.Service
	// Registry holds the process's metrics (app/metrics.go): the review
	// service's and the engine's here; the gateway and the edge served
	// with this App register on it too.
	Registry *prometheus.Registry

	engine  engineRunner // the local browser pool, or the engine pool client (engine_remote.go)
	started bool
}

// Open builds the whole composition. It fails with a typed error when the
// store cannot be opened or no browser is installed.
func Open(ctx context.Context, cfg Config) (*App, error) {
	reg := newRegistry()
	refused, err := egressBlocks(reg)
	if err != nil {
		return nil, fault.Wrap(err, fault.InternalError, "the egress metrics could not be registered")
	}
	if _, err := jwksFetches(reg); err != nil {
		return nil, fault.Wrap(err, fault.InternalError, "the JWKS metrics could not be registered")
	}
	cfg.egressRefused = refused
	b, err := OpenBase(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cfg = b.Config
	a := &App{Base: b, Registry: reg}
	met, err := newReviewMetrics(a.Registry)
	if err != nil {
		return nil, fault.Wrap(err, fault.InternalError, "the review metrics could not be registered")
	}
	ok := false
	defer func() {
		if !ok {
			a.closeParts()
		}
	}()
	ecfg := EngineConfig{Guard: b.Guard, AllowPrivate: cfg.AllowPrivate, Chrome: cfg.Chrome, Logger: cfg.Logger}
	ecfg.Engine.Observer = met
	ecfg.Engine.Tracer = cfg.Tracing.Tracer()
	if cfg.Demo != nil {
		ecfg.TrustSPKI = []string{cfg.Demo.SPKI}
	}
	if cfg.EnginePool != nil {
		if a.engine, err = openEnginePool(b.Guard, *cfg.EnginePool, cfg.Logger); err != nil {
			return nil, err
		}
	} else {
		local, err := OpenEngine(ctx, ecfg)
		if err != nil {
			return nil, err
		}
		a.engine = local
		if err := registerPool(a.Registry, local.pool); err != nil {
			return nil, fault.Wrap(err, fault.InternalError, "the browser pool's metrics could not be registered")
		}
	}
	eng := a.engine
	auth := review.TargetPolicy{Guard: b.Guard, Targets: b.Targets, AllowPrivate: cfg.AllowPrivate}
	deps := review.Deps{Store: b.Store, Engine: eng, Authorizer: auth, Logger: cfg.Logger, Metrics: met, Tracer: cfg.Tracing.Tracer()}
	if b.PG != nil {
		a.Service, err = review.New(deps, riverpgxv5.New(b.PG.Pool()), cfg.Review)
	} else {
		a.Service, err = review.New(deps, riversqlite.New(b.DB.SQL()), cfg.Review)
	}
	if err != nil {
		cfg.Logger.Error("app: the review service could not start", "err", err)
		return nil, fault.Wrap(err, fault.InternalError, "the review service could not start")
	}
	ok = true
	return a, nil
}

// Start runs the service's job workers and sweeper in this process. Jobs a
// killed process left running are picked up again here.
func (a *App) Start(ctx context.Context) error {
	if err := a.Service.Start(ctx); err != nil {
		return fault.Wrap(err, fault.Unavailable, "the job workers could not start")
	}
	a.started = true
	return nil
}

// Close stops the workers (running jobs are cancelled when ctx ends and are
// resumed by the next Start on the same data directory), then the browser,
// the proxy and the store.
func (a *App) Close(ctx context.Context) error {
	var err error
	if a.started {
		err = a.Service.Stop(ctx)
		a.started = false
	}
	return errors.Join(err, a.closeParts())
}

func (a *App) closeParts() error {
	var errs []error
	if a.engine != nil {
		errs = append(errs, a.engine.Close())
	}
	errs = append(errs, a.Base.Close())
	return errors.Join(errs...)
}
