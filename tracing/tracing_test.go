package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/slogtest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		flag string
		env  map[string]string
		want string
		bad  bool
	}{
		{name: "OffByDefault"},
		{name: "Flag", flag: "http://localhost:4318", want: "http://localhost:4318/v1/traces"},
		{name: "FlagWithPath", flag: "https://otel.example/custom/traces", want: "https://otel.example/custom/traces"},
		{name: "FlagBeatsEnv", flag: "http://a:4318", env: map[string]string{EnvEndpoint: "http://b:4318"}, want: "http://a:4318/v1/traces"},
		{name: "BaseEnv", env: map[string]string{EnvEndpoint: "http://collector:4318/"}, want: "http://collector:4318/v1/traces"},
		{name: "TracesEnvAsIs", env: map[string]string{EnvEndpoint: "http://b:4318", EnvTracesEndpoint: "http://c:4318/x"}, want: "http://c:4318/x"},
		{name: "SDKDisabled", env: map[string]string{EnvEndpoint: "http://b:4318", envSDKDisabled: "true"}},
		{name: "ExporterNone", env: map[string]string{EnvEndpoint: "http://b:4318", envTracesExporter: "none"}},
		{name: "DisabledEnvKeepsFlag", flag: "http://a:4318", env: map[string]string{envSDKDisabled: "true"}, want: "http://a:4318/v1/traces"},
		{name: "NotAURL", flag: "localhost:4318", bad: true},
		{name: "BadScheme", env: map[string]string{EnvEndpoint: "grpc://collector:4317"}, bad: true},
		{name: "Userinfo", flag: "http://u:p@collector:4318", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Endpoint(tt.flag, env(tt.env))
			if tt.bad {
				if err == nil {
					t.Fatalf("Endpoint = %q, want an error", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Endpoint = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestOffIsNil: without an endpoint the Provider is off, its Tracer nil,
// Start on a nil tracer allocates nothing, and Shutdown is a no-op.
func TestOffIsNil(t *testing.T) {
	p, err := New(context.Background(), Config{Getenv: env(nil)})
	if err != nil || p.Enabled() || p.Tracer() != nil || p.TracerProvider() != nil {
		t.Fatalf("New without an endpoint = %+v, %v; want off", p, err)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		c, s := Start(ctx, nil, "x")
		s.End()
		_ = c
	}); n != 0 {
		t.Errorf("Start with tracing off allocates %.0f times", n)
	}
	if h := Middleware(nil, nil); h(http.NotFoundHandler()) == nil {
		t.Error("Middleware(nil) returned no handler")
	}
}

// TestExportGoesThroughTheGuard: spans reach a collector on loopback over
// plain http on its port, and a collector at a metadata address is refused
// by the egress guard (nothing is sent).
func TestExportGoesThroughTheGuard(t *testing.T) {
	t.Parallel()
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" {
			posts.Add(1)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	p, err := New(ctx, Config{Endpoint: srv.URL, Getenv: env(nil)})
	if err != nil || !p.Enabled() {
		t.Fatalf("New = %v, %v", p, err)
	}
	_, s := p.Tracer().Start(ctx, "one")
	s.End()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if posts.Load() == 0 {
		t.Fatal("no export reached the collector")
	}

	m, err := New(ctx, Config{Endpoint: "http://169.254.169.254:4318", Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	_, s = m.Tracer().Start(ctx, "two")
	s.End()
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := m.ForceFlush(fctx); err == nil || !strings.Contains(err.Error(), "DNS_TARGET_PROHIBITED") && !strings.Contains(err.Error(), "prohibited") {
		t.Fatalf("export to a metadata address: %v, want the guard's refusal", err)
	}
	m.Shutdown(fctx)
}

func recorder() (*tracetest.SpanRecorder, trace.Tracer) {
	rec := tracetest.NewSpanRecorder()
	return rec, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
}

// TestMiddleware: a request's span continues the caller's traceparent,
// names the route, records the status, and the request passed on carries
// the span's own traceparent.
func TestMiddleware(t *testing.T) {
	t.Parallel()
	rec, tr := recorder()
	var seen string
	h := Middleware(tr, func(*http.Request) string { return "mcp" })(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Get("traceparent")
		w.WriteHeader(http.StatusAccepted)
	}))
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req := httptest.NewRequest("POST", "/mcp", nil)
	req.Header.Set("traceparent", parent)
	h.ServeHTTP(httptest.NewRecorder(), req)
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	if s.Name() != "POST mcp" || s.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || s.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("span %s trace %s parent %s", s.Name(), s.SpanContext().TraceID(), s.Parent().SpanID())
	}
	want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + s.SpanContext().SpanID().String() + "-01"
	if seen != want {
		t.Errorf("handler saw traceparent %q, want the span's %q", seen, want)
	}
	var status int64
	for _, kv := range s.Attributes() {
		if kv.Key == AttrStatus {
			status = kv.Value.AsInt64()
		}
	}
	if status != http.StatusAccepted {
		t.Errorf("status attribute = %d", status)
	}
}

// TestMCPMiddleware: a request runs in the trace of its HTTP header, else
// of its _meta traceparent.
func TestMCPMiddleware(t *testing.T) {
	t.Parallel()
	var got trace.SpanContext
	h := MCPMiddleware(func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
		got = trace.SpanContextFromContext(ctx)
		return nil, nil
	})
	hdr := http.Header{}
	hdr.Set("traceparent", "00-11111111111111111111111111111111-2222222222222222-01")
	h(context.Background(), "tools/call", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{}, Extra: &mcp.RequestExtra{Header: hdr}})
	if got.TraceID().String() != "11111111111111111111111111111111" {
		t.Errorf("from the header: %v", got.TraceID())
	}
	meta := mcp.Meta{"traceparent": "00-33333333333333333333333333333333-4444444444444444-01"}
	h(context.Background(), "tools/call", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Meta: meta}})
	if got.TraceID().String() != "33333333333333333333333333333333" {
		t.Errorf("from _meta: %v", got.TraceID())
	}
	h(context.Background(), "tools/call", &mcp.CallToolRequest{})
	if got.IsValid() {
		t.Errorf("a request with neither is in trace %v", got.TraceID())
	}
}

