package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/app"
	"github.com/bastion-mcp/bastion/store"
)

// TestFeedbackExport runs `bastion feedback export` (the README's command,
// with the store named) on a store holding two tenants' events: JSON lines, one tenant with --tenant, every tenant
// without, and a typed refusal for conflicting stores.
func TestFeedbackExport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	b, err := app.OpenBase(ctx, app.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i, tenant := range []string{"bolt", "acme", "acme"} {
		e := &store.FeedbackEvent{Tenant: tenant, ID: "fb_" + string(rune('a'+i)), ReviewID: "rev_1", FindingID: "f_001", Kind: "contrast",
			Verdict: store.Dismissed, Reason: "on brand", PrincipalID: "alice", At: t0.Add(time.Duration(i) * time.Second)}
		if err := b.Store.FeedbackRecord(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()

	lines := func(t *testing.T, args ...string) []map[string]any {
		t.Helper()
		out, stderr, code := runCLI(t, append([]string{"feedback", "export", "--data-dir", dir}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var got []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			got = append(got, m)
		}
		return got
	}
	acme := lines(t, "--tenant", "acme")
	if len(acme) != 2 || acme[0]["event_id"] != "fb_b" || acme[1]["event_id"] != "fb_c" || acme[0]["verdict"] != "dismissed" ||
		acme[0]["kind"] != "contrast" || acme[0]["reason"] != "on brand" || acme[0]["at"] != "2026-12-01T09:00:01.000Z" {
		t.Fatalf("acme export = %v", acme)
	}
	all := lines(t)
	if len(all) != 3 || all[0]["tenant_id"] != "acme" || all[2]["tenant_id"] != "bolt" {
		t.Fatalf("export of every tenant = %v", all)
	}
	_, stderr, code := runCLI(t, "feedback", "export", "--data-dir", dir, "--database-url", "postgres://127.0.0.1/x")
	if code != 1 || !strings.Contains(stderr, "INVALID_ARGUMENT") {
		t.Fatalf("both stores: exit %d, %q", code, stderr)
	}
}
