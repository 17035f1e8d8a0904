package review_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/review/reviewtest"
	"github.com/bastion-mcp/bastion/store"
	"github.com/riverqueue/river/riverdriver/riversqlite"
)

func TestSubmitValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, reviewtest.Options{})
	ctx := context.Background()
	long := strings.Repeat("a", 3000)
	cases := []struct {
		name  string
		in    review.SubmitParams
		code  fault.Code
		field string
	}{
		{"NoURL", review.SubmitParams{ClientRequestID: "key-00000001"}, fault.InvalidArgument, "url:"},
		{"LongURL", review.SubmitParams{URL: "https://preview.example.com/" + long, ClientRequestID: "key-00000001"}, fault.InvalidArgument, "url:"},
		{"HTTP", review.SubmitParams{URL: "http://preview.example.com/", ClientRequestID: "key-00000001"}, fault.URLNotAllowed, "https"},
		{"Userinfo", review.SubmitParams{URL: "https://u:p@preview.example.com/", ClientRequestID: "key-00000001"}, fault.URLNotAllowed, "credentials"},
		{"NoKey", review.SubmitParams{URL: "https://preview.example.com/"}, fault.InvalidArgument, "client_request_id:"},
		{"ShortKey", review.SubmitParams{URL: "https://preview.example.com/", ClientRequestID: "short"}, fault.InvalidArgument, "client_request_id:"},
		{"KeyChars", review.SubmitParams{URL: "https://preview.example.com/", ClientRequestID: "key with space"}, fault.InvalidArgument, "client_request_id:"},
		{"NoRoutes", review.SubmitParams{URL: "https://preview.example.com/", Routes: []string{}, ClientRequestID: "key-00000001"}, fault.InvalidArgument, "routes:"},
		{"SixRoutes", review.SubmitParams{URL: "https://preview.example.com/", Routes: []string{"/1", "/2", "/3", "/4", "/5", "/6"}, ClientRequestID: "key-00000001"}, fault.InvalidArgument, "routes:"},
		{"RelativeRoute", review.SubmitParams{URL: "https://preview.example.com/", Routes: []string{"/", "pricing"}, ClientRequestID: "key-00000001"}, fault.InvalidArgument, "routes[1]:"},
		{"OffHostRoute", review.SubmitParams{URL: "https://preview.example.com/", Routes: []string{"//evil.example/"}, ClientRequestID: "key-00000001"}, fault.InvalidArgument, "routes[0]:"},
		{"LongRoute", review.SubmitParams{URL: "https://preview.example.com/", Routes: []string{"/" + long[:600]}, ClientRequestID: "key-00000001"}, fault.InvalidArgument, "routes[0]:"},
		{"BadViewport", review.SubmitParams{URL: "https://preview.example.com/", Viewports: []string{"mobile", "watch"}, ClientRequestID: "key-00000001"}, fault.InvalidArgument, "viewports[1]:"},
		{"FourViewports", review.SubmitParams{URL: "https://preview.example.com/", Viewports: []string{"mobile", "mobile", "tablet", "desktop"}, ClientRequestID: "key-00000001"}, fault.InvalidArgument, "viewports:"},
		{"Depth", review.SubmitParams{URL: "https://preview.example.com/", Depth: "shallow", ClientRequestID: "key-00000001"}, fault.InvalidArgument, "depth:"},
		{"Revision", review.SubmitParams{URL: "https://preview.example.com/", ExpectedRevision: long[:257], ClientRequestID: "key-00000001"}, fault.InvalidArgument, "expected_revision:"},
		{"Unverified", review.SubmitParams{URL: "https://unknown.example.net/", ClientRequestID: "key-00000001"}, fault.DomainUnverified, "not an ownership-verified"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.Service.Submit(ctx, b.Principal, &tc.in)
			e := wantCode(t, err, tc.code)
			if !strings.Contains(e.Message, tc.field) {
				t.Errorf("message %q does not name %q", e.Message, tc.field)
			}
		})
	}
	if bal := balance(t, b); bal != 1000 {
		t.Fatalf("rejected submits cost units: balance %d", bal)
	}
}

func TestSubmitNormalizesAndReturnsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, reviewtest.Options{}) // no workers: the job stays queued
	ctx := context.Background()
	in := &review.SubmitParams{URL: "https://preview.example.com/pricing#top", Routes: []string{"/", "/a", "/"},
		Viewports: []string{"desktop", "desktop"}, ClientRequestID: "key-norm-0001"}
	res, err := b.Service.Submit(ctx, b.Principal, in)
	if err != nil {
		t.Fatal(err)
	}
	j := res.Job
	if j.Status != "queued" || j.Kind != "review" || j.Reused || j.PollAfterMS != 1500 || !strings.HasPrefix(j.JobID, "job_") ||
		!strings.HasPrefix(j.ReviewID, "rev_") || j.ExpiresAt.Sub(j.CreatedAt) != 24*time.Hour {
		t.Fatalf("job = %+v", j)
	}
	if res.Budget != (review.Budget{PolicyVersion: "budget-policy@1", UnitsReserved: 1, UnitsConsumed: 0, TenantUnitsRemaining: 999}) {
		t.Fatalf("budget = %+v", res.Budget)
	}
	// The same request spelled differently (fragment, duplicates) is the same
	// normalized request: replayed, costs nothing.
	res2, err := b.Service.Submit(ctx, b.Principal, &review.SubmitParams{URL: "https://preview.example.com/pricing", Routes: []string{"/", "/a"},
		Viewports: []string{"desktop"}, Depth: "deep", ResponseMode: "compact", ClientRequestID: "key-norm-0001"})
	if err != nil {
		t.Fatal(err)
	}
	if !res2.Job.Reused || res2.Job.JobID != j.JobID || res2.Budget.UnitsReserved != 0 || res2.Budget.UnitsConsumed != 0 || res2.Budget.TenantUnitsRemaining != 999 {
		t.Fatalf("replay = %+v", res2)
	}
}

func TestScopeCheckedBeforeLookup(t *testing.T) {
	t.Parallel()
	b := setup(t, reviewtest.Options{})
	ctx := context.Background()
	reader := reviewtest.NewPrincipal(t, "acme", "alice", principal.ReviewsRead)
	writer := reviewtest.NewPrincipal(t, "acme", "alice", principal.ReviewsWrite)
	_, err := b.Service.Submit(ctx, reader, submitParams("key-scope-001"))
	wantCode(t, err, fault.InsufficientScope)
	_, err = b.Service.Recheck(ctx, reader, &review.RecheckParams{ReviewID: "rev_nothing", FindingIDs: []string{"f_1"}, ClientRequestID: "key-scope-002"})
	wantCode(t, err, fault.InsufficientScope)
	// A job that does not exist still answers INSUFFICIENT_SCOPE, not JOB_NOT_FOUND.
	_, err = b.Service.Cancel(ctx, writer, &review.CancelParams{JobID: "job_does_not_exist"})
	e := wantCode(t, err, fault.InsufficientScope)
	if e.Message != "cancelling a review requires reviews:cancel" || e.NextAction != fault.RequestScope {
		t.Fatalf("cancel scope error = %+v", e)
	}
	_, err = b.Service.Get(ctx, writer, &review.GetParams{JobID: "job_does_not_exist"})
	wantCode(t, err, fault.InsufficientScope)
	_, err = b.Service.PanelAction(ctx, writer, &review.PanelActionParams{JobID: "job_does_not_exist", Action: review.ActionRecheck})
	wantCode(t, err, fault.InsufficientScope)
	_, err = b.Service.Get(ctx, principal.Principal{}, &review.GetParams{JobID: "job_does_not_exist"})
	wantCode(t, err, fault.AuthRequired)
}

