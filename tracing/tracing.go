// Package tracing is bastion's OpenTelemetry wiring: it builds the one
// TracerProvider a process exports spans with (OTLP over HTTP to the
// operator's collector), carries W3C trace context across the hops bastion
// owns (an HTTP request, an MCP request's headers, a River job's metadata),
// and puts trace and span ids on log lines.
//
// Invariants: tracing is off unless an endpoint is configured (Config.Endpoint,
// or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT), and
// off means a Provider whose Tracer is nil, so the hot paths (the gateway's
// call loop) test one pointer and spend nothing; nothing here sets an otel
// global (no otel.SetTracerProvider, no global propagator): the Provider is
// passed explicitly; the collector is dialled through the egress guard
// (metadata addresses and bastion's own listeners are never a destination).
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/bastion-mcp/bastion/egress"
)

// The environment variables the OpenTelemetry specification defines for an
// OTLP trace exporter that New reads to decide whether tracing is on.
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envSDKDisabled    = "OTEL_SDK_DISABLED"
	envTracesExporter = "OTEL_TRACES_EXPORTER"
)

// tracesPath is OTLP/HTTP's path for traces under a base endpoint.
const tracesPath = "/v1/traces"

// ScopeName is the instrumentation scope of every bastion span.
const ScopeName = "github.com/bastion-mcp/bastion"

// Config is what a command decides about tracing. The zero value reads the
// environment only.
type Config struct {
	// Endpoint is --otlp-endpoint: the collector's OTLP/HTTP base URL
	// (http://collector:4318), to which /v1/traces is added unless the URL
	// already has a path, as for OTEL_EXPORTER_OTLP_ENDPOINT. It beats the
	// environment. "" means the environment decides.
	Endpoint string
	// ServiceName is the service.name resource attribute; "" means "bastion".
	ServiceName string
	// Version is the service.version resource attribute.
	Version string
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Policy is the egress policy the collector's client starts from (the
	// operator's deny lists, its Logger and its Refused hook are kept); New
	// opens it to the endpoint's scheme and port and to private addresses
	// (see New).
	Policy egress.Policy
}

// Provider is a process's tracing: a TracerProvider and the Tracer every
// component starts its spans with, or, when tracing is off, neither.
type Provider struct {
	sdk      *sdktrace.TracerProvider // nil when off
	tracer   trace.Tracer             // nil when off
	endpoint string
}

// Off returns the Provider of a process that does not trace.
func Off() *Provider { return &Provider{} }

// New returns the Provider cfg asks for: off (Off) when no endpoint is
// configured or the environment disables the SDK, else an SDK provider
// exporting in batches over OTLP/HTTP (protobuf) to the endpoint.
//
// The collector is the operator's destination, not one a page chose, so its
// client may reach loopback and private addresses (a sidecar, a node agent)
// on the endpoint's port, over http when the endpoint says http; it still
// dials through an egress guard, so a metadata address or one of bastion's
// own listeners is refused, as for a JWKS fetch (app's jwtVerifier).
func New(ctx context.Context, cfg Config) (*Provider, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	endpoint, err := Endpoint(cfg.Endpoint, getenv)
	if err != nil || endpoint == "" {
		return Off(), err
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("tracing: endpoint: %w", err)
	}
	client := collectorGuard(cfg, u).HTTPClient(egress.ClientOptions{Timeout: 10 * time.Second, MaxRedirects: -1})
	exp, err := otlptracehttp.New(ctx,
		otlptracehttp.WithEndpointURL(endpoint),
		otlptracehttp.WithHTTPClient(client),
	)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	name := cfg.ServiceName
	if name == "" {
		name = "bastion"
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", name)}
	if cfg.Version != "" {
		attrs = append(attrs, attribute.String("service.version", cfg.Version))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
	)
	return &Provider{sdk: tp, tracer: tp.Tracer(ScopeName), endpoint: endpoint}, nil
}

// collectorGuard is the egress guard of the collector's client: cfg's
// policy opened to the endpoint's scheme and port and to private addresses.
func collectorGuard(cfg Config, u *url.URL) *egress.Guard {
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	p := cfg.Policy
	if n, err := strconv.ParseUint(port, 10, 16); err == nil {
		p.Ports = []uint16{uint16(n)}
	}
	p.AllowHTTP = u.Scheme == "http"
	p.AllowPrivate = true
	return egress.NewGuard(p, net.DefaultResolver)
}

// Endpoint returns the OTLP/HTTP traces URL flag or the environment names,
// or "" when tracing is off: flag first (a base URL), then
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as it is), then
// OTEL_EXPORTER_OTLP_ENDPOINT (a base URL). OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none turn the environment's endpoints off, not the
// flag's.
func Endpoint(flag string, getenv func(string) string) (string, error) {
	if flag != "" {
		return withTracesPath(flag)
	}
	if strings.EqualFold(strings.TrimSpace(getenv(envSDKDisabled)), "true") ||
		strings.EqualFold(strings.TrimSpace(getenv(envTracesExporter)), "none") {
		return "", nil
	}
	if v := strings.TrimSpace(getenv(EnvTracesEndpoint)); v != "" {
		if err := checkURL(v); err != nil {
			return "", fmt.Errorf("tracing: %s: %w", EnvTracesEndpoint, err)
		}
		return v, nil
	}
	if v := strings.TrimSpace(getenv(EnvEndpoint)); v != "" {
		s, err := withTracesPath(v)
		if err != nil {
			return "", fmt.Errorf("tracing: %s: %w", EnvEndpoint, err)
		}
		return s, nil
	}
	return "", nil
}

