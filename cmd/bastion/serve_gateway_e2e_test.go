package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/demo"
	"github.com/bastion-mcp/bastion/internal/testenv"
)

// readmeGatewayTOML returns the bastion.toml of the README's "Remote
// gateway" section, so the README's example is the one this test serves. It
// governs the in-process review server: rechecks denied by name, submissions
// for writers, reads for everyone, cancels for the "admin" role only;
// design_review_panel_action matches nothing (deny by default).
func readmeGatewayTOML(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## Remote gateway: `bastion serve --gateway`")
	if ok {
		_, section, ok = strings.Cut(section, "```toml\n")
	}
	block, _, closed := strings.Cut(section, "```")
	if !ok || !closed || !strings.Contains(block, `kind = "review"`) {
		t.Fatal("README.md has no bastion.toml block in its Remote gateway section")
	}
	return block
}

// createToken creates a PAT with the CLI on dataDir's store.
func createToken(t *testing.T, dataDir, tenant, scopes string) string {
	t.Helper()
	out, errOut, st := runCLI(t, "token", "create", "--tenant", tenant, "--scopes", scopes, "--name", "gw-"+tenant, "--expires", "1d", "--data-dir", dataDir)
	tok := strings.TrimSpace(out)
	if st != 0 || !strings.HasPrefix(tok, "bst_") {
		t.Fatalf("token create --tenant %s: %d %q %q", tenant, st, out, errOut)
	}
	return tok
}

// toolNames lists the tools the session sees, sorted.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// callText calls a tool and returns its text content, its structured
// content as JSON, and whether it is a tool error.
func callText(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v (a gateway denial must be a tool result)", tool, err)
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	raw, _ := json.Marshal(res.StructuredContent)
	return strings.Join(text, "\n"), string(raw), res.IsError
}

