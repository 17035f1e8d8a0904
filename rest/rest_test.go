package rest_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/rest"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/review/reviewtest"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

var allScopes = principal.AllScopes()

func TestReviewRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{start: true, eng: &reviewtest.Engine{Result: sampleResult(),
		Outs: []design.RecheckOutcome{{FindingID: "f_001", Outcome: design.Passed, Reason: "ratio 7.1"}}}})
	e.verify(t, "acme", "preview.example.com")
	tok := e.token(t, "acme", allScopes...)

	// Submit with the key as a header.
	sub := e.do(t, req{method: "POST", path: "/api/v1/reviews", token: tok, body: submitBody, header: keyHeader("key-round-0001")}).must(t, 202).conforms(t, "SubmitResult")
	id := sub.str("job", "job_id")
	if !strings.HasPrefix(id, "job_") || sub.str("job", "status") != "queued" || sub.at("job", "reused") != false {
		t.Fatalf("submit = %s", sub.raw)
	}
	if loc := sub.header.Get("Location"); loc != "/api/v1/reviews/"+id {
		t.Errorf("Location = %q", loc)
	}
	if sub.header.Get("X-Correlation-Id") == "" || sub.header.Get("Content-Type") != "application/json" {
		t.Errorf("headers = %v", sub.header)
	}
	// The same key in the body is the same request: replayed, not re-run.
	again := e.do(t, req{method: "POST", path: "/api/v1/reviews", token: tok,
		body: `{"url":"https://preview.example.com/pricing","client_request_id":"key-round-0001"}`}).must(t, 202)
	if again.str("job", "job_id") != id || again.at("job", "reused") != true {
		t.Fatalf("replay = %s", again.raw)
	}

	st := e.waitJob(t, tok, id)
	if st.str("job", "status") != "completed" || st.at("review") != nil {
		t.Fatalf("status view = %s", st.raw)
	}
	// The summary view (the default) is the condensed summary, not the review.
	sum := e.do(t, req{method: "GET", path: "/api/v1/reviews/" + id, token: tok}).must(t, 200).conforms(t, "GetResult")
	if sum.str("summary", "grade") != "needs_work" || sum.at("summary", "findings") != 3.0 || sum.at("review") != nil ||
		sum.at("evidence") != nil || sum.str("summary", "top_findings", 0, "finding_id") != "f_001" {
		t.Fatalf("summary view = %s", sum.raw)
	}
	// The MCP tools' member names, and the box in lower case.
	sum = e.do(t, req{method: "GET", path: "/api/v1/reviews/" + id + "?view=findings", token: tok}).must(t, 200).conforms(t, "GetResult")
	if sum.str("review", "findings", 0, "finding_id") != "f_001" || sum.str("review", "findings", 0, "element_ref") != "#cta" ||
		sum.str("review", "findings", 0, "bastion_severity") != "major" || sum.str("review", "findings", 0, "severity") != "should_fix" ||
		sum.at("review", "findings", 1, "box", "y") != 200.0 || sum.at("review", "findings", 1, "box", "w") != 320.0 {
		t.Fatalf("summary findings = %s", sum.raw)
	}
	focus := e.do(t, req{method: "GET", path: "/api/v1/reviews/" + id + "?view=focus", token: tok}).must(t, 200).conforms(t, "GetResult")
	if n := len(focus.at("review", "findings").([]any)); n != 2 {
		t.Fatalf("focus view has %d findings, want 2 (the actionable ones: f_002 is advisory)", n)
	}
	ev := e.do(t, req{method: "GET", path: "/api/v1/reviews/" + id + "?view=evidence", token: tok}).must(t, 200).conforms(t, "GetResult")
	data, err := base64.StdEncoding.DecodeString(ev.str("evidence", 0, "data"))
	if err != nil || !bytes.Equal(data, []byte("\x89PNG-crop")) || ev.str("evidence", 0, "id") != "ev_001" || ev.str("evidence", 0, "mime_type") != "image/png" {
		t.Fatalf("evidence view = %s (%v)", ev.raw, err)
	}

	// Panel actions read the completed review.
	fix := e.do(t, req{method: "POST", path: "/api/v1/reviews/" + id + "/panel-action", token: tok,
		body: `{"action":"apply_fix","finding_id":"f_001"}`}).must(t, 200).conforms(t, "PanelActionResult")
	if fix.str("response", "type") != "fix" || fix.str("response", "fix") != "set color to #1a1a1a" {
		t.Fatalf("apply_fix = %s", fix.raw)
	}
	human := e.do(t, req{method: "POST", path: "/api/v1/reviews/" + id + "/panel-action", token: tok,
		body: `{"action":"apply_fix","finding_id":"f_002"}`}).must(t, 200)
	if human.str("response", "type") != "human_only" {
		t.Fatalf("advisory apply_fix = %s", human.raw)
	}

	// Feedback on the review id: any verdict, typed refusals.
	rid := sum.str("job", "review_id")
	fb := e.do(t, req{method: "POST", path: "/api/v1/reviews/" + rid + "/feedback", token: tok,
		body: `{"finding_id":"f_002","verdict":"dismissed","reason":"brand heading"}`}).must(t, 200).conforms(t, "FeedbackResult")
	if fb.str("kind") != "hierarchy" || fb.str("verdict") != "dismissed" || fb.str("review_id") != rid {
		t.Fatalf("feedback = %s", fb.raw)
	}
	if sum.at("summary", "dismissed_before") != nil {
		t.Fatalf("dismissed_before before any dismissal: %s", sum.raw)
	}
	after := e.do(t, req{method: "GET", path: "/api/v1/reviews/" + id + "?view=summary", token: tok}).must(t, 200).conforms(t, "GetResult")
	if after.at("summary", "dismissed_before", "hierarchy") != 1.0 || len(after.at("summary", "dismissed_before").(map[string]any)) != 1 {
		t.Fatalf("summary after a dismissal = %s", after.raw)
	}
	if bad := e.do(t, req{method: "POST", path: "/api/v1/reviews/" + rid + "/feedback", token: tok,
		body: `{"finding_id":"f_002","verdict":"liked"}`}).must(t, 400); bad.str("error", "code") != "INVALID_ARGUMENT" {
		t.Fatalf("unknown verdict = %s", bad.raw)
	}
	if bad := e.do(t, req{method: "POST", path: "/api/v1/reviews/" + rid + "/feedback", token: tok,
		body: `{"finding_id":"f_999","verdict":"disputed"}`}).must(t, 404); bad.str("error", "code") != "FINDING_NOT_FOUND" {
		t.Fatalf("unknown finding = %s", bad.raw)
	}

	// Recheck on the review id, after the agent's fix (a new revision).
	rc := e.do(t, req{method: "POST", path: "/api/v1/reviews/" + rid + "/recheck", token: tok,
		body: `{"finding_ids":["f_001"],"expected_revision":"rev-2","client_request_id":"key-recheck-01"}`}).must(t, 202).conforms(t, "RecheckResult")
	rcID := rc.str("job", "job_id")
	if rc.str("job", "kind") != "recheck" || rc.str("job", "review_id") != rid || rc.header.Get("Location") != "/api/v1/reviews/"+rcID {
		t.Fatalf("recheck = %s", rc.raw)
	}
	e.waitJob(t, tok, rcID)
	rep := e.do(t, req{method: "GET", path: "/api/v1/reviews/" + rcID, token: tok}).must(t, 200).conforms(t, "GetResult")
	if rep.str("recheck", "outcomes", 0, "finding_id") != "f_001" || rep.str("recheck", "outcomes", 0, "outcome") != "passed" {
		t.Fatalf("recheck report = %s", rep.raw)
	}

	// Cancelling a finished job keeps its state.
	cn := e.do(t, req{method: "POST", path: "/api/v1/reviews/" + id + "/cancel", token: tok}).must(t, 200).conforms(t, "CancelResult")
	if cn.str("status") != "completed" || cn.str("upstream_cancellation") != review.UpstreamAlreadyTerminal {
		t.Fatalf("cancel = %s", cn.raw)
	}
}

func TestCancelQueuedJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{}) // no workers: jobs stay queued
	e.verify(t, "acme", "preview.example.com")
	tok := e.token(t, "acme", allScopes...)
	id := e.do(t, req{method: "POST", path: "/api/v1/reviews", token: tok, body: submitBody, header: keyHeader("key-cancel-01")}).must(t, 202).str("job", "job_id")
	cn := e.do(t, req{method: "POST", path: "/api/v1/reviews/" + id + "/cancel", token: tok, body: `{"reason":"wrong branch"}`}).must(t, 200)
	if cn.str("status") != "cancelled" || cn.str("upstream_cancellation") != review.UpstreamNotNeeded || cn.str("cancellation_requested_at") == "" {
		t.Fatalf("cancel = %s", cn.raw)
	}
	if st := e.do(t, req{method: "GET", path: "/api/v1/reviews/" + id + "?view=status", token: tok}).must(t, 200); st.str("job", "status") != "cancelled" {
		t.Fatalf("after cancel = %s", st.raw)
	}
}

// wantErr checks an error answer: status, envelope code, the envelope's
// fixed fields, and the correlation id in header and body.
func wantErr(t *testing.T, r resp, status int, code string) {
	t.Helper()
	if r.status != status || r.errCode() != code {
		t.Fatalf("got %d %s, want %d %s; body %s", r.status, r.errCode(), status, code, r.raw)
	}
	if _, ok := r.errField("retriable").(bool); !ok {
		t.Errorf("envelope lacks retriable: %s", r.raw)
	}
	if s, _ := r.errField("next_action").(string); s == "" {
		t.Errorf("envelope lacks next_action: %s", r.raw)
	}
	if cid, _ := r.errField("correlation_id").(string); cid == "" || cid != r.header.Get("X-Correlation-Id") {
		t.Errorf("correlation_id %q, header %q", cid, r.header.Get("X-Correlation-Id"))
	}
}

