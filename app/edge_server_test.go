package app

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/demo"
	"github.com/bastion-mcp/bastion/principal"
)

// TestEdgeServerActsForEachCaller checks that the one design-review server
// the edge shares among all clients acts for the caller of each request:
// two principals of one tenant, interleaved on both wires (the stateless
// wire makes a session per request on the shared server), each see their
// own job and never the other's, and a request's principal never leaks into
// a concurrent one's.
func TestEdgeServerActsForEachCaller(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	site, err := demo.StartSite(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { site.Close() })
	a, err := Open(ctx, Config{
		DataDir: t.TempDir(),
		Demo:    &Demo{Tenant: "dev", Host: demo.Host, StubAddr: demo.StubAddr, Site: site.Addr(), SPKI: site.SPKIHash()},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Not started: submitted jobs stay queued, which is all this needs.
	t.Cleanup(func() { a.Close(context.WithoutCancel(ctx)) })
	h, err := a.NewHTTP(ServeConfig{Addr: "127.0.0.1:0", AdminAddr: "-"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.Handler)
	t.Cleanup(srv.Close)

	issuer := auth.NewPATIssuer(a.Store, nil, nil)
	type caller struct{ token, job string }
	callers := map[string]*caller{}
	for _, id := range []string{"alice", "bob"} {
		tok, _, err := issuer.Create(ctx, "dev", id, principal.AllScopes(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		c := &caller{token: tok}
		res := edgeCall(t, srv.URL, tok, "2026-07-28", "design_review", map[string]any{
			"url": "https://" + demo.Host + "/pricing", "expected_revision": demo.Revision1,
			"client_request_id": "edge-shared-" + id,
		})
		if res.IsError {
			t.Fatalf("%s: submit failed: %s", id, resultText(res))
		}
		var out struct {
			Job struct {
				JobID string `json:"job_id"`
			}
		}
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, &out); err != nil || out.Job.JobID == "" {
			t.Fatalf("%s: submit gave no job id: %s (%v)", id, raw, err)
		}
		c.job = out.Job.JobID
		callers[id] = c
	}

	var wg sync.WaitGroup
	for _, wire := range []string{"2025-11-25", "2026-07-28"} {
		for me, c := range callers {
			for other, o := range callers {
				wg.Go(func() {
					for range 5 {
						res := edgeCall(t, srv.URL, c.token, wire, "design_review_get", map[string]any{"job_id": o.job, "view": "status"})
						text := resultText(res)
						switch {
						case me == other && res.IsError:
							t.Errorf("%s on %s: own job: %s", me, wire, text)
						case me != other && (!res.IsError || !strings.Contains(text, "JOB_NOT_FOUND")):
							t.Errorf("%s on %s: %s's job: error=%v %s, want JOB_NOT_FOUND", me, wire, other, res.IsError, text)
						}
					}
				})
			}
		}
	}
	wg.Wait()
}

// edgeCall makes one tool call as token's principal on a new client
// session of the given protocol revision.
func edgeCall(t *testing.T, base, token, wire, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "edge-shared-test", Version: "1"}, nil)
	hc := &http.Client{Transport: bearerTransport{token}}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: wire})
	if err != nil {
		t.Errorf("connect on %s: %v", wire, err)
		return &mcp.CallToolResult{IsError: true}
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Errorf("%s on %s: %v", tool, wire, err)
		return &mcp.CallToolResult{IsError: true}
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	raw, _ := json.Marshal(res)
	return string(raw)
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