func TestIdempotencyRace(t *testing.T) {
	t.Parallel()
	b := setup(t, reviewtest.Options{})
	ctx := context.Background()
	const n = 1000
	var wg sync.WaitGroup
	results := make([]*review.SubmitResult, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { results[i], errs[i] = b.Service.Submit(ctx, b.Principal, submitParams("key-race-000001")) })
	}
	wg.Wait()
	fresh := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("submit %d: %v", i, errs[i])
		}
		if results[i].Job.JobID != results[0].Job.JobID {
			t.Fatalf("two jobs: %s and %s", results[i].Job.JobID, results[0].Job.JobID)
		}
		if !results[i].Job.Reused {
			fresh++
			if results[i].Budget.UnitsReserved != 1 {
				t.Fatalf("creating submit reserved %d", results[i].Budget.UnitsReserved)
			}
		} else if results[i].Budget.UnitsReserved != 0 {
			t.Fatalf("replay reserved %d", results[i].Budget.UnitsReserved)
		}
	}
	if fresh != 1 {
		t.Fatalf("%d submits created a job, want 1", fresh)
	}
	if bal := balance(t, b); bal != 999 {
		t.Fatalf("balance = %d, want 999", bal)
	}
	var rivers int
	if err := b.Store.SQL().QueryRow(`SELECT count(*) FROM river_job`).Scan(&rivers); err != nil || rivers != 1 {
		t.Fatalf("river jobs = %d (%v), want 1", rivers, err)
	}
}

func TestIdempotencyConflictAndIsolation(t *testing.T) {
	t.Parallel()
	b := setup(t, reviewtest.Options{})
	ctx := context.Background()
	first, err := b.Service.Submit(ctx, b.Principal, submitParams("key-conf-0001"))
	if err != nil {
		t.Fatal(err)
	}
	other := *submitParams("key-conf-0001")
	other.Viewports = []string{"tablet"}
	_, err = b.Service.Submit(ctx, b.Principal, &other)
	e := wantCode(t, err, fault.IdempotencyConflict)
	if e.NextAction != fault.StartNewReview || e.Retriable {
		t.Fatalf("conflict = %+v", e)
	}
	// The key of a review used for a recheck: a different job kind.
	_, err = b.Service.Recheck(ctx, b.Principal, &review.RecheckParams{ReviewID: first.Job.ReviewID, FindingIDs: []string{"f_001"}, ClientRequestID: "key-conf-0001"})
	if e := wantCode(t, err, fault.IdempotencyConflict); !strings.Contains(e.Message, "different job kind") {
		t.Fatalf("kind conflict = %q", e.Message)
	}
	// Bob, same tenant: his own key space, and Alice's job is invisible.
	bob := reviewtest.NewPrincipal(t, "acme", "bob", principal.AllScopes()...)
	res, err := b.Service.Submit(ctx, bob, submitParams("key-conf-0001"))
	if err != nil || res.Job.Reused || res.Job.JobID == first.Job.JobID {
		t.Fatalf("bob's submit = %+v, %v", res, err)
	}
	_, err = b.Service.Get(ctx, bob, &review.GetParams{JobID: first.Job.JobID})
	if e := wantCode(t, err, fault.JobNotFound); e.Message != "no job with id "+first.Job.JobID {
		t.Fatalf("message = %q", e.Message)
	}
	_, err = b.Service.Cancel(ctx, bob, &review.CancelParams{JobID: first.Job.JobID})
	if e := wantCode(t, err, fault.JobNotFound); e.Message != "no such cancellable job" {
		t.Fatalf("message = %q", e.Message)
	}
	// Another tenant with the same principal id sees nothing either.
	mallory := reviewtest.NewPrincipal(t, "evil", "alice", principal.AllScopes()...)
	_, err = b.Service.Get(ctx, mallory, &review.GetParams{JobID: first.Job.JobID})
	wantCode(t, err, fault.JobNotFound)
}

func TestReviewLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t, reviewtest.Options{Start: true})
	ctx := context.Background()
	j := completedReview(t, b, "key-life-0001", nil)
	if j.CompletedAt == nil || j.Error != nil {
		t.Fatalf("job = %+v", j)
	}
	if bal := balance(t, b); bal != 999 {
		t.Fatalf("balance = %d after a completed review, want 999", bal)
	}
	row, _ := b.Store.JobGet(ctx, "acme", j.JobID)
	if row.UnitsConsumed != 1 {
		t.Fatalf("consumed = %d", row.UnitsConsumed)
	}

	get := func(v review.View) *review.GetResult {
		g, err := b.Service.Get(ctx, b.Principal, &review.GetParams{JobID: j.JobID, View: v})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	if g := get(review.ViewStatus); g.Review != nil || g.Evidence != nil {
		t.Fatalf("status view carries data: %+v", g)
	}
	if g := get(""); g.Review == nil || len(g.Review.Findings) != 4 || g.Evidence != nil {
		t.Fatalf("summary view = %+v", g.Review)
	}
	// Focus keeps the actionable findings: f_002 is advisory and f_004
	// names no element.
	if g := get(review.ViewFocus); len(g.Review.Findings) != 2 || g.Review.Findings[0].ID != "f_001" || g.Review.Findings[1].ID != "f_003" {
		t.Fatalf("focus view kept findings an agent cannot act on: %+v", g.Review.Findings)
	}
	if g := get(review.ViewSummary); len(g.Review.Findings) != 4 {
		t.Fatal("focus view mutated the stored review")
	}
	if g := get(review.ViewEvidence); len(g.Evidence) != 1 || g.Evidence[0].ID != "ev_001" || string(g.Evidence[0].Data) != "\x89PNG-crop" {
		t.Fatalf("evidence view = %+v", g.Evidence)
	}
	_, err := b.Service.Get(ctx, b.Principal, &review.GetParams{JobID: j.JobID, View: "everything"})
	if e := wantCode(t, err, fault.InvalidArgument); !strings.HasPrefix(e.Message, "view:") {
		t.Fatal(e.Message)
	}

	panel := func(a review.PanelActionKind, fid string) (*review.PanelActionResult, error) {
		return b.Service.PanelAction(ctx, b.Principal, &review.PanelActionParams{JobID: j.JobID, Action: a, FindingID: fid})
	}
	if r, err := panel(review.ActionApplyFix, "f_001"); err != nil || (r.Response.Type != "fix" || r.Response.FindingID != "f_001" || r.Response.Fix != "set color to #1a1a1a" || r.Response.Refs != nil) || r.ReviewID != j.ReviewID {
		t.Fatalf("apply_fix grounded = %+v, %v", r, err)
	}
	if r, _ := panel(review.ActionApplyFix, "f_002"); r.Response.Type != "human_only" || r.Response.Fix != "" {
		t.Fatalf("apply_fix advisory = %+v", r.Response)
	}
	if r, _ := panel(review.ActionApplyFix, "f_004"); r.Response.Type != "human_only" {
		t.Fatalf("apply_fix without selector = %+v", r.Response)
	}
	if r, _ := panel(review.ActionRecheck, ""); strings.Join(r.Response.Refs, ",") != "f_001,f_003" {
		t.Fatalf("recheck refs = %+v", r.Response)
	}
	if r, _ := panel(review.ActionRecheck, "f_002"); strings.Join(r.Response.Refs, ",") != "f_002" {
		t.Fatalf("recheck ref = %+v", r.Response)
	}
	_, err = panel(review.ActionApplyFix, "")
	if e := wantCode(t, err, fault.InvalidArgument); e.Message != "finding_id: apply_fix requires a finding_id" {
		t.Fatal(e.Message)
	}
	_, err = panel(review.ActionApplyFix, "f_999")
	if e := wantCode(t, err, fault.FindingNotFound); e.NextAction != fault.None {
		t.Fatalf("panel finding error = %+v", e)
	}
	// Cancelling a finished job leaves it as it is.
	c, err := b.Service.Cancel(ctx, b.Principal, &review.CancelParams{JobID: j.JobID})
	if err != nil || c.Status != "completed" || c.UpstreamCancellation != "already_terminal" || c.Decision != store.AlreadyTerminal {
		t.Fatalf("cancel completed = %+v, %v", c, err)
	}
}