func TestErrorMapping(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{start: true})
	e.verify(t, "acme", "preview.example.com")
	e.verify(t, "acme", "internal.example.com")
	tok := e.token(t, "acme", allScopes...)
	ro := e.token(t, "acme", principal.ReviewsRead)
	id := e.do(t, req{method: "POST", path: "/api/v1/reviews", token: tok, body: submitBody, header: keyHeader("key-errors-01")}).must(t, 202).str("job", "job_id")
	done := e.waitJob(t, tok, id)
	rid := done.str("job", "review_id")
	big := `{"url":"https://preview.example.com/` + strings.Repeat("a", rest.DefaultMaxBodyBytes) + `"}`

	cases := []struct {
		name        string
		rq          req
		status      int
		code        string
		msgContains string
	}{
		{"UnknownField", req{method: "POST", path: "/api/v1/reviews", token: tok, body: `{"url":"https://preview.example.com/","tenant":"other"}`}, 400, "INVALID_ARGUMENT", `"tenant"`},
		{"JobIDInBody", req{method: "POST", path: "/api/v1/reviews/" + id + "/panel-action", token: tok, body: `{"action":"recheck","job_id":"job_other000"}`}, 400, "INVALID_ARGUMENT", `"job_id"`},
		{"WrongType", req{method: "POST", path: "/api/v1/reviews", token: tok, body: `{"url":42}`}, 400, "INVALID_ARGUMENT", "url"},
		{"Malformed", req{method: "POST", path: "/api/v1/reviews", token: tok, body: `{"url":`}, 400, "INVALID_ARGUMENT", ""},
		{"Trailing", req{method: "POST", path: "/api/v1/reviews", token: tok, body: `{"url":"https://preview.example.com/"} {}`}, 400, "INVALID_ARGUMENT", "exactly one"},
		{"DuplicateKey", req{method: "POST", path: "/api/v1/reviews", token: tok, body: `{"url":"https://preview.example.com/","routes":["/"],"url":"https://evil.example.net/"}`}, 400, "INVALID_ARGUMENT", `"url"`},
		{"NestedDuplicateKey", req{method: "POST", path: "/api/v1/reviews/" + id + "/panel-action", token: tok, body: `{"action":"recheck","finding_id":"f_001","finding_id":"f_002"}`}, 400, "INVALID_ARGUMENT", `"finding_id"`},
		{"NotObject", req{method: "POST", path: "/api/v1/reviews", token: tok, body: `["https://preview.example.com/"]`}, 400, "INVALID_ARGUMENT", "object"},
		{"NoBody", req{method: "POST", path: "/api/v1/reviews", token: tok}, 400, "INVALID_ARGUMENT", "body is required"},
		{"NoKey", req{method: "POST", path: "/api/v1/reviews", token: tok, body: submitBody}, 400, "INVALID_ARGUMENT", "client_request_id"},
		{"KeyMismatch", req{method: "POST", path: "/api/v1/reviews", token: tok, header: keyHeader("key-other-001"),
			body: `{"url":"https://preview.example.com/","client_request_id":"key-errors-01"}`}, 400, "INVALID_ARGUMENT", "differ"},
		{"TwoKeys", req{method: "POST", path: "/api/v1/reviews", token: tok, body: submitBody,
			header: http.Header{"Idempotency-Key": {"key-a-000001", "key-b-000001"}}}, 400, "INVALID_ARGUMENT", "at most one"},
		{"BadView", req{method: "GET", path: "/api/v1/reviews/" + id + "?view=all", token: tok}, 400, "INVALID_ARGUMENT", "view"},
		{"UnknownQuery", req{method: "GET", path: "/api/v1/reviews/" + id + "?tenant=other", token: tok}, 400, "INVALID_ARGUMENT", "tenant"},
		{"TextPlain", req{method: "POST", path: "/api/v1/reviews", token: tok, body: submitBody, header: http.Header{"Content-Type": {"text/plain"}}}, 415, "UNSUPPORTED_MEDIA_TYPE", ""},
		{"NoContentType", req{method: "POST", path: "/api/v1/reviews", token: tok, body: submitBody, header: http.Header{"Content-Type": nil}}, 415, "UNSUPPORTED_MEDIA_TYPE", ""},
		{"Latin1", req{method: "POST", path: "/api/v1/reviews", token: tok, body: submitBody, header: http.Header{"Content-Type": {"application/json; charset=latin1"}}}, 415, "UNSUPPORTED_MEDIA_TYPE", ""},
		{"TooLarge", req{method: "POST", path: "/api/v1/reviews", token: tok, body: big}, 413, "REQUEST_TOO_LARGE", "65536"},
		{"ReadOnlySubmit", req{method: "POST", path: "/api/v1/reviews", token: ro, body: submitBody, header: keyHeader("key-ro-000001")}, 403, "INSUFFICIENT_SCOPE", "reviews:write"},
		{"UnknownJob", req{method: "GET", path: "/api/v1/reviews/job_doesnotexist", token: tok}, 404, "JOB_NOT_FOUND", ""},
		{"UnknownFinding", req{method: "POST", path: "/api/v1/reviews/" + id + "/panel-action", token: tok, body: `{"action":"apply_fix","finding_id":"f_999"}`}, 404, "FINDING_NOT_FOUND", "f_999"},
		{"Conflict", req{method: "POST", path: "/api/v1/reviews", token: tok, header: keyHeader("key-errors-01"),
			body: `{"url":"https://preview.example.com/other"}`}, 409, "IDEMPOTENCY_CONFLICT", ""},
		{"Unverified", req{method: "POST", path: "/api/v1/reviews", token: tok, header: keyHeader("key-unverified"),
			body: `{"url":"https://unknown.example.net/"}`}, 422, "DOMAIN_UNVERIFIED", ""},
		{"HTTP", req{method: "POST", path: "/api/v1/reviews", token: tok, header: keyHeader("key-http-00001"),
			body: `{"url":"http://preview.example.com/"}`}, 422, "URL_NOT_ALLOWED", ""},
		{"PrivateAddress", req{method: "POST", path: "/api/v1/reviews", token: tok, header: keyHeader("key-private-01"),
			body: `{"url":"https://internal.example.com/"}`}, 422, "DNS_TARGET_PROHIBITED", ""},
		{"Unchanged", req{method: "POST", path: "/api/v1/reviews/" + rid + "/recheck", token: tok, header: keyHeader("key-unchanged1"),
			body: `{"finding_ids":["f_001"]}`}, 422, "TARGET_UNCHANGED", ""},
		{"NoRoute", req{method: "GET", path: "/api/v1/nope", token: tok}, 404, "NOT_FOUND", ""},
		{"Method", req{method: "DELETE", path: "/api/v1/reviews", token: tok}, 405, "METHOD_NOT_ALLOWED", ""},
		{"BadHost", req{method: "DELETE", path: "/api/v1/targets/10.0.0.7", token: tok}, 422, "URL_NOT_ALLOWED", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, tc.rq)
			wantErr(t, r, tc.status, tc.code)
			if msg, _ := r.errField("message").(string); !strings.Contains(msg, tc.msgContains) {
				t.Errorf("message %q does not contain %q", msg, tc.msgContains)
			}
			if strings.Contains(string(r.raw), "10.0.0.7") && tc.name != "BadHost" {
				t.Errorf("an internal address leaked: %s", r.raw)
			}
		})
	}

	t.Run("ScopeChallenge", func(t *testing.T) {
		r := e.do(t, req{method: "POST", path: "/api/v1/reviews/" + id + "/cancel", token: ro})
		wantErr(t, r, 403, "INSUFFICIENT_SCOPE")
		if got, want := r.header.Get("WWW-Authenticate"), `Bearer resource_metadata="`+metadataURL+`", error="insufficient_scope", scope="reviews:cancel"`; got != want {
			t.Errorf("WWW-Authenticate = %q, want %q", got, want)
		}
		if r.errField("next_action") != "request_scope" {
			t.Errorf("next_action = %v", r.errField("next_action"))
		}
	})
	t.Run("MethodAllow", func(t *testing.T) {
		r := e.do(t, req{method: "PUT", path: "/api/v1/targets", token: tok})
		wantErr(t, r, 405, "METHOD_NOT_ALLOWED")
		if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
			t.Errorf("Allow = %q", allow)
		}
	})
	t.Run("RateLimited", func(t *testing.T) {
		// The first recheck is admitted; one straight after it falls in the
		// review's backoff (2s) and is told how long to wait.
		e.do(t, req{method: "POST", path: "/api/v1/reviews/" + rid + "/recheck", token: tok, header: keyHeader("key-rl-000001"),
			body: `{"finding_ids":["f_001"],"expected_revision":"rl-1"}`}).must(t, 202)
		r := e.do(t, req{method: "POST", path: "/api/v1/reviews/" + rid + "/recheck", token: tok, header: keyHeader("key-rl-000002"),
			body: `{"finding_ids":["f_001"],"expected_revision":"rl-2"}`})
		wantErr(t, r, 429, "RATE_LIMITED")
		ms, _ := r.errField("retry_after_ms").(float64)
		secs, err := strconv.Atoi(r.header.Get("Retry-After"))
		if ms <= 0 || ms > 2000 || err != nil || secs != int(math.Ceil(ms/1000)) {
			t.Errorf("retry_after_ms %v, Retry-After %q", ms, r.header.Get("Retry-After"))
		}
		if r.errField("retriable") != true {
			t.Errorf("retriable = %v", r.errField("retriable"))
		}
	})
	t.Run("BudgetExhausted", func(t *testing.T) {
		// An operator set the tenant's balance to zero: no refill is coming,
		// so there is no Retry-After and the envelope says so.
		if err := e.db.BalanceSet(context.Background(), "acme", 0); err != nil {
			t.Fatal(err)
		}
		defer e.db.BalanceSet(context.Background(), "acme", 1000)
		r := e.do(t, req{method: "POST", path: "/api/v1/reviews", token: tok, body: submitBody, header: keyHeader("key-budget-01")})
		wantErr(t, r, 429, "BUDGET_EXHAUSTED")
		if r.header.Get("Retry-After") != "" || r.errField("retry_after_ms") != nil || r.errField("next_action") != "contact_support" {
			t.Errorf("budget refusal = %s, Retry-After %q", r.raw, r.header.Get("Retry-After"))
		}
	})
	t.Run("Expired", func(t *testing.T) {
		e.clock.Advance(25 * time.Hour)
		defer e.clock.Advance(-25 * time.Hour)
		wantErr(t, e.do(t, req{method: "GET", path: "/api/v1/reviews/" + id, token: tok}), 410, "JOB_EXPIRED")
	})
}

