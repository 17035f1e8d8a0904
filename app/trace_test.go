package app

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/bastion-mcp/bastion/audit"
	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/demo"
	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/internal/testenv"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/tracing"
)

// otlpReceiver is an OTLP/HTTP trace receiver on loopback: it decodes each
// protobuf ExportTraceServiceRequest the exporter posts and keeps its
// spans.
type otlpReceiver struct {
	srv *httptest.Server

	mu    sync.Mutex
	spans []*tracepb.Span
	got   chan struct{} // signalled (without blocking) after each export
}

func startReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{got: make(chan struct{}, 1)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want a protobuf POST to /v1/traces", http.StatusBadRequest)
			return
		}
		body, err := io.ReadAll(req.Body)
		var ex coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &ex)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range ex.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				r.spans = append(r.spans, ss.GetSpans()...)
			}
		}
		r.mu.Unlock()
		select {
		case r.got <- struct{}{}:
		default:
		}
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// received returns the spans received so far.
func (r *otlpReceiver) received() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...)
}

// provider returns tracing that exports to r, shut down with the test.
func (r *otlpReceiver) provider(t *testing.T) *tracing.Provider {
	t.Helper()
	tp, err := tracing.New(context.Background(), tracing.Config{Endpoint: r.srv.URL, Getenv: func(string) string { return "" }})
	if err != nil || !tp.Enabled() {
		t.Fatalf("tracing.New(%s) = %v, enabled %v", r.srv.URL, err, tp.Enabled())
	}
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp
}

// spanTree indexes received spans by id.
type spanTree map[string]*tracepb.Span

func treeOf(spans []*tracepb.Span) spanTree {
	m := spanTree{}
	for _, s := range spans {
		m[hex.EncodeToString(s.GetSpanId())] = s
	}
	return m
}

func (m spanTree) parent(s *tracepb.Span) *tracepb.Span {
	return m[hex.EncodeToString(s.GetParentSpanId())]
}

// named returns the spans named name.
func named(spans []*tracepb.Span, name string) []*tracepb.Span {
	var out []*tracepb.Span
	for _, s := range spans {
		if s.GetName() == name {
			out = append(out, s)
		}
	}
	return out
}

// expectParent checks that s's parent is a span named want in s's trace,
// and that it began before s and ended after it.
func (m spanTree) expectParent(t *testing.T, s *tracepb.Span, want string) *tracepb.Span {
	t.Helper()
	p := m.parent(s)
	switch {
	case p == nil:
		t.Fatalf("span %s has no received parent (parent id %x), want %s", s.GetName(), s.GetParentSpanId(), want)
	case p.GetName() != want:
		t.Fatalf("span %s's parent is %s, want %s", s.GetName(), p.GetName(), want)
	case string(p.GetTraceId()) != string(s.GetTraceId()):
		t.Fatalf("span %s is in trace %x, its parent %s in %x", s.GetName(), s.GetTraceId(), want, p.GetTraceId())
	}
	return p
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			v := kv.GetValue()
			if v.GetStringValue() != "" {
				return v.GetStringValue()
			}
			return fmt.Sprint(v.GetIntValue())
		}
	}
	return ""
}

// openTracedApp opens a started App over the demo site with tracing to r.
func openTracedApp(t *testing.T, r *otlpReceiver) *App {
	t.Helper()
	testenv.Chromium(t)
	ctx := context.Background()
	site, err := demo.StartSite(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { site.Close() })
	a, err := Open(ctx, Config{
		DataDir: t.TempDir(),
		Demo:    &Demo{Tenant: "dev", Host: demo.Host, StubAddr: demo.StubAddr, Site: site.Addr(), SPKI: site.SPKIHash()},
		Tracing: r.provider(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.WithoutCancel(ctx)) })
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return a
}