// ledgerRecords reads every record of the ledger in dir with `bastion audit
// tail --format json`.
func ledgerRecords(t *testing.T, dir string) []map[string]any {
	t.Helper()
	out, errOut, st := runCLI(t, "audit", "tail", "--dir", dir, "--format", "json", "-n", "0")
	if st != 0 {
		t.Fatalf("audit tail: %d %q", st, errOut)
	}
	var recs []map[string]any
	for line := range strings.Lines(out) {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("audit tail line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// findRecord returns the first record whose fields equal want.
func findRecord(recs []map[string]any, want map[string]any) map[string]any {
	for _, r := range recs {
		ok := true
		for k, v := range want {
			if r[k] != v {
				ok = false
				break
			}
		}
		if ok {
			return r
		}
	}
	return nil
}

// TestServeGateway runs one `bastion serve --gateway` with personal access
// tokens and JWTs: tools/list is filtered by policy per principal, a policy
// denial is a readable tool result, an allowed call reaches the review
// server as the caller (tenant isolation holds through the gateway and via
// REST), JWT roles open a role-guarded tool, and a request without a token
// is refused and recorded in the ledger.
func TestServeGateway(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	site := demoSite(t)
	iss := startIssuer(t)
	const resource = "https://bastion.example.test/mcp"
	dir := t.TempDir()
	dataDir, auditDir := filepath.Join(dir, "data"), filepath.Join(dir, "audit")
	cfg := filepath.Join(dir, "bastion.toml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "%s\n[audit]\ndir = %q\n", readmeGatewayTOML(t), auditDir), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, st := runCLI(t, "validate", "--config", cfg); st != 0 {
		t.Fatalf("validate: %d %s %s", st, out, errOut)
	}
	tokA := createToken(t, dataDir, devTenant, "reviews:read,reviews:write")
	tokB := createToken(t, dataDir, "other", "reviews:read")
	s := startServe(t, "serve-gateway", iss.env, append([]string{"--gateway", cfg, "--data-dir", dataDir, "--log-level", "warn",
		"--resource", resource, "--issuer", iss.url, "--jwks-url", iss.url + "/jwks", "--jwks-allow-private", "--roles-claim", "roles"}, demo.StdioArgs(site)...)...)

	// tools/list is the policy's view for each principal, on both wires.
	csA := connectHTTP(t, s.mcpURL, tokA, "2025-11-25")
	csB := connectHTTP(t, s.mcpURL, tokB, "2026-07-28")
	if got, want := toolNames(t, csA), []string{"review__design_review", "review__design_review_get"}; !slices.Equal(got, want) {
		t.Errorf("tenant A (read+write) sees %v, want %v", got, want)
	}
	if got, want := toolNames(t, csB), []string{"review__design_review_get"}; !slices.Equal(got, want) {
		t.Errorf("tenant B (read only) sees %v, want %v", got, want)
	}

	// A call a rule denies is a tool result the model can read.
	text, _, isErr := callText(t, csA, "review__design_recheck", map[string]any{
		"review_id": "rev_x", "finding_ids": []string{"f"}, "expected_revision": "r", "client_request_id": "gw-recheck-1",
	})
	if !isErr || !strings.HasPrefix(text, "bastion denied: ") || !strings.Contains(text, "no-rechecks") {
		t.Errorf("denied recheck: error %v, %q", isErr, text)
	}

	// An allowed call reaches the review server as tenant A: the job is
	// A's, over REST and through the gateway, and not B's.
	text, raw, isErr := callText(t, csA, "review__design_review", submitArgs("gw-review-1"))
	var sub toolResult
	if err := json.Unmarshal([]byte(raw), &sub); isErr || err != nil || sub.Job.JobID == "" {
		t.Fatalf("submit through the gateway: error %v, %s %s", isErr, text, raw)
	}
	job := sub.Job.JobID
	if code, _, body := httpDo(t, "GET", s.base+"/api/v1/reviews/"+job, tokA, ""); code != http.StatusOK || !strings.Contains(body, job) {
		t.Errorf("REST GET of the gateway's job as tenant A: %d %s", code, body)
	}
	if code, _, body := httpDo(t, "GET", s.base+"/api/v1/reviews/"+job, tokB, ""); code != http.StatusNotFound {
		t.Errorf("REST GET of tenant A's job as tenant B: %d %s, want 404", code, body)
	}
	if text, raw, isErr := callText(t, csA, "review__design_review_get", map[string]any{"job_id": job, "view": "status"}); isErr || !strings.Contains(raw, job) {
		t.Errorf("get through the gateway as A: error %v, %s %s", isErr, text, raw)
	}
	text, raw, isErr = callText(t, csB, "review__design_review_get", map[string]any{"job_id": job, "view": "status"})
	if !isErr || strings.Contains(text, "bastion denied") || !strings.Contains(text+raw, "JOB_NOT_FOUND") {
		t.Errorf("get of A's job through the gateway as B: error %v, %s %s; want the review server's JOB_NOT_FOUND", isErr, text, raw)
	}

	// JWT roles reach the policy: "admin" sees and calls the cancel tool
	// (the review server answers, as tenant t1, that A's job is not
	// there), another role neither sees it nor gets past the policy.
	jwt := func(roles any) string {
		c := map[string]any{"sub": "alice", "aud": resource, "tenant_id": "t1", "scope": "reviews:read reviews:cancel"}
		if roles != nil {
			c["roles"] = roles
		}
		return iss.token(c)
	}
	admin := connectHTTP(t, s.mcpURL, jwt([]string{"admin"}), "2026-07-28")
	if got, want := toolNames(t, admin), []string{"review__design_review_cancel", "review__design_review_get"}; !slices.Equal(got, want) {
		t.Errorf("JWT with role admin sees %v, want %v", got, want)
	}
	text, raw, isErr = callText(t, admin, "review__design_review_cancel", map[string]any{"job_id": job})
	if !isErr || strings.Contains(text, "bastion denied") || !strings.Contains(text+raw, "JOB_NOT_FOUND") {
		t.Errorf("cancel as admin of tenant t1: error %v, %s %s; want the review server's JOB_NOT_FOUND", isErr, text, raw)
	}
	viewer := connectHTTP(t, s.mcpURL, jwt("viewer auditor"), "2025-11-25")
	if got, want := toolNames(t, viewer), []string{"review__design_review_get"}; !slices.Equal(got, want) {
		t.Errorf("JWT with roles viewer, auditor sees %v, want %v", got, want)
	}
	if text, _, isErr := callText(t, viewer, "review__design_review_cancel", map[string]any{"job_id": job}); !isErr || !strings.HasPrefix(text, "bastion denied: ") {
		t.Errorf("cancel without the admin role: error %v, %q", isErr, text)
	}
	if code, h, _ := httpDo(t, "POST", s.mcpURL, jwt(7), toolsListBody); code != http.StatusUnauthorized || !strings.Contains(h.Get("WWW-Authenticate"), "invalid_token") {
		t.Errorf("JWT with a malformed roles claim: %d %q", code, h.Get("WWW-Authenticate"))
	}

	// No token: 401, and the refusal is in the ledger.
	if code, _, _ := httpDo(t, "POST", s.mcpURL, "", toolsListBody); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	recs := ledgerRecords(t, auditDir)
	if r := findRecord(recs, map[string]any{"decision": "edge_rejected", "rule": "edge:auth_refused", "method": "http", "tenant": ""}); r == nil || !strings.HasPrefix(r["reason"].(string), "401") {
		t.Errorf("no ledger record of the 401: %v", r)
	}
	if r := findRecord(recs, map[string]any{"decision": "allowed", "tool": "review__design_review", "tenant": devTenant, "server": "review"}); r == nil {
		t.Error("no ledger record of tenant A's allowed submission")
	}
	if r := findRecord(recs, map[string]any{"decision": "denied", "tool": "review__design_recheck", "tenant": devTenant, "rule": "policy:no-rechecks"}); r == nil {
		t.Error("no ledger record of the denied recheck")
	}
	if out, errOut, st := runCLI(t, "audit", "verify", "--dir", auditDir); st != 0 {
		t.Errorf("audit verify on the live ledger: %d %s %s", st, out, errOut)
	}

	// The gateway's metrics, the review service's and the edge's are on the
	// one admin listener, once the review has run.
	if st := waitGatewayJob(t, csA, job, 4*time.Minute); st != "completed" {
		t.Errorf("the gateway's review ended %s", st)
	}
	checkMetrics(t, scrapeIdle(t, s.admin), gatewayRunMetrics)
}