func TestReviewNotReady(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{}) // no workers: the job stays queued
	e.verify(t, "acme", "preview.example.com")
	tok := e.token(t, "acme", allScopes...)
	id := e.do(t, req{method: "POST", path: "/api/v1/reviews", token: tok, body: submitBody, header: keyHeader("key-notready1")}).must(t, 202).str("job", "job_id")
	r := e.do(t, req{method: "POST", path: "/api/v1/reviews/" + id + "/panel-action", token: tok, body: `{"action":"recheck"}`})
	wantErr(t, r, 409, "REVIEW_NOT_READY")
	if r.errField("retriable") != true || r.errField("next_action") != "wait" {
		t.Errorf("not ready = %s", r.raw)
	}
}

func TestInternalAndUnavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noTg: true})
	tok := e.token(t, "acme", allScopes...)
	wantErr(t, e.do(t, req{method: "GET", path: "/api/v1/targets", token: tok}), 503, "UNAVAILABLE")

	// The store is gone: the Service answers INTERNAL_ERROR with a fixed
	// message, never the cause (which names the database).
	_ = e.db.Close()
	r := e.do(t, req{method: "GET", path: "/api/v1/reviews/job_00000000", token: tok})
	wantErr(t, r, 500, "INTERNAL_ERROR")
	if strings.Contains(string(r.raw), "sql") || strings.Contains(string(r.raw), "bastion.db") {
		t.Errorf("cause leaked: %s", r.raw)
	}
}

