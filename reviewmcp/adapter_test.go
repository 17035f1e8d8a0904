package reviewmcp_test

import (
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review/reviewtest"
	"github.com/bastion-mcp/bastion/reviewmcp"
)

func TestSchemaViolationsAreTypedInvalidArgument(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, "", false)
	c := h.connect(t, reviewtest.NewPrincipal(t, "acme", "alice", principal.AllScopes()...), clientOpts{})
	const key = `"client_request_id":"key-00001"`
	const u = `"url":"https://preview.example.com/"`
	long := func(n int) string { return strings.Repeat("a", n) }
	cases := []struct {
		name, tool, args, want string
	}{
		{"MissingURL", reviewmcp.ToolReview, `{` + key + `}`, "url: is required"},
		{"MissingKey", reviewmcp.ToolReview, `{` + u + `}`, "client_request_id: is required"},
		{"NoArguments", reviewmcp.ToolReview, `{}`, "url: is required"},
		{"NotAnObject", reviewmcp.ToolReview, `[1,2]`, "arguments: must be an object"},
		{"FTPURL", reviewmcp.ToolReview, `{"url":"ftp://preview.example.com/",` + key + `}`, "url: must start with https:// (or http:// for a local development server)"},
		{"URLWrongType", reviewmcp.ToolReview, `{"url":42,` + key + `}`, "url: must be a string"},
		{"URLNull", reviewmcp.ToolReview, `{"url":null,` + key + `}`, "url: must be a string"},
		{"URLTooLong", reviewmcp.ToolReview, `{"url":"https://preview.example.com/` + long(2030) + `",` + key + `}`, "url: must be at most 2048 character(s) long"},
		{"RoutesNotArray", reviewmcp.ToolReview, `{` + u + `,"routes":"/",` + key + `}`, "routes: must be an array"},
		{"RoutesEmpty", reviewmcp.ToolReview, `{` + u + `,"routes":[],` + key + `}`, "routes: must have at least 1 item(s)"},
		{"RoutesTooMany", reviewmcp.ToolReview, `{` + u + `,"routes":["/1","/2","/3","/4","/5","/6"],` + key + `}`, "routes: must have at most 5 item(s)"},
		{"RouteNoSlash", reviewmcp.ToolReview, `{` + u + `,"routes":["/ok","pricing"],` + key + `}`, "routes[1]: must start with /"},
		{"RouteEmpty", reviewmcp.ToolReview, `{` + u + `,"routes":[""],` + key + `}`, "routes[0]: must be at least 1 character(s) long"},
		{"RouteTooLong", reviewmcp.ToolReview, `{` + u + `,"routes":["/` + long(512) + `"],` + key + `}`, "routes[0]: must be at most 512 character(s) long"},
		{"RouteWrongType", reviewmcp.ToolReview, `{` + u + `,"routes":[7],` + key + `}`, "routes[0]: must be a string"},
		{"ViewportUnknown", reviewmcp.ToolReview, `{` + u + `,"viewports":["mobile","watch"],` + key + `}`, "viewports[1]: must be one of mobile, tablet, desktop"},
		{"ViewportsTooMany", reviewmcp.ToolReview, `{` + u + `,"viewports":["mobile","tablet","desktop","mobile"],` + key + `}`, "viewports: must have at most 3 item(s)"},
		{"DepthUnknown", reviewmcp.ToolReview, `{` + u + `,"depth":"shallow",` + key + `}`, "depth: must be one of triage, deep"},
		{"RevisionEmpty", reviewmcp.ToolReview, `{` + u + `,"expected_revision":"",` + key + `}`, "expected_revision: must be at least 1 character(s) long"},
		{"RevisionTooLong", reviewmcp.ToolReview, `{` + u + `,"expected_revision":"` + long(257) + `",` + key + `}`, "expected_revision: must be at most 256 character(s) long"},
		{"ResponseModeUnknown", reviewmcp.ToolReview, `{` + u + `,"response_mode":"verbose",` + key + `}`, "response_mode: must be one of compact, full"},
		{"KeyShort", reviewmcp.ToolReview, `{` + u + `,"client_request_id":"short"}`, "client_request_id: must be at least 8 character(s) long"},
		{"KeyLong", reviewmcp.ToolReview, `{` + u + `,"client_request_id":"` + long(129) + `"}`, "client_request_id: must be at most 128 character(s) long"},
		{"KeyBadChars", reviewmcp.ToolReview, `{` + u + `,"client_request_id":"key with spaces"}`, "client_request_id: may contain only letters, digits, '.', '_', ':' and '-'"},
		{"UnknownProperty", reviewmcp.ToolReview, `{` + u + `,` + key + `,"bogus":1}`,
			"bogus: is not a property of this tool's input (known: client_request_id, depth, expected_revision, response_mode, routes, url, viewports)"},
		{"UnknownOddProperty", reviewmcp.ToolReview, `{` + u + `,` + key + `,"a b":1}`, `"a b": is not a property of this tool's input`},
		{"GetMissingJob", reviewmcp.ToolGet, `{"view":"summary"}`, "job_id: is required"},
		{"GetShortJob", reviewmcp.ToolGet, `{"job_id":"job_1"}`, "job_id: must be at least 8 character(s) long"},
		{"GetJobWrongType", reviewmcp.ToolGet, `{"job_id":12345678}`, "job_id: must be a string"},
		{"GetViewUnknown", reviewmcp.ToolGet, `{"job_id":"job_12345678","view":"everything"}`, "view: must be one of status, summary, findings, focus, evidence"},
		{"GetWaitTooLong", reviewmcp.ToolGet, `{"job_id":"job_12345678","wait_ms":30000}`, "wait_ms: must be at most 25000"},
		{"GetWaitNegative", reviewmcp.ToolGet, `{"job_id":"job_12345678","wait_ms":-1}`, "wait_ms: must be at least 0"},
		{"GetWaitFraction", reviewmcp.ToolGet, `{"job_id":"job_12345678","wait_ms":1.5}`, "wait_ms: must be an integer"},
		{"GetUnknownProperty", reviewmcp.ToolGet, `{"job_id":"job_12345678","cursor":"x"}`, "cursor: is not a property of this tool's input (known: job_id, view, wait_ms)"},
		{"RecheckMissingReview", reviewmcp.ToolRecheck, `{"finding_ids":["f_001"],` + key + `}`, "review_id: is required"},
		{"RecheckMissingFindings", reviewmcp.ToolRecheck, `{"review_id":"rev_12345678",` + key + `}`, "finding_ids: is required"},
		{"RecheckNoFindings", reviewmcp.ToolRecheck, `{"review_id":"rev_12345678","finding_ids":[],` + key + `}`, "finding_ids: must have at least 1 item(s)"},
		{"RecheckTooManyFindings", reviewmcp.ToolRecheck, `{"review_id":"rev_12345678","finding_ids":["f_01","f_02","f_03","f_04","f_05","f_06","f_07","f_08","f_09","f_10","f_11","f_12","f_13","f_14","f_15","f_16","f_17","f_18","f_19","f_20","f_21"],` + key + `}`, "finding_ids: must have at most 20 item(s)"},
		{"RecheckShortFinding", reviewmcp.ToolRecheck, `{"review_id":"rev_12345678","finding_ids":["f_001","f1"],` + key + `}`, "finding_ids[1]: must be at least 3 character(s) long"},
		{"RecheckFTPURL", reviewmcp.ToolRecheck, `{"review_id":"rev_12345678","finding_ids":["f_001"],"url":"ftp://x/",` + key + `}`, "url: must start with https:// (or http:// for a local development server)"},
		{"CancelMissingJob", reviewmcp.ToolCancel, `{"reason":"x"}`, "job_id: is required"},
		{"CancelReasonTooLong", reviewmcp.ToolCancel, `{"job_id":"job_12345678","reason":"` + long(501) + `"}`, "reason: must be at most 500 character(s) long"},
		{"PanelMissingAction", reviewmcp.ToolPanelAction, `{"job_id":"job_12345678"}`, "action: is required"},
		{"PanelActionUnknown", reviewmcp.ToolPanelAction, `{"job_id":"job_12345678","action":"resolve"}`, "action: must be one of apply_fix, recheck"},
		{"PanelShortFinding", reviewmcp.ToolPanelAction, `{"job_id":"job_12345678","action":"apply_fix","finding_id":"f1"}`, "finding_id: must be at least 3 character(s) long"},
		{"PanelUnknownProperty", reviewmcp.ToolPanelAction, `{"job_id":"job_12345678","action":"apply_fix","status":"resolved"}`, "status: is not a property of this tool's input"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := wantError(t, c.call(tc.tool, tc.args), fault.InvalidArgument)
			if !strings.HasPrefix(e.Message, tc.want) {
				t.Errorf("message %q, want prefix %q", e.Message, tc.want)
			}
			if e.Retriable || e.NextAction != "none" || e.RetryAfterMS != nil {
				t.Errorf("envelope %+v, want retriable false, next_action none, no retry_after_ms", e)
			}
		})
	}
	if n := h.auth.Calls(); n != 0 {
		t.Errorf("the service authorized %d target(s): a schema violation reached it", n)
	}
}