func TestPanelActionNotReady(t *testing.T) {
	t.Parallel()
	b := setup(t, reviewtest.Options{})
	ctx := context.Background()
	res, _ := b.Service.Submit(ctx, b.Principal, submitParams("key-panel-001"))
	_, err := b.Service.PanelAction(ctx, b.Principal, &review.PanelActionParams{JobID: res.Job.JobID, Action: review.ActionApplyFix, FindingID: "f_001"})
	if e := wantCode(t, err, fault.ReviewNotReady); !e.Retriable || e.NextAction != fault.Wait {
		t.Fatalf("not ready = %+v", e)
	}
	// Nothing reviewed: no fix at all.
	eng := &reviewtest.Engine{Result: &design.Result{Grade: design.NothingReviewed, Findings: []design.Finding{{ID: "f_001", Selector: "#a", Fix: "x"}}}}
	b2 := setup(t, reviewtest.Options{Start: true, Engine: eng})
	j := completedReview(t, b2, "key-panel-002", nil)
	r, err := b2.Service.PanelAction(ctx, b2.Principal, &review.PanelActionParams{JobID: j.JobID, Action: review.ActionApplyFix, FindingID: "f_001"})
	if err != nil || r.Response.Type != "unjudged" || r.Response.Fix != "" {
		t.Fatalf("nothing reviewed = %+v, %v", r, err)
	}
}