// TestNoPrincipal is the handler without authentication in front: every
// route is 401 with a challenge, and nothing reaches the Service.
func TestNoPrincipal(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(rest.NewHandler(nil, nil, rest.Options{MetadataURL: metadataURL}))
	defer srv.Close()
	e := &env{url: srv.URL}
	for _, rq := range []req{
		{method: "POST", path: "/api/v1/reviews", body: submitBody, header: http.Header{"X-Forwarded-User": {"alice"}, "X-Tenant-Id": {"acme"}}},
		{method: "GET", path: "/api/v1/reviews/job_00000000"},
		{method: "GET", path: "/api/v1/targets", header: http.Header{"X-Bastion-Tenant": {"acme"}}},
	} {
		r := e.do(t, rq)
		wantErr(t, r, 401, "AUTH_REQUIRED")
		if got := r.header.Get("WWW-Authenticate"); got != `Bearer resource_metadata="`+metadataURL+`"` {
			t.Errorf("WWW-Authenticate = %q", got)
		}
	}
}

// TestReadOnlyTokenCreatesNothing: a reviews:read PAT's writes are refused
// by the Service with INSUFFICIENT_SCOPE, and the store holds no job, no
// River job, no target and no spent unit afterwards.
func TestReadOnlyTokenCreatesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{start: true})
	e.verify(t, "acme", "preview.example.com")
	targetsBefore := e.count(t, "targets")
	ro := e.token(t, "acme", principal.ReviewsRead)
	for _, rq := range []req{
		{method: "POST", path: "/api/v1/reviews", token: ro, body: submitBody, header: keyHeader("key-ro-create1")},
		{method: "POST", path: "/api/v1/reviews/rev_00000000/recheck", token: ro, body: `{"finding_ids":["f_001"]}`, header: keyHeader("key-ro-create2")},
		{method: "POST", path: "/api/v1/targets", token: ro, body: `{"host":"new.example.com"}`},
		{method: "POST", path: "/api/v1/targets/preview.example.com/verify", token: ro},
		{method: "DELETE", path: "/api/v1/targets/preview.example.com", token: ro},
	} {
		wantErr(t, e.do(t, rq), 403, "INSUFFICIENT_SCOPE")
	}
	if n := e.count(t, "jobs"); n != 0 {
		t.Errorf("%d job rows after refused submits", n)
	}
	if n := e.count(t, "river_job"); n != 0 {
		t.Errorf("%d River jobs after refused submits", n)
	}
	if n := e.count(t, "targets"); n != targetsBefore {
		t.Errorf("targets rows %d, want %d", n, targetsBefore)
	}
	if n := e.count(t, "tenant_balances"); n != 0 {
		t.Errorf("%d balance rows after refused submits", n)
	}
	// The registry still holds the verified host (DELETE was refused).
	list := e.do(t, req{method: "GET", path: "/api/v1/targets", token: ro}).must(t, 200)
	if list.str("targets", 0, "host") != "preview.example.com" || list.str("targets", 0, "status") != "verified" {
		t.Fatalf("targets = %s", list.raw)
	}
}

// smuggle returns identity headers claiming victim's identity and tenant.
func smuggle(victimTenant, victimID string) http.Header {
	return http.Header{
		"X-Forwarded-User":  {victimID},
		"X-Forwarded-Email": {"admin@" + victimTenant},
		"X-Tenant-Id":       {victimTenant},
		"X-Bastion-Tenant":  {victimTenant},
		"X-Remote-User":     {victimID},
		"X-Principal":       {victimTenant + "/" + victimID},
	}
}