func TestServiceErrorsThroughTheAdapter(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, "", false) // no workers: jobs stay queued
	alice := reviewtest.NewPrincipal(t, "acme", "alice", principal.AllScopes()...)
	c := h.connect(t, alice, clientOpts{})
	submit := func(c *client, key, route string) submitOut {
		t.Helper()
		res := c.call(reviewmcp.ToolReview, map[string]any{"url": "https://preview.example.com" + route, "client_request_id": key})
		wantOK(t, res)
		var out submitOut
		decodeInto(t, res, &out)
		return out
	}
	first := submit(c, "key-review-1", "/pricing")
	if first.Job.Status != "queued" || first.Job.Kind != "review" || first.Job.Reused || first.Budget.UnitsReserved != 1 {
		t.Fatalf("first submit %+v", first)
	}

	t.Run("ReplayIsReused", func(t *testing.T) {
		again := submit(c, "key-review-1", "/pricing")
		if again.Job.JobID != first.Job.JobID || !again.Job.Reused || again.Budget.UnitsReserved != 0 {
			t.Errorf("replay %+v, want job %s reused with 0 units", again, first.Job.JobID)
		}
	})
	t.Run("IdempotencyConflict", func(t *testing.T) {
		res := c.call(reviewmcp.ToolReview, map[string]any{"url": "https://preview.example.com/other", "client_request_id": "key-review-1"})
		e := wantError(t, res, fault.IdempotencyConflict)
		if e.Retriable || e.NextAction != "start_new_review" {
			t.Errorf("envelope %+v", e)
		}
	})
	t.Run("DomainUnverified", func(t *testing.T) {
		res := c.call(reviewmcp.ToolReview, map[string]any{"url": "https://evil.example.net/", "client_request_id": "key-review-2"})
		e := wantError(t, res, fault.DomainUnverified)
		if e.NextAction != "verify_domain" || !strings.Contains(e.Message, "evil.example.net") {
			t.Errorf("envelope %+v", e)
		}
	})
	t.Run("StatusOfQueuedJob", func(t *testing.T) {
		for _, view := range []string{"status", "summary", "findings", "focus", "evidence"} {
			res := c.call(reviewmcp.ToolGet, map[string]any{"job_id": first.Job.JobID, "view": view})
			wantOK(t, res)
			sc := structured(t, res)
			if _, ok := sc["review"]; ok || sc["job"].(map[string]any)["status"] != "queued" {
				t.Errorf("view %s of a queued job: %s", view, mustJSON(sc))
			}
		}
	})
	t.Run("JobNotFound", func(t *testing.T) {
		wantError(t, c.call(reviewmcp.ToolGet, map[string]any{"job_id": "job_does-not-exist"}), fault.JobNotFound)
		wantError(t, c.call(reviewmcp.ToolCancel, map[string]any{"job_id": "job_does-not-exist"}), fault.JobNotFound)
		wantError(t, c.call(reviewmcp.ToolPanelAction, map[string]any{"job_id": "job_does-not-exist", "action": "recheck"}), fault.JobNotFound)
	})
	t.Run("OtherPrincipalSeesNothing", func(t *testing.T) {
		bob := h.connect(t, reviewtest.NewPrincipal(t, "acme", "bob", principal.AllScopes()...), clientOpts{})
		wantError(t, bob.call(reviewmcp.ToolGet, map[string]any{"job_id": first.Job.JobID}), fault.JobNotFound)
		wantError(t, bob.call(reviewmcp.ToolCancel, map[string]any{"job_id": first.Job.JobID}), fault.JobNotFound)
		other := h.connect(t, reviewtest.NewPrincipal(t, "globex", "alice", principal.AllScopes()...), clientOpts{})
		wantError(t, other.call(reviewmcp.ToolGet, map[string]any{"job_id": first.Job.JobID}), fault.JobNotFound)
	})
	t.Run("InsufficientScope", func(t *testing.T) {
		ro := h.connect(t, reviewtest.NewPrincipal(t, "acme", "alice", principal.ReviewsRead), clientOpts{})
		e := wantError(t, ro.call(reviewmcp.ToolReview, map[string]any{"url": "https://preview.example.com/", "client_request_id": "key-review-3"}), fault.InsufficientScope)
		if e.NextAction != "request_scope" {
			t.Errorf("envelope %+v", e)
		}
		wantError(t, ro.call(reviewmcp.ToolCancel, map[string]any{"job_id": first.Job.JobID}), fault.InsufficientScope)
		wantError(t, ro.call(reviewmcp.ToolRecheck, map[string]any{"review_id": first.Job.ReviewID, "finding_ids": []string{"f_001"}, "client_request_id": "key-recheck-1"}), fault.InsufficientScope)
		// Reading is what the read scope is for.
		wantOK(t, ro.call(reviewmcp.ToolGet, map[string]any{"job_id": first.Job.JobID}))
	})
	t.Run("AuthRequired", func(t *testing.T) {
		anon := h.connect(t, principal.Principal{}, clientOpts{anon: true})
		e := wantError(t, anon.call(reviewmcp.ToolGet, map[string]any{"job_id": first.Job.JobID}), fault.AuthRequired)
		if e.NextAction != "authenticate" {
			t.Errorf("envelope %+v", e)
		}
	})
	t.Run("ReviewNotReady", func(t *testing.T) {
		e := wantError(t, c.call(reviewmcp.ToolPanelAction, map[string]any{"job_id": first.Job.JobID, "action": "apply_fix", "finding_id": "f_001"}), fault.ReviewNotReady)
		if !e.Retriable || e.NextAction != "wait" {
			t.Errorf("envelope %+v", e)
		}
	})
	t.Run("ApplyFixNeedsFinding", func(t *testing.T) {
		e := wantError(t, c.call(reviewmcp.ToolPanelAction, map[string]any{"job_id": first.Job.JobID, "action": "apply_fix"}), fault.InvalidArgument)
		if !strings.Contains(e.Message, "finding_id") {
			t.Errorf("message %q does not name finding_id", e.Message)
		}
	})
	t.Run("RecheckOfUnfinishedReview", func(t *testing.T) {
		res := c.call(reviewmcp.ToolRecheck, map[string]any{"review_id": first.Job.ReviewID, "finding_ids": []string{"f_001"}, "client_request_id": "key-recheck-2", "expected_revision": "v2"})
		if !res.IsError {
			t.Fatalf("recheck of a queued review succeeded: %s", mustJSON(res.StructuredContent))
		}
		wantError(t, res, fault.ReviewNotReady)
	})
	t.Run("RecheckOfUnknownReview", func(t *testing.T) {
		wantError(t, c.call(reviewmcp.ToolRecheck, map[string]any{"review_id": "rev_does-not-exist", "finding_ids": []string{"f_001"}, "client_request_id": "key-recheck-3"}), fault.JobNotFound)
	})
	t.Run("Cancel", func(t *testing.T) {
		j := submit(c, "key-review-cancel", "/cancel-me")
		res := c.call(reviewmcp.ToolCancel, map[string]any{"job_id": j.Job.JobID, "reason": "changed my mind"})
		wantOK(t, res)
		var out struct {
			JobID    string  `json:"job_id"`
			Status   string  `json:"status"`
			At       *string `json:"cancellation_requested_at"`
			Upstream string  `json:"upstream_cancellation"`
		}
		decodeInto(t, res, &out)
		if out.JobID != j.Job.JobID || out.Status != "cancelled" || out.At == nil || out.Upstream != "not_needed" {
			t.Errorf("cancel of a queued job: %+v", out)
		}
		res = c.call(reviewmcp.ToolCancel, map[string]any{"job_id": j.Job.JobID})
		wantOK(t, res)
		decodeInto(t, res, &out)
		if out.Status != "cancelled" || out.Upstream != "already_terminal" {
			t.Errorf("second cancel: %+v", out)
		}
	})
}
