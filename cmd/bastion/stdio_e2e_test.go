package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/demo"
	"github.com/bastion-mcp/bastion/internal/testenv"
)

// cliEnv makes the test binary behave as the bastion CLI, so end-to-end
// tests spawn the real command tree (and `bastion demo` can spawn its
// `bastion stdio` child through os.Executable) without a separate build.
const cliEnv = "BASTION_TEST_RUN_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(cliEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// cliCommand returns `bastion args...` as a child process.
func cliCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	return cmd
}

func TestDemo(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	cmd := cliCommand("demo", "--out", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() { <-ctx.Done(); cmd.Process.Kill() }()
	if err := cmd.Run(); err != nil {
		log, _ := os.ReadFile(filepath.Join(out, "stdio.log"))
		t.Fatalf("bastion demo: %v\nstdout:\n%s\nstderr:\n%s\nserver log:\n%s", err, &stdout, &stderr, log)
	}
	text := stdout.String()
	t.Logf("transcript:\n%s", text)
	lines := strings.Split(text, "\n")
	for n := 1; n <= 10; n++ {
		prefix := strconv.Itoa(n) + ". "
		found := false
		for _, l := range lines {
			found = found || strings.HasPrefix(l, prefix)
		}
		if !found {
			t.Errorf("no step %d line (%q)", n, prefix)
		}
	}
	for _, want := range []string{
		"1. tools/list → 5 tools",
		"design_review_cancel (destructive)",
		"design_review_get (read-only)",
		"https://preview.example.com/pricing",
		"reused: true",
		"→ DOMAIN_UNVERIFIED",
		"→ fix: ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
	m := regexp.MustCompile(`→ (\d+) passed, (\d+) failed, (\d+) inconclusive`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("no recheck tally")
	}
	if m[1] == "0" || m[2] == "0" {
		t.Errorf("recheck: %s passed, %s failed; want some of each (revision 2 fixes some defects, not all)", m[1], m[2])
	}
	// The resubmit names the job the submit created.
	sub := regexp.MustCompile(`→ job (job_\S+) queued`).FindStringSubmatch(text)
	re := regexp.MustCompile(`same client_request_id → job (job_\S+), reused: true`).FindStringSubmatch(text)
	if sub == nil || re == nil || sub[1] != re[1] {
		t.Errorf("resubmit job %v, submit job %v; want the same job", re, sub)
	}
	if tm := regexp.MustCompile(`done in ([\d.]+)s; submit → completed ([\d.]+)s`).FindStringSubmatch(text); tm == nil {
		t.Error("no timing line")
	} else {
		t.Logf("demo wall time %ss, submit→completed %ss", tm[1], tm[2])
	}

	var doc struct {
		Job struct {
			Status string `json:"status"`
		} `json:"job"`
		Review struct {
			Grade    string `json:"grade"`
			Findings []struct {
				FindingID string `json:"finding_id"`
				Kind      string `json:"kind"`
			} `json:"findings"`
		} `json:"review"`
	}
	raw, err := os.ReadFile(filepath.Join(out, "review.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("review.json: %v", err)
	}
	if doc.Job.Status != "completed" || doc.Review.Grade == "" || len(doc.Review.Findings) == 0 {
		t.Errorf("review.json: status %q grade %q, %d findings", doc.Job.Status, doc.Review.Grade, len(doc.Review.Findings))
	}
	kinds := map[string]bool{}
	for _, f := range doc.Review.Findings {
		kinds[f.Kind] = true
	}
	// The seeded defects of revision 1, each measured by its own check.
	for _, k := range []string{"contrast", "viewport_overflow", "tap_target", "unnamed_control", "off_token_color"} {
		if !kinds[k] {
			t.Errorf("review.json has no %s finding; kinds: %v", k, kinds)
		}
	}

	html, err := os.ReadFile(filepath.Join(out, "panel.html"))
	if err != nil {
		t.Fatal(err)
	}
	lower := strings.ToLower(string(html))
	if !strings.Contains(lower, "<html") || len(html) < 1000 {
		t.Errorf("panel.html is not a page (%d bytes)", len(html))
	}
	if strings.Contains(lower, "<script") {
		t.Error("panel.html contains a script")
	}
	// The header names the reviewed URL as text; nothing may load one.
	if u := regexp.MustCompile(`(?i)(?:src|href|action|srcset|poster|data)\s*=\s*["']?\s*https?:|url\(\s*["']?\s*https?:`).FindString(string(html)); u != "" {
		t.Errorf("panel.html refers to a URL (%q); evidence must be data: URIs only", u)
	}
	if !strings.Contains(string(html), "<code>https://preview.example.com/pricing</code>") {
		t.Error("panel.html does not name the reviewed URL")
	}
	if !strings.Contains(lower, "data:image/png;base64,") {
		t.Error("panel.html has no inline evidence")
	}
}

// stdio is one `bastion stdio` child on dataDir wired to site, and an MCP
// client session with it.
type stdio struct {
	cmd *exec.Cmd
	cs  *mcp.ClientSession
}

// demoSite serves the demo site on loopback for the test's duration.
func demoSite(t *testing.T) *demo.Site {
	t.Helper()
	site, err := demo.StartSite(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { site.Close() })
	return site
}

func startStdio(t *testing.T, dataDir string, site *demo.Site, extra ...string) *stdio {
	t.Helper()
	args := append([]string{"stdio", "--data-dir", dataDir, "--log-level", "warn"}, extra...)
	cmd := cliCommand(append(args, demo.StdioArgs(site)...)...)
	cmd.Stderr = testWriter{t}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{Capabilities: demo.ClientCapabilities()})
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to bastion stdio: %v", err)
	}
	s := &stdio{cmd: cmd, cs: cs}
	t.Cleanup(func() { cs.Close() })
	return s
}

// testWriter sends a child's stderr to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("stdio: %s", bytes.TrimRight(p, "\n"))
	return len(p), nil
}