func withKey(h http.Header, k string) http.Header {
	h = h.Clone()
	h.Set("Idempotency-Key", k)
	return h
}

// TestSmuggledIdentityHeadersGainNothing: identity headers beside a valid
// low-privilege token change nothing; a second Authorization header is
// refused by auth before the handler runs.
func TestSmuggledIdentityHeadersGainNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{start: true})
	e.verify(t, "acme", "preview.example.com")
	e.verify(t, "globex", "preview.example.com")
	admin := e.token(t, "acme", allScopes...)
	id := e.do(t, req{method: "POST", path: "/api/v1/reviews", token: admin, body: submitBody, header: keyHeader("key-victim-01")}).must(t, 202).str("job", "job_id")
	e.waitJob(t, admin, id)
	jobsBefore := e.count(t, "jobs")
	ro := e.token(t, "acme", principal.ReviewsRead)
	other := e.token(t, "globex", principal.ReviewsRead, principal.ReviewsWrite)
	h := smuggle("acme", "pat:admin")

	same := func(name string, rq req) {
		t.Helper()
		plain := e.do(t, rq)
		merged := h.Clone()
		for k, v := range rq.header {
			merged[k] = v
		}
		rq.header = merged
		smuggled := e.do(t, rq)
		if plain.status != smuggled.status || plain.errCode() != smuggled.errCode() {
			t.Errorf("%s: with smuggled headers %d %s, without %d %s", name, smuggled.status, smuggled.errCode(), plain.status, plain.errCode())
		}
		if smuggled.status < 400 && rq.method != "GET" {
			t.Errorf("%s: smuggled request succeeded: %s", name, smuggled.raw)
		}
	}
	// A read-only token still cannot write, nor read another principal's job.
	same("ReadOnlySubmit", req{method: "POST", path: "/api/v1/reviews", token: ro, body: submitBody, header: keyHeader("key-smuggle-1")})
	same("ReadOnlyCancel", req{method: "POST", path: "/api/v1/reviews/" + id + "/cancel", token: ro})
	same("ReadOnlyGet", req{method: "GET", path: "/api/v1/reviews/" + id, token: ro})
	same("ReadOnlyAddTarget", req{method: "POST", path: "/api/v1/targets", token: ro, body: `{"host":"evil.example.com"}`})
	// Another tenant's token with acme's tenant headers still sees globex.
	same("OtherTenantGet", req{method: "GET", path: "/api/v1/reviews/" + id, token: other})
	same("OtherTenantCancel", req{method: "POST", path: "/api/v1/reviews/" + id + "/cancel", token: other})
	wantErr(t, e.do(t, req{method: "GET", path: "/api/v1/reviews/" + id, token: ro, header: h}), 404, "JOB_NOT_FOUND")
	wantErr(t, e.do(t, req{method: "GET", path: "/api/v1/reviews/" + id, token: other, header: h}), 404, "JOB_NOT_FOUND")

	// globex's submit with acme's headers lands in globex.
	sub := e.do(t, req{method: "POST", path: "/api/v1/reviews", token: other, body: submitBody, header: withKey(h, "key-globex-01")}).must(t, 202)
	gid := sub.str("job", "job_id")
	wantErr(t, e.do(t, req{method: "GET", path: "/api/v1/reviews/" + gid, token: admin}), 404, "JOB_NOT_FOUND")
	e.do(t, req{method: "GET", path: "/api/v1/reviews/" + gid + "?view=status", token: other}).must(t, 200)
	var tenant string
	if err := e.db.SQL().QueryRow(`SELECT tenant_id FROM jobs WHERE job_id = ?`, gid).Scan(&tenant); err != nil || tenant != "globex" {
		t.Fatalf("globex's job stored under tenant %q (%v)", tenant, err)
	}

	// Two Authorization headers (an admin token and a read-only one) are
	// refused by auth.Middleware as invalid_request; nothing is created.
	two := http.Header{"Authorization": {"Bearer " + ro, "Bearer " + admin}, "Idempotency-Key": {"key-two-auth-1"}}
	r := e.do(t, req{method: "POST", path: "/api/v1/reviews", body: submitBody, header: two})
	if r.status != 400 || r.json["error"] != "invalid_request" || !strings.Contains(r.header.Get("WWW-Authenticate"), `error="invalid_request"`) {
		t.Errorf("two Authorization headers: %d %s %q", r.status, r.raw, r.header.Get("WWW-Authenticate"))
	}
	if n := e.count(t, "jobs"); n != jobsBefore+1 {
		t.Errorf("jobs = %d, want %d (only globex's)", n, jobsBefore+1)
	}
	// A token in the query string is never read (RFC 6750 §2.3): beside a
	// read-only one it grants nothing (the API refuses the unknown
	// parameter), and alone it is no token.
	wantErr(t, e.do(t, req{method: "GET", path: "/api/v1/reviews/" + id + "?access_token=" + admin, token: ro}), 400, "INVALID_ARGUMENT")
	r = e.do(t, req{method: "GET", path: "/api/v1/reviews/" + id + "?access_token=" + admin})
	if r.status != 401 || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer ") {
		t.Errorf("access_token query alone: %d %s %q", r.status, r.raw, r.header.Get("WWW-Authenticate"))
	}
}