func devToken(t *testing.T, a *App) (string, principal.Principal) {
	t.Helper()
	tok, _, err := auth.NewPATIssuer(a.Store, nil, nil).Create(context.Background(), "dev", "alice", principal.AllScopes(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p, err := auth.PATVerifier(a.Store, nil)(context.Background(), tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tok, p
}

// waitJob waits for the job to settle (the service's state is the event;
// the ticker only paces the reads) and returns its status.
func waitJob(t *testing.T, a *App, p principal.Principal, job string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		res, err := a.Service.Get(ctx, p, &review.GetParams{JobID: job})
		if err != nil {
			t.Fatalf("get %s: %v", job, err)
		}
		switch res.Job.Status {
		case "completed", "failed", "cancelled":
			return res.Job.Status
		}
		select {
		case <-ctx.Done():
			t.Fatalf("job %s not settled: %s", job, res.Job.Status)
		case <-tick.C:
		}
	}
}

func jobIDOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	raw, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Job struct {
			JobID string `json:"job_id"`
		} `json:"job"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Job.JobID == "" {
		t.Fatalf("no job id in %s (%v)", raw, err)
	}
	return out.Job.JobID
}

// reviewTraced submits a one-viewport review of the demo's /pricing with
// tool over wire, waits for the job to complete, flushes the provider and
// returns the job's id and every span r received.
func reviewTraced(t *testing.T, a *App, r *otlpReceiver, base, tok string, p principal.Principal, wire, tool, requestID string) (string, []*tracepb.Span) {
	t.Helper()
	res := edgeCall(t, base, tok, wire, tool, map[string]any{
		"url": "https://" + demo.Host + "/pricing", "expected_revision": demo.Revision1, "client_request_id": requestID,
		"viewports": []string{"mobile"},
	})
	if res.IsError {
		t.Fatalf("submit with %s: %s", tool, resultText(res))
	}
	job := jobIDOf(t, res)
	if st := waitJob(t, a, p, job); st != "completed" {
		t.Fatalf("job %s ended %s", job, st)
	}
	return job, r.awaitJobSpan(t, a.Config.Tracing, job)
}

// awaitJobSpan flushes tracing until the review.job span of job has been
// received, and returns every span received by then. The job's terminal
// state is committed inside that span, so a reader can see the job settled
// a moment before the span ends and becomes exportable: the arrival of the
// span is the event, each flush a try.
func (r *otlpReceiver) awaitJobSpan(t *testing.T, tp *tracing.Provider, job string) []*tracepb.Span {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		if err := tp.ForceFlush(ctx); err != nil {
			t.Fatalf("flush waiting for job %s's review.job span: %v", job, err)
		}
		spans := r.received()
		for _, s := range named(spans, "review.job") {
			if attr(s, "bastion.job.id") == job {
				return spans
			}
		}
		select {
		case <-r.got:
		case <-time.After(50 * time.Millisecond): // the span had not ended at the flush
		case <-ctx.Done():
			t.Fatalf("job %s settled but its review.job span never arrived (got %v)", job, spanNames(spans))
		}
	}
}

// TestTraceReviewThroughEdge: a review submitted through the edge on the
// stateful wire is one trace from the HTTP request that carried the call
// through review.Service's submit, the River job (in a worker, after the
// request ended) and each capture, exported over OTLP/HTTP to a receiver.
func TestTraceReviewThroughEdge(t *testing.T) {
	t.Parallel()
	r := startReceiver(t)
	a := openTracedApp(t, r)
	tok, p := devToken(t, a)
	h, err := a.NewHTTP(ServeConfig{Addr: "127.0.0.1:0", AdminAddr: "-"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.Handler)
	t.Cleanup(srv.Close)

	// The stateful wire runs the call under the session's context (the
	// initialize request's): the trace must still be the call's request.
	job, spans := reviewTraced(t, a, r, srv.URL, tok, p, "2025-11-25", "design_review", "traced-1")
	tree := treeOf(spans)
	captures := named(spans, "engine.capture")
	if len(captures) != 1 {
		t.Fatalf("got %d engine.capture spans, want 1 (one route × one viewport); spans: %v", len(captures), spanNames(spans))
	}
	c := captures[0]
	if attr(c, "bastion.capture.route") != "/pricing" || attr(c, "bastion.capture.viewport") != "mobile" || attr(c, "bastion.capture.outcome") != "ok" {
		t.Errorf("capture span attributes = %v", c.GetAttributes())
	}
	eng := tree.expectParent(t, c, "engine.review")
	jobSpan := tree.expectParent(t, eng, "review.job")
	if attr(jobSpan, "bastion.job.id") != job {
		t.Errorf("review.job span names job %q, want %q", attr(jobSpan, "bastion.job.id"), job)
	}
	submit := tree.expectParent(t, jobSpan, "review.submit")
	edgeSpan := tree.expectParent(t, submit, "POST mcp")
	if edgeSpan.GetKind() != tracepb.Span_SPAN_KIND_SERVER || attr(edgeSpan, "http.route") != "mcp" || attr(edgeSpan, "http.response.status_code") != "200" {
		t.Errorf("edge span = kind %v, attributes %v", edgeSpan.GetKind(), edgeSpan.GetAttributes())
	}
	// The parent is the request that carried the call: it was open for the
	// whole submit (the initialize request had ended before it).
	if edgeSpan.GetStartTimeUnixNano() > submit.GetStartTimeUnixNano() || edgeSpan.GetEndTimeUnixNano() < submit.GetEndTimeUnixNano() {
		t.Errorf("the submit's edge span does not enclose it: edge [%d, %d], submit [%d, %d]",
			edgeSpan.GetStartTimeUnixNano(), edgeSpan.GetEndTimeUnixNano(), submit.GetStartTimeUnixNano(), submit.GetEndTimeUnixNano())
	}
	if len(named(spans, "engine.judge")) != 1 {
		t.Errorf("no engine.judge span: %v", spanNames(spans))
	}
}

// TestTraceGatewayCall: a governed call through the gateway on the edge is
// one trace: the call's span under the HTTP request, a child per gate, the
// upstream call and each ledger append; and the ledger's attempt and
// outcome records carry the call's trace id.
func TestTraceGatewayCall(t *testing.T) {
	t.Parallel()
	r := startReceiver(t)
	a := openTracedApp(t, r)
	tok, p := devToken(t, a)
	auditDir := t.TempDir()
	cfg, err := config.Parse("bastion.toml", fmt.Appendf(nil, `
[audit]
dir = %q
[server.review]
kind = "review"
[[policy.rule]]
name = "all"
action = "allow"
match = ["review__*"]
`, auditDir))
	if err != nil {
		t.Fatal(err)
	}
	g, err := OpenGateway(context.Background(), cfg, GatewayOptions{Review: a, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	h, err := a.NewGatewayHTTP(ServeConfig{Addr: "127.0.0.1:0", AdminAddr: "-"}, g)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.Handler)
	t.Cleanup(srv.Close)

	_, spans := reviewTraced(t, a, r, srv.URL, tok, p, "2026-07-28", "review__design_review", "traced-gw-1")
	tree := treeOf(spans)
	calls := named(spans, "gateway.tools/call")
	if len(calls) != 1 {
		t.Fatalf("got %d gateway.tools/call spans, want 1: %v", len(calls), spanNames(spans))
	}
	call := calls[0]
	tree.expectParent(t, call, "POST mcp")
	if attr(call, "bastion.decision") != "allowed" || attr(call, "bastion.server") != "review" {
		t.Errorf("call span attributes = %v", call.GetAttributes())
	}
	// No [ratelimit] is configured, so the chain has no rate-limit gate.
	children := map[string]int{}
	for _, s := range spans {
		if pp := tree.parent(s); pp == call {
			children[s.GetName()]++
		}
	}
	for name, n := range map[string]int{"gateway.gate routing": 1, "gateway.gate policy": 1, "gateway.gate pin": 1,
		"gateway.gate inspect": 1, "gateway.upstream": 1, "audit.append": 2} {
		if children[name] != n {
			t.Errorf("the call has %d %q children, want %d (children: %v)", children[name], name, n, children)
		}
	}
	// The review server behind the gateway continues the trace.
	submit := named(spans, "review.submit")
	if len(submit) != 1 {
		t.Fatalf("got %d review.submit spans, want 1", len(submit))
	}
	tree.expectParent(t, submit[0], "gateway.upstream")
	jobs := named(spans, "review.job")
	if len(jobs) != 1 {
		t.Fatalf("got %d review.job spans, want 1", len(jobs))
	}
	tree.expectParent(t, jobs[0], "review.submit")

	want := hex.EncodeToString(call.GetTraceId())
	var traced []audit.Record
	err = audit.Tail(context.Background(), auditDir, audit.TailOptions{}, func(rec audit.Record) error {
		if rec.Tool == "review__design_review" {
			traced = append(traced, rec)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(traced) != 2 {
		t.Fatalf("ledger has %d records of the call, want its attempt and its outcome", len(traced))
	}
	for _, rec := range traced {
		if rec.TraceID != want {
			t.Errorf("ledger record %d (%s) has trace_id %q, want the call span's %q", rec.Seq, rec.Decision, rec.TraceID, want)
		}
	}
	if rep, err := audit.Verify(auditDir, nil); err != nil || rep.Broken {
		t.Errorf("Verify = %+v, %v", rep, err)
	}
}

func spanNames(spans []*tracepb.Span) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.GetName()
	}
	return out
}
