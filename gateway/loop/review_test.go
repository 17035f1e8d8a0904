package loop_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/app"
	"github.com/bastion-mcp/bastion/audit"
	"github.com/bastion-mcp/bastion/internal/testenv"
	"github.com/bastion-mcp/bastion/principal"
)

// TestReviewServerInProcess: the design-review server, composed for real
// (SQLite store, Chromium pool), is an in-process upstream: its tools are
// listed under review__ and a call reaches it through every gate.
func TestReviewServerInProcess(t *testing.T) {
	t.Parallel()
	chrome := testenv.Chromium(t)
	ctx := context.Background()
	a, err := app.Open(ctx, app.Config{DataDir: t.TempDir(), Chrome: chrome})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	inproc := inProcess(func() *mcp.Server { return a.MCPServer(principal.Local()) })
	b := setup(t, `
[server.review]
kind = "review"

[[policy.rule]]
name = "readers"
action = "allow"
match = ["review__design_review_get"]
scopes = ["reviews:read"]
`, setupOpts{inProcess: map[string]func(context.Context) (mcp.Transport, error){"review": inproc}})
	cs := b.connect(t, alice, clientOpts{})
	if got := toolNames(t, cs); !slices.Equal(got, []string{"review__design_review_get"}) {
		t.Fatalf("tools %v", got)
	}
	got, _ := call(t, cs, "review__design_review_get", map[string]any{"job_id": "job_doesnotexist"})
	if strings.HasPrefix(got, "bastion") {
		t.Fatalf("the call did not reach the review server: %q", got)
	}
	if got, isErr := call(t, cs, "review__design_review", map[string]any{"url": "https://example.com"}); !isErr || !strings.HasPrefix(got, "bastion denied: ") {
		t.Fatalf("unlisted review tool: %q", got)
	}
	recs := b.records(t)
	if len(recs) != 2 || recs[0].Decision != audit.Allowed || recs[0].Server != "review" || recs[1].Decision != audit.Denied {
		t.Errorf("records %+v", recs)
	}
}