// TestTenantIsolation: tenant B's token cannot see or touch tenant A's
// review or targets, and gets the same answer as for an unknown id.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{start: true})
	e.verify(t, "acme", "preview.example.com")
	a := e.token(t, "acme", allScopes...)
	b := e.token(t, "globex", allScopes...)
	id := e.do(t, req{method: "POST", path: "/api/v1/reviews", token: a, body: submitBody, header: keyHeader("key-tenant-a1")}).must(t, 202).str("job", "job_id")
	done := e.waitJob(t, a, id)
	rid := done.str("job", "review_id")

	unknown := e.do(t, req{method: "GET", path: "/api/v1/reviews/job_unknown00", token: b})
	for name, rq := range map[string]req{
		"Get":         {method: "GET", path: "/api/v1/reviews/" + id, token: b},
		"Evidence":    {method: "GET", path: "/api/v1/reviews/" + id + "?view=evidence", token: b},
		"Cancel":      {method: "POST", path: "/api/v1/reviews/" + id + "/cancel", token: b},
		"PanelAction": {method: "POST", path: "/api/v1/reviews/" + id + "/panel-action", token: b, body: `{"action":"apply_fix","finding_id":"f_001"}`},
		"Recheck":     {method: "POST", path: "/api/v1/reviews/" + rid + "/recheck", token: b, body: `{"finding_ids":["f_001"],"expected_revision":"x"}`, header: keyHeader("key-tenant-b1")},
	} {
		r := e.do(t, rq)
		wantErr(t, r, 404, "JOB_NOT_FOUND")
		if name == "Get" && r.errField("message") != strings.Replace(unknown.errField("message").(string), "job_unknown00", id, 1) {
			t.Errorf("another tenant's job is distinguishable from an unknown one: %s vs %s", r.raw, unknown.raw)
		}
	}
	// B's submit for A's verified host is refused: the proof is A's.
	wantErr(t, e.do(t, req{method: "POST", path: "/api/v1/reviews", token: b, body: submitBody, header: keyHeader("key-tenant-b2")}), 422, "DOMAIN_UNVERIFIED")
	if l := e.do(t, req{method: "GET", path: "/api/v1/targets", token: b}).must(t, 200); len(l.at("targets").([]any)) != 0 {
		t.Errorf("tenant B lists A's targets: %s", l.raw)
	}
	// B removing A's host removes nothing of A's.
	e.do(t, req{method: "DELETE", path: "/api/v1/targets/preview.example.com", token: b}).must(t, 204)
	if ok, err := e.reg.IsVerified(context.Background(), "acme", "preview.example.com"); err != nil || !ok {
		t.Errorf("A's target after B's delete: %v, %v", ok, err)
	}
	// A still reads its job.
	e.do(t, req{method: "GET", path: "/api/v1/reviews/" + id, token: a}).must(t, 200)
}

func TestTargetsRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	tok := e.token(t, "acme", principal.ReviewsRead, principal.TargetsWrite)

	add := e.do(t, req{method: "POST", path: "/api/v1/targets", token: tok, body: `{"host":"Preview.Example.com"}`}).must(t, 200)
	if add.str("host") != "preview.example.com" || add.str("txt_name") != "_bastion-challenge.preview.example.com" ||
		add.str("txt_value") != "bastion-verification="+add.str("token") || add.str("well_known_url") != "https://preview.example.com/.well-known/bastion-verification.txt" {
		t.Fatalf("add = %s", add.raw)
	}
	list := e.do(t, req{method: "GET", path: "/api/v1/targets", token: tok}).must(t, 200)
	if list.str("targets", 0, "status") != "pending" || list.str("targets", 0, "challenge", "token") != add.str("token") {
		t.Fatalf("list = %s", list.raw)
	}
	// Not yet published: DOMAIN_UNVERIFIED saying what to publish.
	r := e.do(t, req{method: "POST", path: "/api/v1/targets/preview.example.com/verify", token: tok})
	wantErr(t, r, 422, "DOMAIN_UNVERIFIED")
	if msg, _ := r.errField("message").(string); !strings.Contains(msg, add.str("txt_value")) {
		t.Errorf("message %q does not say what to publish", msg)
	}
	e.txt.set(add.str("txt_name"), add.str("txt_value"))
	v := e.do(t, req{method: "POST", path: "/api/v1/targets/preview.example.com/verify", token: tok}).must(t, 200)
	if v.str("status") != "verified" || v.str("method") != "dns_txt" || v.str("verified_at") == "" || v.at("challenge") != nil {
		t.Fatalf("verify = %s", v.raw)
	}
	wantErr(t, e.do(t, req{method: "POST", path: "/api/v1/targets/never-added.example.com/verify", token: tok}), 422, "DOMAIN_UNVERIFIED")
	wantErr(t, e.do(t, req{method: "POST", path: "/api/v1/targets", token: tok, body: `{}`}), 400, "INVALID_ARGUMENT")

	e.do(t, req{method: "DELETE", path: "/api/v1/targets/preview.example.com", token: tok}).must(t, 204)
	if l := e.do(t, req{method: "GET", path: "/api/v1/targets", token: tok}).must(t, 200); len(l.at("targets").([]any)) != 0 {
		t.Fatalf("after delete = %s", l.raw)
	}
}