func TestFailureReasonKept(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		err      error
		code     string
		message  string
		timeout  time.Duration
		blocking bool
	}{
		{"Typed", fault.New(fault.CaptureFailed, "the page at / did not load (HTTP 502)"), "CAPTURE_FAILED", "the page at / did not load (HTTP 502)", 0, false},
		{"Untyped", errBoom, "JUDGMENT_FAILED", "the engine could not review the page", 0, false},
		{"Timeout", nil, "CAPTURE_FAILED", "the review did not finish within 300ms", 300 * time.Millisecond, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			eng := &reviewtest.Engine{Err: tc.err, Result: reviewtest.SampleResult()}
			if tc.blocking {
				eng.Gate = make(chan struct{})
			}
			b := setup(t, reviewtest.Options{Start: true, Engine: eng, Review: review.Options{ReviewTimeout: tc.timeout}})
			res, err := b.Service.Submit(context.Background(), b.Principal, submitParams("key-fail-0001"))
			if err != nil {
				t.Fatal(err)
			}
			j := b.WaitTerminal(t, b.Principal, res.Job.JobID)
			if j.Status != "failed" || j.Error == nil || j.Error.Code != tc.code || j.Error.Message != tc.message {
				t.Fatalf("job = %+v error %+v", j, j.Error)
			}
			if strings.Contains(j.Error.Message, "10.0.0.7") {
				t.Fatal("internal address leaked")
			}
			if bal := balance(t, b); bal != 1000 {
				t.Fatalf("failed review not refunded: balance %d", bal)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("Queued", func(t *testing.T) {
		t.Parallel()
		b := setup(t, reviewtest.Options{}) // no workers
		res, _ := b.Service.Submit(ctx, b.Principal, submitParams("key-cq-000001"))
		c, err := b.Service.Cancel(ctx, b.Principal, &review.CancelParams{JobID: res.Job.JobID, Reason: "wrong url"})
		if err != nil || c.Status != "cancelled" || c.UpstreamCancellation != "not_needed" || c.Decision != store.CancelledBeforeStart || c.CancellationRequestedAt == nil {
			t.Fatalf("cancel = %+v, %v", c, err)
		}
		if bal := balance(t, b); bal != 1000 {
			t.Fatalf("balance = %d, want refund", bal)
		}
		_, err = b.Service.Cancel(ctx, b.Principal, &review.CancelParams{JobID: res.Job.JobID, Reason: strings.Repeat("x", 501)})
		wantCode(t, err, fault.InvalidArgument)
	})
	t.Run("Running", func(t *testing.T) {
		t.Parallel()
		eng := &reviewtest.Engine{Gate: make(chan struct{}), Started: make(chan string, 1), Result: reviewtest.SampleResult()}
		b := setup(t, reviewtest.Options{Start: true, Engine: eng})
		res, _ := b.Service.Submit(ctx, b.Principal, submitParams("key-cr-000001"))
		<-eng.Started
		c, err := b.Service.Cancel(ctx, b.Principal, &review.CancelParams{JobID: res.Job.JobID})
		if err != nil || c.Status != "running" || c.UpstreamCancellation != "requested" || c.Decision != store.CancelRequested {
			t.Fatalf("cancel = %+v, %v", c, err)
		}
		j := b.WaitTerminal(t, b.Principal, res.Job.JobID)
		row, _ := b.Store.JobGet(ctx, "acme", res.Job.JobID)
		if j.Status != "cancelled" || row.CancelDecision != store.CancelWon || row.UnitsConsumed != 0 {
			t.Fatalf("job = %+v, row %+v", j, row)
		}
		if bal := balance(t, b); bal != 1000 {
			t.Fatalf("balance = %d, want refund", bal)
		}
	})
	t.Run("FromAnotherProcess", func(t *testing.T) {
		t.Parallel()
		// The cancel lands through a second Service on the same database,
		// which cannot signal the worker directly: the worker's store poll
		// stops it.
		eng := &reviewtest.Engine{Gate: make(chan struct{}), Started: make(chan string, 1), Result: reviewtest.SampleResult()}
		b := setup(t, reviewtest.Options{Start: true, Engine: eng})
		b2 := setup(t, reviewtest.Options{Path: b.Path})
		res, _ := b.Service.Submit(ctx, b.Principal, submitParams("key-cx-000001"))
		<-eng.Started
		if c, err := b2.Service.Cancel(ctx, b.Principal, &review.CancelParams{JobID: res.Job.JobID}); err != nil || c.UpstreamCancellation != "requested" {
			t.Fatalf("cancel = %+v, %v", c, err)
		}
		if j := b.WaitTerminal(t, b.Principal, res.Job.JobID); j.Status != "cancelled" {
			t.Fatalf("job = %+v", j)
		}
	})
}

// TestCancelCompleteRace races a cancel against the engine's result many
// times: whichever wins, the job is terminal once, its units match its state
// and the tenant's balance matches the completed count.
func TestCancelCompleteRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eng := &reviewtest.Engine{Gate: make(chan struct{}), Started: make(chan string), Result: reviewtest.SampleResult()}
	b := setup(t, reviewtest.Options{Start: true, Engine: eng, Review: review.Options{Workers: 1}})
	const iterations = 40
	var completed, cancelled int64
	for i := range iterations {
		res, err := b.Service.Submit(ctx, b.Principal, submitParams(fmt.Sprintf("key-race-%06d", i)))
		if err != nil {
			t.Fatal(err)
		}
		gate := make(chan struct{})
		eng.Gate = gate // safe: the only run in flight has not started yet
		<-eng.Started
		var wg sync.WaitGroup
		wg.Go(func() {
			if i%2 == 0 {
				time.Sleep(time.Duration(i%5) * 100 * time.Microsecond)
			}
			close(gate)
		})
		var c *review.CancelResult
		wg.Go(func() {
			if i%2 == 1 {
				time.Sleep(time.Duration(i%5) * 100 * time.Microsecond)
			}
			c, err = b.Service.Cancel(ctx, b.Principal, &review.CancelParams{JobID: res.Job.JobID})
		})
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		j := b.WaitTerminal(t, b.Principal, res.Job.JobID)
		row, _ := b.Store.JobGet(ctx, "acme", res.Job.JobID)
		switch j.Status {
		case "completed":
			completed++
			if row.UnitsConsumed != 1 || row.Result == nil {
				t.Fatalf("iteration %d: completed row %+v", i, row)
			}
			if c.Decision == store.CancelRequested && row.CancelDecision != store.CompletionWon {
				t.Fatalf("iteration %d: completion after a cancel request recorded %q", i, row.CancelDecision)
			}
			if c.Decision != store.CancelRequested && c.Decision != store.AlreadyTerminal {
				t.Fatalf("iteration %d: cancel decided %q on a job that completed", i, c.Decision)
			}
		case "cancelled":
			cancelled++
			if row.UnitsConsumed != 0 || row.Result != nil || row.CancelDecision != store.CancelWon {
				t.Fatalf("iteration %d: cancelled row %+v", i, row)
			}
		default:
			t.Fatalf("iteration %d: status %s", i, j.Status)
		}
		// Terminal is final: a later cancel changes nothing.
		if c2, _ := b.Service.Cancel(ctx, b.Principal, &review.CancelParams{JobID: res.Job.JobID}); c2.Status != j.Status || c2.Decision != store.AlreadyTerminal {
			t.Fatalf("iteration %d: second cancel = %+v", i, c2)
		}
	}
	if bal := balance(t, b); bal != 1000-completed {
		t.Fatalf("balance = %d, want %d (completed %d, cancelled %d)", bal, 1000-completed, completed, cancelled)
	}
	t.Logf("completed %d, cancelled %d", completed, cancelled)
}

func TestBudgetExhausted(t *testing.T) {
	t.Parallel()
	b := setup(t, reviewtest.Options{Review: review.Options{DefaultBalance: 2}})
	ctx := context.Background()
	for i := range 2 {
		if _, err := b.Service.Submit(ctx, b.Principal, submitParams(fmt.Sprintf("key-budget-%03d", i))); err != nil {
			t.Fatal(err)
		}
	}
	_, err := b.Service.Submit(ctx, b.Principal, submitParams("key-budget-999"))
	e := wantCode(t, err, fault.BudgetExhausted)
	if e.Retriable || e.NextAction != fault.ContactSupport || e.Message != "the tenant has 0 review units left and this request needs 1" {
		t.Fatalf("exhausted = %+v", e)
	}
	// A replay of an admitted key still answers: it costs nothing.
	if r, err := b.Service.Submit(ctx, b.Principal, submitParams("key-budget-000")); err != nil || !r.Job.Reused {
		t.Fatalf("replay at zero balance = %+v, %v", r, err)
	}
	// Cancelling refunds, after which a new review fits.
	r, _ := b.Service.Submit(ctx, b.Principal, submitParams("key-budget-001"))
	if _, err := b.Service.Cancel(ctx, b.Principal, &review.CancelParams{JobID: r.Job.JobID}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Service.Submit(ctx, b.Principal, submitParams("key-budget-999")); err != nil {
		t.Fatalf("after refund: %v", err)
	}
	// The balance is per tenant.
	other := reviewtest.NewPrincipal(t, "other-co", "alice", principal.AllScopes()...)
	if _, err := b.Service.Submit(ctx, other, submitParams("key-budget-000")); err != nil {
		t.Fatalf("other tenant: %v", err)
	}
}

func TestExpiryAndSweeper(t *testing.T) {
	t.Parallel()
	clock := reviewtest.NewClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	b := setup(t, reviewtest.Options{Clock: clock})
	ctx := context.Background()
	res, _ := b.Service.Submit(ctx, b.Principal, submitParams("key-exp-00001"))
	clock.Advance(24*time.Hour - time.Millisecond)
	if _, err := b.Service.Get(ctx, b.Principal, &review.GetParams{JobID: res.Job.JobID}); err != nil {
		t.Fatalf("before expiry: %v", err)
	}
	clock.Advance(time.Millisecond)
	_, err := b.Service.Get(ctx, b.Principal, &review.GetParams{JobID: res.Job.JobID})
	if e := wantCode(t, err, fault.JobExpired); e.Message != "job "+res.Job.JobID+" has expired" || e.NextAction != fault.StartNewReview {
		t.Fatalf("expired = %+v", e)
	}
	_, err = b.Service.Cancel(ctx, b.Principal, &review.CancelParams{JobID: res.Job.JobID})
	wantCode(t, err, fault.JobExpired)
	_, err = b.Service.PanelAction(ctx, b.Principal, &review.PanelActionParams{JobID: res.Job.JobID, Action: review.ActionRecheck})
	wantCode(t, err, fault.JobExpired)
	if bal := balance(t, b); bal != 999 {
		t.Fatalf("balance before sweep = %d", bal)
	}
	sw, err := b.Service.Sweep(ctx)
	if err != nil || sw.Expired != 1 || sw.Purged != 0 {
		t.Fatalf("sweep = %+v, %v", sw, err)
	}
	row, _ := b.Store.JobGet(ctx, "acme", res.Job.JobID)
	if row.State != store.Failed || row.ErrorCode != "JOB_EXPIRED" {
		t.Fatalf("swept row = %+v", row)
	}
	if bal := balance(t, b); bal != 1000 {
		t.Fatalf("expired job not refunded: %d", bal)
	}
	// After the retention the row is deleted and the key is free again.
	clock.Advance(7*24*time.Hour + time.Second)
	if sw, err := b.Service.Sweep(ctx); err != nil || sw.Purged != 1 {
		t.Fatalf("purge = %+v, %v", sw, err)
	}
	_, err = b.Service.Get(ctx, b.Principal, &review.GetParams{JobID: res.Job.JobID})
	wantCode(t, err, fault.JobNotFound)
	if r, err := b.Service.Submit(ctx, b.Principal, submitParams("key-exp-00001")); err != nil || r.Job.Reused {
		t.Fatalf("resubmit after purge = %+v, %v", r, err)
	}
}

func TestSweeperRuns(t *testing.T) {
	t.Parallel()
	clock := reviewtest.NewClock(time.Now().Add(-48 * time.Hour))
	b := setup(t, reviewtest.Options{Clock: clock, Review: review.Options{SweepInterval: 20 * time.Millisecond}})
	ctx := context.Background()
	res, _ := b.Service.Submit(ctx, b.Principal, submitParams("key-swp-00001"))
	clock.Advance(25 * time.Hour)
	if err := b.Service.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if row, _ := b.Store.JobGet(ctx, "acme", res.Job.JobID); row.State == store.Failed {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the periodic sweeper did not fail the expired job")
}

func TestOptionsValidated(t *testing.T) {
	t.Parallel()
	b := setup(t, reviewtest.Options{})
	_, err := review.New(review.Deps{Store: b.Store, Engine: &reviewtest.Engine{Result: reviewtest.SampleResult()},
		Authorizer: &reviewtest.HostAuthorizer{Hosts: []string{reviewtest.PreviewHost, reviewtest.OtherHost}}}, riversqlite.New(b.Store.SQL()), review.Options{ReviewTimeout: time.Minute, RescueStuckJobsAfter: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "RescueStuckJobsAfter") {
		t.Fatalf("err = %v", err)
	}
	if _, err := review.New(review.Deps{}, riversqlite.New(b.Store.SQL()), review.Options{}); err == nil {
		t.Fatal("missing deps accepted")
	}
}
