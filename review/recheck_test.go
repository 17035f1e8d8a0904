package review_test

import (
	"context"
	"fmt"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/review/reviewtest"
	"strings"
	"testing"
	"time"
)

func recheckEngine() *reviewtest.Engine {
	return &reviewtest.Engine{Result: reviewtest.SampleResult(), Outs: []design.RecheckOutcome{
		{FindingID: "f_001", Outcome: design.Passed, Facts: design.Facts{"ratio": 7.1}, Reason: "contrast 7.1:1 now meets 4.5:1"},
		{FindingID: "f_003", Outcome: design.Failed, Facts: design.Facts{"gap_px": 13.0}, Reason: "still off the scale"},
	}}
}

func TestRecheckRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eng := recheckEngine()
	b := setup(t, reviewtest.Options{Start: true, Engine: eng})
	rev := completedReview(t, b, "key-rck-review", nil)
	res, err := b.Service.Recheck(ctx, b.Principal, &review.RecheckParams{ReviewID: rev.ReviewID, FindingIDs: []string{"f_003", "f_001", "f_001"},
		ExpectedRevision: "deploy-2", ClientRequestID: "key-rck-000001"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Job.Kind != "recheck" || res.Job.ReviewID != rev.ReviewID || res.Budget.UnitsReserved != 1 || res.Budget.TenantUnitsRemaining != 998 {
		t.Fatalf("recheck = %+v", res)
	}
	j := b.WaitTerminal(t, b.Principal, res.Job.JobID)
	if j.Status != "completed" {
		t.Fatalf("recheck ended %+v", j)
	}
	g, err := b.Service.Get(ctx, b.Principal, &review.GetParams{JobID: res.Job.JobID})
	if err != nil {
		t.Fatal(err)
	}
	rep := g.Recheck
	if rep == nil || g.Review != nil || rep.RecheckID != res.Job.JobID || rep.ReviewID != rev.ReviewID || rep.BeforeFingerprint == rep.AfterFingerprint ||
		len(rep.Outcomes) != 2 || rep.Outcomes[0].FindingID != "f_001" || rep.Outcomes[0].Outcome != design.Passed || rep.Outcomes[1].Outcome != design.Failed {
		t.Fatalf("report = %+v", rep)
	}
	rr := eng.LastRecheck()
	if rr.URL != "https://preview.example.com/pricing" || len(rr.Findings) != 2 || rr.Findings[0].Selector != "#cta" {
		t.Fatalf("engine recheck request = %+v", rr)
	}
	// Replay returns the report; a different revision under the key conflicts.
	again, err := b.Service.Recheck(ctx, b.Principal, &review.RecheckParams{ReviewID: rev.ReviewID, FindingIDs: []string{"f_001", "f_003"},
		ExpectedRevision: "deploy-2", ClientRequestID: "key-rck-000001"})
	if err != nil || !again.Job.Reused || again.Recheck == nil || again.Budget.UnitsReserved != 0 {
		t.Fatalf("replay = %+v, %v", again, err)
	}
	_, err = b.Service.Recheck(ctx, b.Principal, &review.RecheckParams{ReviewID: rev.ReviewID, FindingIDs: []string{"f_001", "f_003"},
		ExpectedRevision: "deploy-3", ClientRequestID: "key-rck-000001"})
	if e := wantCode(t, err, fault.IdempotencyConflict); !strings.Contains(e.Message, "recheck arguments") {
		t.Fatal(e.Message)
	}
	if bal := balance(t, b); bal != 998 {
		t.Fatalf("balance = %d, want 998", bal)
	}
}

func TestRecheckRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := reviewtest.NewClock(time.Now())
	b := setup(t, reviewtest.Options{Start: true, Engine: recheckEngine(), Clock: clock})
	rev := completedReview(t, b, "key-rules-rev", &review.SubmitParams{URL: "https://preview.example.com/pricing", ExpectedRevision: "r1", ClientRequestID: "key-rules-rev"})
	params := func(key string, mod func(*review.RecheckParams)) *review.RecheckParams {
		p := &review.RecheckParams{ReviewID: rev.ReviewID, FindingIDs: []string{"f_001"}, ExpectedRevision: "r2", ClientRequestID: key}
		if mod != nil {
			mod(p)
		}
		return p
	}
	cases := []struct {
		name string
		p    principal.Principal
		in   *review.RecheckParams
		code fault.Code
		msg  string
		next fault.NextAction
	}{
		{"Unchanged", b.Principal, params("key-rule-001", func(p *review.RecheckParams) { p.ExpectedRevision = "r1" }), fault.TargetUnchanged,
			"the target fingerprint is unchanged since the review; nothing to recheck", fault.ChangeTarget},
		{"UnchangedSameURL", b.Principal, params("key-rule-002", func(p *review.RecheckParams) {
			p.ExpectedRevision = "r1"
			p.URL = "https://preview.example.com/pricing#x"
		}),
			fault.TargetUnchanged, "", fault.ChangeTarget},
		{"OtherHost", b.Principal, params("key-rule-003", func(p *review.RecheckParams) { p.URL = "https://other.example.com/pricing" }), fault.URLNotAllowed,
			"a recheck must target the same host as the original review", fault.StartNewReview},
		{"UnknownFinding", b.Principal, params("key-rule-004", func(p *review.RecheckParams) { p.FindingIDs = []string{"f_001", "f_404"} }), fault.FindingNotFound,
			"finding f_404 does not belong to review " + rev.ReviewID, fault.StartNewReview},
		{"UnknownReview", b.Principal, params("key-rule-005", func(p *review.RecheckParams) { p.ReviewID = "rev_unknown_1" }), fault.JobNotFound,
			"no completed review rev_unknown_1", fault.StartNewReview},
		{"OtherPrincipal", reviewtest.NewPrincipal(t, "acme", "bob", principal.AllScopes()...), params("key-rule-006", nil), fault.JobNotFound, "", fault.StartNewReview},
		{"TooManyFindings", b.Principal, params("key-rule-007", func(p *review.RecheckParams) {
			p.FindingIDs = nil
			for i := range 21 {
				p.FindingIDs = append(p.FindingIDs, fmt.Sprintf("f_%03d", i))
			}
		}), fault.InvalidArgument, "finding_ids: must list 1 to 20 finding ids", fault.None},
		{"ShortFindingID", b.Principal, params("key-rule-008", func(p *review.RecheckParams) { p.FindingIDs = []string{"f"} }), fault.InvalidArgument, "finding_ids[0]:", fault.None},
		{"HTTPURL", b.Principal, params("key-rule-009", func(p *review.RecheckParams) { p.URL = "http://preview.example.com/" }), fault.URLNotAllowed, "", fault.ChangeTarget},
	}
	for _, tc := range cases {
		_, err := b.Service.Recheck(ctx, tc.p, tc.in)
		e := wantCode(t, err, tc.code)
		if !strings.Contains(e.Message, tc.msg) || e.NextAction != tc.next {
			t.Errorf("%s: %+v", tc.name, e)
		}
	}
	if bal := balance(t, b); bal != 999 {
		t.Fatalf("refused rechecks cost units: %d", bal)
	}

	// Units: 4 findings cost ceil(4/3) = 2.
	r1, err := b.Service.Recheck(ctx, b.Principal, params("key-ok-000001", func(p *review.RecheckParams) { p.FindingIDs = []string{"f_001", "f_002", "f_003", "f_004"} }))
	if err != nil || r1.Budget.UnitsReserved != 2 {
		t.Fatalf("recheck = %+v, %v", r1, err)
	}
	// Backoff: right after one recheck, the next waits 2s.
	_, err = b.Service.Recheck(ctx, b.Principal, params("key-ok-000002", nil))
	e := wantCode(t, err, fault.RateLimited)
	if e.RetryAfter != 2*time.Second || !e.Retriable || e.NextAction != fault.Wait || e.Message != "rechecks are backing off; wait ~2s before the next attempt" {
		t.Fatalf("backoff = %+v", e)
	}
	clock.Advance(1500 * time.Millisecond)
	_, err = b.Service.Recheck(ctx, b.Principal, params("key-ok-000002", nil))
	if e := wantCode(t, err, fault.RateLimited); e.RetryAfter != 500*time.Millisecond || e.Message != "rechecks are backing off; wait ~1s before the next attempt" {
		t.Fatalf("backoff = %+v", e)
	}
	clock.Advance(500 * time.Millisecond)
	if _, err := b.Service.Recheck(ctx, b.Principal, params("key-ok-000002", nil)); err != nil {
		t.Fatalf("after backoff: %v", err)
	}
	// Third recheck of f_001 within 30 minutes after a 4s backoff; the
	// fourth hits the per-finding half-hour limit.
	clock.Advance(4 * time.Second)
	if _, err := b.Service.Recheck(ctx, b.Principal, params("key-ok-000003", nil)); err != nil {
		t.Fatalf("third: %v", err)
	}
	clock.Advance(8 * time.Second)
	_, err = b.Service.Recheck(ctx, b.Principal, params("key-ok-000004", nil))
	e = wantCode(t, err, fault.RateLimited)
	if !strings.HasPrefix(e.Message, "a flagged finding has hit its recheck limit for the half-hour") || e.RetryAfter != 30*time.Minute-14*time.Second {
		t.Fatalf("per-finding = %+v", e)
	}
	// Another finding is not limited by f_001's window.
	if _, err := b.Service.Recheck(ctx, b.Principal, params("key-ok-000005", func(p *review.RecheckParams) { p.FindingIDs = []string{"f_003"} })); err != nil {
		t.Fatalf("other finding: %v", err)
	}
}

func TestRecheckAcrossInstancesAndRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := reviewtest.NewClock(time.Now())
	a := setup(t, reviewtest.Options{Start: true, Engine: recheckEngine(), Clock: clock})
	rev := completedReview(t, a, "key-inst-rev1", nil)

	// A second Service on its own connection to the same file.
	bSvc := setup(t, reviewtest.Options{Path: a.Path, Start: true, Engine: recheckEngine(), Clock: clock})
	res, err := bSvc.Service.Recheck(ctx, a.Principal, &review.RecheckParams{ReviewID: rev.ReviewID, FindingIDs: []string{"f_001"}, ExpectedRevision: "v2", ClientRequestID: "key-inst-rck1"})
	if err != nil {
		t.Fatalf("recheck from another connection: %v", err)
	}
	if j := bSvc.WaitTerminal(t, a.Principal, res.Job.JobID); j.Status != "completed" {
		t.Fatalf("recheck = %+v", j)
	}
	// Limiter state is shared: the first instance sees the backoff.
	_, err = a.Service.Recheck(ctx, a.Principal, &review.RecheckParams{ReviewID: rev.ReviewID, FindingIDs: []string{"f_001"}, ExpectedRevision: "v3", ClientRequestID: "key-inst-rck2"})
	wantCode(t, err, fault.RateLimited)

	// Close both, reopen: the review, its rechecks and the limiter survive.
	a.Service.Stop(ctx)
	bSvc.Service.Stop(ctx)
	c := setup(t, reviewtest.Options{Path: a.Path, Start: true, Engine: recheckEngine(), Clock: clock})
	_, err = c.Service.Recheck(ctx, a.Principal, &review.RecheckParams{ReviewID: rev.ReviewID, FindingIDs: []string{"f_001"}, ExpectedRevision: "v3", ClientRequestID: "key-inst-rck2"})
	wantCode(t, err, fault.RateLimited)
	clock.Advance(3 * time.Second)
	res, err = c.Service.Recheck(ctx, a.Principal, &review.RecheckParams{ReviewID: rev.ReviewID, FindingIDs: []string{"f_001"}, ExpectedRevision: "v3", ClientRequestID: "key-inst-rck2"})
	if err != nil {
		t.Fatalf("recheck after reopen: %v", err)
	}
	if j := c.WaitTerminal(t, a.Principal, res.Job.JobID); j.Status != "completed" {
		t.Fatalf("recheck = %+v", j)
	}
}

func TestRecheckBudgetChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := reviewtest.NewClock(time.Now())
	// Many findings so each recheck costs 7 units (20 findings).
	res := reviewtest.SampleResult()
	var ids []string
	for i := range 20 {
		id := fmt.Sprintf("f_%03d", 100+i)
		ids = append(ids, id)
		res.Findings = append(res.Findings, design.Finding{ID: id, Selector: "#x", Fix: "y", Severity: design.Minor})
	}
	b := setup(t, reviewtest.Options{Start: true, Engine: &reviewtest.Engine{Result: res}, Clock: clock})
	rev := completedReview(t, b, "key-chain-rev", nil)
	recheck := func(key, revision string) error {
		_, err := b.Service.Recheck(ctx, b.Principal, &review.RecheckParams{ReviewID: rev.ReviewID, FindingIDs: ids, ExpectedRevision: revision, ClientRequestID: key})
		return err
	}
	if err := recheck("key-chain-001", "a"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(3 * time.Second)
	if err := recheck("key-chain-002", "b"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Second)
	// 7 + 7 used; 7 more would exceed 18.
	e := wantCode(t, recheck("key-chain-003", "c"), fault.BudgetExhausted)
	if !e.Retriable || e.NextAction != fault.Wait || e.RetryAfter != 30*time.Minute-8*time.Second ||
		!strings.HasPrefix(e.Message, "this review's recheck budget for the half-hour is exhausted") {
		t.Fatalf("chain = %+v", e)
	}
	if bal := balance(t, b); bal != 1000-1-14 {
		t.Fatalf("balance = %d", bal)
	}
}