// BenchmarkGetStatus measures one authenticated status poll end to end: a
// loopback HTTP round trip, PAT verification, the handler, the Service and
// a SQLite read.
func BenchmarkGetStatus(b *testing.B) {
	e := newEnv(b, envOpts{})
	e.verify(b, "acme", "preview.example.com")
	tok := e.token(b, "acme", allScopes...)
	id := e.do(b, req{method: "POST", path: "/api/v1/reviews", token: tok, body: submitBody, header: keyHeader("key-bench-001")}).must(b, 202).str("job", "job_id")
	rq := req{method: "GET", path: "/api/v1/reviews/" + id + "?view=status", token: tok}
	for b.Loop() {
		if r := e.do(b, rq); r.status != 200 {
			b.Fatalf("status %d", r.status)
		}
	}
}

// TestStepUpNamesTheScopeTheServiceChecks holds the route table's scopes to
// what review.Service and review.Targets actually require: a token with every
// scope but a route's own is refused with a challenge naming exactly that
// scope, and a token with only that scope gets past authorization.
func TestStepUpNamesTheScopeTheServiceChecks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	bodies := map[string]string{
		"POST /api/v1/reviews":                       submitBody,
		"POST /api/v1/reviews/{review_id}/recheck":   `{"finding_ids":["f_001"]}`,
		"POST /api/v1/reviews/{job_id}/panel-action": `{"action":"recheck"}`,
		"POST /api/v1/reviews/{review_id}/feedback":  `{"finding_id":"f_001","verdict":"disputed"}`,
		"POST /api/v1/targets":                       `{"host":"preview.example.com"}`,
		"POST /api/v1/targets/{host}/verify":         ``,
		"DELETE /api/v1/targets/{host}":              ``,
		"GET /api/v1/targets":                        ``,
		"GET /api/v1/reviews/{job_id}":               ``,
		"POST /api/v1/reviews/{job_id}/cancel":       ``,
	}
	for _, rs := range rest.RouteScopes() {
		key := rs.Method + " " + rs.Pattern
		body, ok := bodies[key]
		if !ok {
			t.Errorf("%s: no test body", key)
			continue
		}
		path := strings.NewReplacer("{job_id}", "job_00000000", "{review_id}", "rev_00000000", "{host}", "preview.example.com").Replace(rs.Pattern)
		var others []principal.Scope
		for _, s := range allScopes {
			if s != rs.Scope {
				others = append(others, s)
			}
		}
		r := e.do(t, req{method: rs.Method, path: path, token: e.token(t, "acme", others...), body: body, header: keyHeader("key-stepup-01")})
		wantErr(t, r, 403, "INSUFFICIENT_SCOPE")
		if got := r.header.Get("WWW-Authenticate"); !strings.HasSuffix(got, `scope="`+string(rs.Scope)+`"`) {
			t.Errorf("%s: challenge %q does not name %s", key, got, rs.Scope)
		}
		if r := e.do(t, req{method: rs.Method, path: path, token: e.token(t, "acme", rs.Scope), body: body, header: keyHeader("key-stepup-02")}); r.status == 401 || r.status == 403 {
			t.Errorf("%s with only %s: %d %s", key, rs.Scope, r.status, r.raw)
		}
	}
}

// TestGetWaitParam: ?wait= takes a duration or milliseconds within 25 s;
// anything else, or a second wait, is INVALID_ARGUMENT naming it. On a job
// no worker takes, a short wait ends with the job still queued.
func TestGetWaitParam(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{}) // no workers: jobs stay queued
	e.verify(t, "acme", "preview.example.com")
	tok := e.token(t, "acme", allScopes...)
	sub := e.do(t, req{method: "POST", path: "/api/v1/reviews", token: tok, body: submitBody, header: keyHeader("key-wait-0001")}).must(t, 202)
	id := sub.str("job", "job_id")
	for _, w := range []string{"50ms", "20"} {
		r := e.do(t, req{method: "GET", path: "/api/v1/reviews/" + id + "?view=status&wait=" + w, token: tok}).must(t, 200).conforms(t, "GetResult")
		if r.str("job", "status") != "queued" {
			t.Errorf("wait=%s: %s", w, r.raw)
		}
	}
	for w, msg := range map[string]string{
		"26s": "wait_ms: must be between 0 and 25000", "-1": "wait_ms: must be between 0 and 25000",
		"soon": "wait: give a duration", "1s&wait=2s": "wait: give it at most once",
	} {
		r := e.do(t, req{method: "GET", path: "/api/v1/reviews/" + id + "?wait=" + w, token: tok}).must(t, 400)
		if !strings.HasPrefix(r.str("error", "message"), msg) {
			t.Errorf("wait=%s: %s, want %q", w, r.raw, msg)
		}
	}
}