// TestWithMeta: the gateway's upstream request carries its span in _meta,
// the caller's map is not changed, and FromMeta reads it back.
func TestWithMeta(t *testing.T) {
	t.Parallel()
	_, tr := recorder()
	ctx, s := tr.Start(context.Background(), "up")
	defer s.End()
	in := mcp.Meta{"k": "v"}
	out := WithMeta(ctx, in)
	if len(in) != 1 || out["k"] != "v" || out["traceparent"] == nil {
		t.Fatalf("WithMeta = %v (input now %v)", out, in)
	}
	if sc := trace.SpanContextFromContext(FromMeta(context.Background(), out)); sc.SpanID() != s.SpanContext().SpanID() {
		t.Errorf("FromMeta = %v, want %v", sc.SpanID(), s.SpanContext().SpanID())
	}
	if got := WithMeta(context.Background(), in); len(got) != 1 {
		t.Errorf("WithMeta without a span = %v", got)
	}
	c := propagation.MapCarrier{}
	Inject(ctx, c)
	if TraceID(ctx) != s.SpanContext().TraceID().String() || TraceID(context.Background()) != "" || c.Get("traceparent") == "" {
		t.Error("TraceID or Inject disagree with the span")
	}
}

// TestLogHandler: a record logged in a span carries trace_id and span_id;
// outside one it is unchanged; the wrapper passes slogtest.
func TestLogHandler(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(NewLogHandler(slog.NewTextHandler(&buf, nil)))
	_, tr := recorder()
	ctx, s := tr.Start(context.Background(), "x")
	log.InfoContext(ctx, "inside")
	s.End()
	log.Info("outside")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "trace_id="+s.SpanContext().TraceID().String()) ||
		!strings.Contains(lines[0], "span_id="+s.SpanContext().SpanID().String()) || strings.Contains(lines[1], "trace_id") {
		t.Fatalf("log lines = %q", lines)
	}

	var rs []map[string]any
	var jbuf bytes.Buffer
	h := NewLogHandler(slog.NewJSONHandler(&jbuf, nil))
	if err := slogtest.TestHandler(h, func() []map[string]any {
		rs = rs[:0]
		for _, l := range bytes.Split(bytes.TrimSpace(jbuf.Bytes()), []byte("\n")) {
			m, err := parseJSON(l)
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, m)
		}
		return rs
	}); err != nil {
		t.Error(err)
	}
}

func parseJSON(b []byte) (map[string]any, error) {
	var m map[string]any
	err := json.Unmarshal(b, &m)
	return m, err
}
