package review_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/review/reviewtest"
	"github.com/bastion-mcp/bastion/store"
	"github.com/bastion-mcp/bastion/store/sqlite"
)

const childEnv = "BASTION_REVIEW_CHILD_DB"

// runChild is the child process of TestRestartRecovery: it submits a review
// whose engine never returns, reports the job id and the engine's start on
// stdout, and waits to be killed. A harness failure fails the child's test,
// whose output the parent reports.
func runChild(t *testing.T, path string) {
	ctx := context.Background()
	eng := &reviewtest.Engine{Gate: make(chan struct{}), Started: make(chan string, 1), Result: reviewtest.SampleResult()}
	h := reviewtest.New(t, reviewtest.Options{Path: path, Start: true, Engine: eng,
		Authorizer: func(*sqlite.DB) review.Authorizer {
			return &reviewtest.HostAuthorizer{Hosts: []string{reviewtest.PreviewHost}}
		},
		Review: review.Options{ReviewTimeout: time.Minute}})
	res, err := h.Service.Submit(ctx, principal.Local(), submitParams("key-restart-01"))
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	fmt.Println("JOB", res.Job.JobID)
	<-eng.Started
	fmt.Println("STARTED")
	select {} // until SIGKILL
}

// TestRestartRecovery kills a process mid-review and shows that a new
// process on the same data directory finishes the job (River rescues it) and
// that resubmitting the same client_request_id returns the same job.
func TestRestartRecovery(t *testing.T) {
	if path := os.Getenv(childEnv); path != "" {
		runChild(t, path)
		return
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "data", sqlite.FileName)
	cmd := exec.Command(os.Args[0], "-test.run=^TestRestartRecovery$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var jobID string
	var other []string // the child test's own output, should it fail
	timeout := time.After(30 * time.Second)
	for started := false; !started; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("child exited early:\n%s", strings.Join(other, "\n"))
			}
			switch {
			case strings.HasPrefix(l, "JOB "):
				jobID = strings.TrimPrefix(l, "JOB ")
			case l == "STARTED":
				started = true
			case strings.HasPrefix(l, "ERR"):
				t.Fatalf("child: %s", l)
			default:
				other = append(other, l)
			}
		case <-timeout:
			t.Fatal("child did not start the review")
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup runs
		t.Fatal(err)
	}
	cmd.Wait()
	killed := time.Now()

	b := setup(t, reviewtest.Options{Path: path, Start: true, Review: review.Options{
		ReviewTimeout: time.Second, RescueStuckJobsAfter: 1500 * time.Millisecond}})
	ctx := context.Background()
	p := principal.Local()
	row, err := b.Store.JobGet(ctx, p.Tenant(), jobID)
	if err != nil || row.State == store.Completed {
		t.Fatalf("after the kill the job is %+v, %v; want it unfinished", row, err)
	}
	again, err := b.Service.Submit(ctx, p, submitParams("key-restart-01"))
	if err != nil || again.Job.JobID != jobID || !again.Job.Reused {
		t.Fatalf("resubmit = %+v, %v; want job %s reused", again, err, jobID)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		g, err := b.Service.Get(ctx, p, &review.GetParams{JobID: jobID, View: review.ViewSummary})
		if err != nil {
			t.Fatal(err)
		}
		if g.Job.Status == "completed" {
			if g.Review == nil || len(g.Review.Findings) == 0 {
				t.Fatalf("completed without a result: %+v", g)
			}
			break
		}
		if g.Job.Status == "failed" {
			if g.Job.Error == nil || g.Job.Error.Code == "" || g.Job.Error.Message == "" {
				t.Fatalf("failed without a reason: %+v", g.Job)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job still %s a minute after restart", g.Job.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	row, _ = b.Store.JobGet(ctx, p.Tenant(), jobID)
	// Most of the wait is River's leader lease (the dead process held it)
	// expiring before the new leader's rescuer runs.
	t.Logf("recovered: state %s on attempt %d, %s after the kill", row.State, row.Attempt, time.Since(killed).Round(time.Millisecond))
	if row.State == store.Completed && (row.Attempt < 2 || row.UnitsConsumed != 1) {
		t.Fatalf("recovered row = %+v", row)
	}
}

// TestStopMidReviewResumes stops a service whose review is still running:
// Stop gives up waiting, cancels the run, and the job stays unfinished and
// is run again by the next service on the same database.
func TestStopMidReviewResumes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eng := &reviewtest.Engine{Gate: make(chan struct{}), Started: make(chan string, 1), Result: reviewtest.SampleResult()}
	a := setup(t, reviewtest.Options{Start: true, Engine: eng})
	res, err := a.Service.Submit(ctx, a.Principal, submitParams("key-stop-00001"))
	if err != nil {
		t.Fatal(err)
	}
	<-eng.Started
	sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	a.Service.Stop(sctx)
	row, _ := a.Store.JobGet(ctx, a.Principal.Tenant(), res.Job.JobID)
	if row.State != store.Running {
		t.Fatalf("after Stop the job is %s, want running (to be resumed)", row.State)
	}
	eng2 := &reviewtest.Engine{Result: reviewtest.SampleResult()}
	b := setup(t, reviewtest.Options{Path: a.Path, Start: true, Engine: eng2})
	if j := b.WaitTerminal(t, a.Principal, res.Job.JobID); j.Status != "completed" {
		t.Fatalf("resumed job = %+v", j)
	}
	// The new service's engine produced the result (the stopped one never returned).
	if row, _ := b.Store.JobGet(ctx, a.Principal.Tenant(), res.Job.JobID); eng2.Reviews() != 1 || row.UnitsConsumed != 1 || row.Result == nil {
		t.Fatalf("resumed: %d engine runs, consumed %d", eng2.Reviews(), row.UnitsConsumed)
	}
}
