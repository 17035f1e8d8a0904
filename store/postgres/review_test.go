package postgres_test

import (
	"context"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/store/postgres"
)

// gateEngine is a controllable review.Engine: Review blocks until gate is
// closed (or its context ends) and returns a fixed result; Recheck passes
// every finding.
type gateEngine struct {
	gate    chan struct{} // nil: no wait
	started chan string   // receives each run's URL, if non-nil
	reviews atomic.Int32
}

func (g *gateEngine) wait(ctx context.Context, what string) error {
	if g.started != nil {
		select {
		case g.started <- what:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if g.gate == nil {
		return nil
	}
	select {
	case <-g.gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gateEngine) Review(ctx context.Context, req engine.Request) (*design.Result, error) {
	g.reviews.Add(1)
	if err := g.wait(ctx, req.URL); err != nil {
		return nil, err
	}
	return &design.Result{
		Grade: design.NeedsWork,
		Findings: []design.Finding{{ID: "f_001", Kind: "contrast", Severity: design.Major, Route: "/", Selector: "#cta",
			Fix: "darken the text", EvidenceID: "ev_001", Viewports: []design.Viewport{design.Mobile}, Facts: design.Facts{"ratio": 2.9}}},
		Evidence: []design.Evidence{{ID: "ev_001", MIMEType: "image/png", Data: []byte("\x89PNG-crop")}},
		Coverage: design.Coverage{RoutesRequested: []string{"/"}, RoutesReviewed: []string{"/"}},
	}, nil
}

func (g *gateEngine) Recheck(ctx context.Context, req engine.RecheckRequest) ([]design.RecheckOutcome, error) {
	if err := g.wait(ctx, req.URL); err != nil {
		return nil, err
	}
	out := make([]design.RecheckOutcome, len(req.Findings))
	for i, f := range req.Findings {
		out[i] = design.RecheckOutcome{FindingID: f.ID, Outcome: design.Passed, Reason: "measured"}
	}
	return out, nil
}

// hostAuthorizer allows https URLs on one host.
type hostAuthorizer struct{ host string }

func (a hostAuthorizer) AuthorizeTarget(_ context.Context, _, raw string) (string, string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() != a.host {
		return "", "", fault.New(fault.DomainUnverified, "the host is not a verified target")
	}
	return u.String(), u.Hostname(), nil
}

// replica is one review.Service on its own pool: one bastion process.
func replica(t *testing.T, d database, eng review.Engine, start bool) *review.Service {
	t.Helper()
	ctx := context.Background()
	db, err := postgres.Open(ctx, d.app, postgres.Options{MigrateURL: d.owner})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := review.New(review.Deps{Store: db, Engine: eng, Authorizer: hostAuthorizer{"preview.example.com"}},
		riverpgxv5.New(db.Pool()), review.Options{FetchPollInterval: 20 * time.Millisecond, CancelPollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if start {
		if err := svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		svc.Stop(sctx)
		db.Close()
	})
	return svc
}

func waitStatus(t *testing.T, svc *review.Service, p principal.Principal, id string) review.Job {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		g, err := svc.Get(context.Background(), p, &review.GetParams{JobID: id, View: review.ViewStatus})
		if err != nil {
			t.Fatal(err)
		}
		switch g.Job.Status {
		case "completed", "failed", "cancelled":
			return g.Job
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("job %s did not finish", id)
	return review.Job{}
}

func testReview(t *testing.T, c *cluster) {
	ctx := context.Background()
	alice, err := principal.New("acme", "alice", principal.AllScopes()...)
	if err != nil {
		t.Fatal(err)
	}
	submit := func(t *testing.T, svc *review.Service, key string) string {
		t.Helper()
		res, err := svc.Submit(ctx, alice, &review.SubmitParams{URL: "https://preview.example.com/pricing", ClientRequestID: key})
		if err != nil {
			t.Fatal(err)
		}
		return res.Job.JobID
	}

	t.Run("SubmitRunsToCompletion", func(t *testing.T) {
		t.Parallel()
		svc := replica(t, c.newDatabase(t), &gateEngine{}, true)
		id := submit(t, svc, "key-pg-complete1")
		if j := waitStatus(t, svc, alice, id); j.Status != "completed" {
			t.Fatalf("job = %+v", j)
		}
		g, err := svc.Get(ctx, alice, &review.GetParams{JobID: id, View: review.ViewEvidence})
		if err != nil || g.Review == nil || len(g.Review.Findings) != 1 || len(g.Evidence) != 1 || string(g.Evidence[0].Data) != "\x89PNG-crop" {
			t.Fatalf("get = %+v, %v", g, err)
		}
		other, _ := principal.New("bolt", "alice", principal.AllScopes()...)
		if _, err := svc.Get(ctx, other, &review.GetParams{JobID: id}); !fault.Is(err, fault.JobNotFound) {
			t.Fatalf("another tenant's Get: %v, want JOB_NOT_FOUND", err)
		}
	})

	t.Run("CancelRunning", func(t *testing.T) {
		t.Parallel()
		eng := &gateEngine{gate: make(chan struct{}), started: make(chan string, 1)}
		svc := replica(t, c.newDatabase(t), eng, true)
		id := submit(t, svc, "key-pg-cancel001")
		select {
		case <-eng.started:
		case <-time.After(20 * time.Second):
			t.Fatal("the job never started")
		}
		res, err := svc.Cancel(ctx, alice, &review.CancelParams{JobID: id, Reason: "changed my mind"})
		if err != nil || res.UpstreamCancellation != review.UpstreamRequested {
			t.Fatalf("cancel = %+v, %v", res, err)
		}
		if j := waitStatus(t, svc, alice, id); j.Status != "cancelled" {
			t.Fatalf("job = %+v", j)
		}
	})

	t.Run("TwoReplicas", func(t *testing.T) {
		t.Parallel()
		d := c.newDatabase(t)
		// a takes submissions and runs no workers; b runs the jobs.
		a := replica(t, d, &gateEngine{}, false)
		beng := &gateEngine{}
		b := replica(t, d, beng, true)
		id := submit(t, a, "key-pg-replica01")
		if j := waitStatus(t, a, alice, id); j.Status != "completed" {
			t.Fatalf("job polled on a = %+v", j)
		}
		if beng.reviews.Load() != 1 {
			t.Fatalf("replica b ran %d reviews, want 1", beng.reviews.Load())
		}
		// The idempotency key is shared: resubmitting on b replays a's job.
		again, err := b.Submit(ctx, alice, &review.SubmitParams{URL: "https://preview.example.com/pricing", ClientRequestID: "key-pg-replica01"})
		if err != nil || !again.Job.Reused || again.Job.JobID != id {
			t.Fatalf("replay on b = %+v, %v", again, err)
		}
		g, err := b.Get(ctx, alice, &review.GetParams{JobID: id, View: review.ViewFindings})
		if err != nil || g.Review == nil {
			t.Fatalf("get on b = %+v, %v", g, err)
		}
		rck, err := b.Recheck(ctx, alice, &review.RecheckParams{ReviewID: g.Job.ReviewID, FindingIDs: []string{"f_001"}, ExpectedRevision: "v2", ClientRequestID: "key-pg-recheck01"})
		if err != nil {
			t.Fatalf("recheck on b: %v", err)
		}
		if j := waitStatus(t, a, alice, rck.Job.JobID); j.Status != "completed" {
			t.Fatalf("recheck polled on a = %+v", j)
		}
		rg, err := a.Get(ctx, alice, &review.GetParams{JobID: rck.Job.JobID})
		if err != nil || rg.Recheck == nil || len(rg.Recheck.Outcomes) != 1 || rg.Recheck.Outcomes[0].Outcome != design.Passed {
			t.Fatalf("recheck report on a = %+v, %v", rg, err)
		}
	})
}