// toolResult is the part of a tool result the tests read.
type toolResult struct {
	Job struct {
		JobID    string `json:"job_id"`
		Status   string `json:"status"`
		ReviewID string `json:"review_id"`
		Reused   bool   `json:"reused"`
		Error    *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"job"`
	Review *struct {
		Grade    string `json:"grade"`
		Findings []struct {
			FindingID string `json:"finding_id"`
		} `json:"findings"`
		Coverage struct {
			State           string `json:"state"`
			CapturesSkipped []struct {
				What   string `json:"what"`
				Reason string `json:"reason"`
			} `json:"captures_skipped"`
		} `json:"coverage"`
	} `json:"review"`
	Recheck *struct {
		Outcomes []struct {
			FindingID string         `json:"finding_id"`
			Outcome   string         `json:"outcome"`
			Facts     map[string]any `json:"facts"`
		} `json:"outcomes"`
	} `json:"recheck"`
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
}

func (s *stdio) call(t *testing.T, tool string, args map[string]any) toolResult {
	t.Helper()
	res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var r toolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: %v in %s", tool, err, raw)
	}
	if res.IsError {
		t.Fatalf("%s: tool error %s", tool, raw)
	}
	return r
}

// wait polls a job until it leaves queued and running.
func (s *stdio) wait(t *testing.T, jobID string, limit time.Duration) toolResult {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		r := s.call(t, "design_review_get", map[string]any{"job_id": jobID, "view": "status"})
		if r.Job.Status != "queued" && r.Job.Status != "running" {
			return s.call(t, "design_review_get", map[string]any{"job_id": jobID, "view": "findings"})
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s after %s", jobID, r.Job.Status, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func submitArgs(key string) map[string]any {
	return map[string]any{
		"url": "https://" + demo.Host + "/pricing", "routes": []string{"/pricing"},
		"viewports": []string{"mobile", "desktop"}, "expected_revision": demo.Revision1,
		"client_request_id": key,
	}
}

// TestStdioRestartRecovery kills `bastion stdio` with SIGKILL while a review
// runs and starts a new one on the same data directory: the job completes
// (or fails with a kept reason), and a retry of the same client_request_id
// is the same job.
func TestStdioRestartRecovery(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	site := demoSite(t)
	dataDir := t.TempDir()
	// Short timings so the new process rescues the orphaned job quickly.
	timing := []string{"--review-timeout", "6s", "--rescue-stuck-after", "10s"}
	const key = "e2e-restart-0001"

	first := startStdio(t, dataDir, site, timing...)
	sub := first.call(t, "design_review", submitArgs(key))
	jobID := sub.Job.JobID
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := first.call(t, "design_review_get", map[string]any{"job_id": jobID, "view": "status"})
		if r.Job.Status == "running" {
			break
		}
		if r.Job.Status != "queued" || time.Now().After(deadline) {
			t.Fatalf("job %s is %s; want it running before the kill", jobID, r.Job.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := first.cmd.Process.Kill(); err != nil { // SIGKILL: nothing runs on the way out
		t.Fatal(err)
	}
	first.cs.Close() // reaps the dead child
	killed := time.Now()

	second := startStdio(t, dataDir, site, timing...)
	r := second.call(t, "design_review_get", map[string]any{"job_id": jobID, "view": "status"})
	if r.Job.Status == "completed" {
		t.Fatalf("job %s already completed right after the kill; the kill did not interrupt it", jobID)
	}
	done := second.wait(t, jobID, 90*time.Second)
	t.Logf("job %s %s %s after the kill", jobID, done.Job.Status, time.Since(killed).Round(100*time.Millisecond))
	switch done.Job.Status {
	case "completed":
		// The rescued run has the same short review timeout; on a loaded
		// machine its captures may not fit in it. That is a kept reason
		// too, as long as the review names every capture it skipped.
		if done.Review == nil {
			t.Fatalf("completed without a review: %+v", done)
		}
		if len(done.Review.Findings) == 0 {
			cov := done.Review.Coverage
			if cov.State == "full" || len(cov.CapturesSkipped) == 0 {
				t.Errorf("completed without findings and without a skip: %+v", done.Review)
			}
			for _, s := range cov.CapturesSkipped {
				if s.What == "" || s.Reason == "" {
					t.Errorf("skip without a reason: %+v", s)
				}
			}
			t.Logf("rescued review completed partial (%s): %+v", cov.State, cov.CapturesSkipped)
		}
	case "failed":
		if done.Job.Error == nil || done.Job.Error.Code == "" || done.Job.Error.Message == "" {
			t.Errorf("failed without a reason: %+v", done.Job)
		}
	default:
		t.Errorf("job ended %s; want completed or failed", done.Job.Status)
	}
	again := second.call(t, "design_review", submitArgs(key))
	if again.Job.JobID != jobID || !again.Job.Reused {
		t.Errorf("resubmit = job %s reused %t; want job %s reused", again.Job.JobID, again.Job.Reused, jobID)
	}
}

// TestStdioRecheckAcrossConnections reviews in one `bastion stdio` process,
// which then exits on stdin EOF, deploys the fixed revision, and rechecks
// from a second process on the same data directory.
func TestStdioRecheckAcrossConnections(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	site := demoSite(t)
	dataDir := t.TempDir()

	first := startStdio(t, dataDir, site)
	sub := first.call(t, "design_review", submitArgs("e2e-recheck-review-1"))
	rev := first.wait(t, sub.Job.JobID, 90*time.Second)
	if rev.Job.Status != "completed" || rev.Review == nil || len(rev.Review.Findings) == 0 {
		t.Fatalf("review: %+v", rev.Job)
	}
	var ids []string
	for _, f := range rev.Review.Findings {
		ids = append(ids, f.FindingID)
	}
	// stdin EOF: the server stops its workers and exits cleanly.
	if err := first.cs.Close(); err != nil {
		t.Errorf("first server did not exit cleanly: %v", err)
	}
	if st := first.cmd.ProcessState; st == nil || !st.Success() {
		t.Errorf("first server exit: %v", st)
	}

	site.SetRevision(2)
	second := startStdio(t, dataDir, site)
	rc := second.call(t, "design_recheck", map[string]any{
		"review_id": rev.Job.ReviewID, "finding_ids": ids, "expected_revision": demo.Revision2,
		"client_request_id": "e2e-recheck-rck-1",
	})
	res := second.wait(t, rc.Job.JobID, 90*time.Second)
	if res.Job.Status != "completed" || res.Recheck == nil {
		t.Fatalf("recheck: %+v", res.Job)
	}
	tally := map[string]int{}
	for _, o := range res.Recheck.Outcomes {
		tally[o.Outcome]++
		if o.Outcome == "failed" && len(o.Facts) == 0 {
			t.Errorf("failed outcome %s without measured facts", o.FindingID)
		}
	}
	if len(res.Recheck.Outcomes) != len(ids) || tally["passed"] == 0 || tally["failed"] == 0 {
		t.Errorf("recheck outcomes %v over %d findings; want every finding judged, some passed and some failed", tally, len(ids))
	}
}

func TestTargetsCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const host = "unpublished.bastion-test.invalid"

	out, _, code := runCLI(t, "targets", "list", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "no targets") {
		t.Errorf("empty list: %d %q", code, out)
	}
	out, errOut, code := runCLI(t, "targets", "add", host, "--data-dir", dir)
	if code != 0 {
		t.Fatalf("add: %d %s", code, errOut)
	}
	tok := regexp.MustCompile(`bastion-verification=([a-z0-9]+)`).FindStringSubmatch(out)
	if tok == nil || !strings.Contains(out, "_bastion-challenge."+host) ||
		!strings.Contains(out, "https://"+host+"/.well-known/bastion-verification.txt") ||
		!strings.Contains(out, "bastion targets verify "+host) {
		t.Fatalf("add printed:\n%s", out)
	}
	again, _, _ := runCLI(t, "targets", "add", host, "--data-dir", dir)
	if !strings.Contains(again, tok[0]) {
		t.Errorf("a second add changed the live challenge:\n%s", again)
	}

	_, errOut, code = runCLI(t, "targets", "verify", host, "--data-dir", dir)
	if code != 1 || !strings.Contains(errOut, "DOMAIN_UNVERIFIED") ||
		!strings.Contains(errOut, "publish a DNS TXT record") || !strings.Contains(errOut, tok[1]) {
		t.Errorf("verify with nothing published: %d %q; want DOMAIN_UNVERIFIED saying what to publish", code, errOut)
	}
	_, errOut, code = runCLI(t, "targets", "verify", "never-added.bastion-test.invalid", "--data-dir", dir)
	if code != 1 || !strings.Contains(errOut, "DOMAIN_UNVERIFIED") || !strings.Contains(errOut, "bastion targets add") {
		t.Errorf("verify of a host never added: %d %q", code, errOut)
	}

	out, _, code = runCLI(t, "targets", "list", "--data-dir", dir)
	if code != 0 || !regexp.MustCompile(regexp.QuoteMeta(host)+`\s+pending\s+-`).MatchString(out) {
		t.Errorf("list: %d\n%s", code, out)
	}
	out, _, _ = runCLI(t, "targets", "list", "--data-dir", dir, "--tenant", "acme")
	if !strings.Contains(out, "no targets") {
		t.Errorf("another tenant sees local's targets:\n%s", out)
	}
	_, errOut, code = runCLI(t, "targets", "add", "10.0.0.1", "--data-dir", dir)
	if code != 1 || !strings.Contains(errOut, "URL_NOT_ALLOWED") {
		t.Errorf("add of an IP literal: %d %q", code, errOut)
	}
}

// TestStdioUntrustedCertificate shows the browser trusts only the pinned
// certificate: with another key's SPKI hash the sample site's self-signed
// certificate is refused, and the review reports nothing reviewed (or
// fails with a reason) instead of findings.
func TestStdioUntrustedCertificate(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	site := demoSite(t)
	other, err := demo.StartSite(nil)
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	args := []string{"stdio", "--data-dir", t.TempDir(), "--log-level", "warn",
		"--unsafe-demo-site", demo.Host + "=" + site.Addr().String(), "--unsafe-demo-spki", other.SPKIHash()}
	cmd := cliCommand(args...)
	cmd.Stderr = testWriter{t}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &stdio{cmd: cmd, cs: cs}
	defer cs.Close()
	sub := s.call(t, "design_review", submitArgs("e2e-untrusted-0001"))
	res := s.wait(t, sub.Job.JobID, 90*time.Second)
	switch {
	case res.Job.Status == "failed" && res.Job.Error != nil && res.Job.Error.Code != "":
	case res.Job.Status == "completed" && res.Review != nil && res.Review.Grade == "nothing_reviewed" && len(res.Review.Findings) == 0:
	default:
		t.Errorf("review of an untrusted certificate: %+v; want nothing reviewed", res.Job)
	}
	t.Logf("untrusted certificate: job %s, error %+v", res.Job.Status, res.Job.Error)
}