// withTracesPath adds /v1/traces to a base endpoint that has no path.
func withTracesPath(base string) (string, error) {
	if err := checkURL(base); err != nil {
		return "", err
	}
	u, _ := url.Parse(base)
	if u.Path == "" || u.Path == "/" {
		u.Path = tracesPath
	}
	return u.String(), nil
}

// errEndpoint is why an endpoint is not usable.
var errEndpoint = errors.New("an OTLP endpoint must be an http or https URL with a host")

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%w: %w", errEndpoint, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return fmt.Errorf("%w (got %q)", errEndpoint, s)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("%w (got %q)", errEndpoint, s)
	}
	return nil
}

// Enabled reports whether p exports spans.
func (p *Provider) Enabled() bool { return p != nil && p.sdk != nil }

// Tracer is the Tracer every bastion component starts its spans with, or
// nil when tracing is off: a caller tests it once and skips the span, so
// off costs no allocation.
func (p *Provider) Tracer() trace.Tracer {
	if p == nil {
		return nil
	}
	return p.tracer
}

// TracerProvider is p's provider, or nil when tracing is off.
func (p *Provider) TracerProvider() trace.TracerProvider {
	if !p.Enabled() {
		return nil
	}
	return p.sdk
}

// Endpoint is the URL p exports to, "" when off.
func (p *Provider) Endpoint() string {
	if p == nil {
		return ""
	}
	return p.endpoint
}

// Shutdown flushes the spans not yet exported and stops the exporter. Call
// it once, on exit; ctx bounds the flush.
func (p *Provider) Shutdown(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	if err := p.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: shutdown: %w", err)
	}
	return nil
}

// ForceFlush exports every span ended so far (tests, and a stop that must
// not lose the last spans).
func (p *Provider) ForceFlush(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	return p.sdk.ForceFlush(ctx)
}

// propagator is W3C trace context, the one propagation bastion speaks. It is
// a value, not a global: nothing else is consulted.
var propagator = propagation.TraceContext{}

// Inject writes ctx's span context to c as traceparent (and tracestate).
func Inject(ctx context.Context, c propagation.TextMapCarrier) { propagator.Inject(ctx, c) }

// Extract returns ctx with the remote span context c carries, if any.
func Extract(ctx context.Context, c propagation.TextMapCarrier) context.Context {
	return propagator.Extract(ctx, c)
}

// TraceID returns the hex trace id of ctx's span, "" when there is none:
// the form the audit ledger and the log lines carry.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// Start starts a span named name as a child of ctx's span with t, or, when
// t is nil (tracing off), returns ctx and a span that does nothing without
// allocating.
func Start(ctx context.Context, t trace.Tracer, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if t == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return t.Start(ctx, name, opts...)
}
