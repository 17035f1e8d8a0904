package reviewmcp_test

import (
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/demo"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review/reviewtest"
	"github.com/bastion-mcp/bastion/reviewmcp"
)

// demoSite serves the demo's sample site (revision 1, its seeded defects)
// over plain HTTP on loopback and returns its base URL.
func demoSite(t *testing.T) string {
	t.Helper()
	site, err := demo.StartSite(quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { site.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: site, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// viewSize is what one view costs a client: structuredContent's bytes and
// the text blocks' bytes.
type viewSize struct{ structured, text int }

func sizeOf(t *testing.T, res *mcp.CallToolResult) viewSize {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	s := viewSize{structured: len(b)}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s.text += len(tc.Text)
		}
	}
	return s
}

// TestViewBudgetsOnDemoReview reviews the demo's sample page with the real
// engine and holds each view to a size budget: the summary stays small
// however many findings there are, the text is a rendering rather than a
// second copy of the data, and the views differ as their names say.
func TestViewBudgetsOnDemoReview(t *testing.T) {
	t.Parallel()
	eng := reviewtest.ChromiumEngine(t)
	h := newHarness(t, eng, demoSite(t), true)
	c := h.connect(t, reviewtest.NewPrincipal(t, "acme", "alice", principal.AllScopes()...), clientOpts{})
	res := c.call(reviewmcp.ToolReview, map[string]any{
		"url": "https://" + demo.Host + "/pricing", "routes": []string{"/pricing"},
		"viewports": []string{"mobile", "tablet", "desktop"}, "client_request_id": "views-demo-1",
	})
	wantOK(t, res)
	var sub submitOut
	decodeInto(t, res, &sub)
	if j := c.waitDone(sub.Job.JobID); j.Status != "completed" {
		t.Fatalf("demo review ended %s: %+v", j.Status, j.Error)
	}
	sizes := map[string]viewSize{}
	outs := map[string]getOut{}
	for _, v := range []string{"status", "summary", "findings", "focus", "evidence"} {
		res, out := c.get(sub.Job.JobID, v)
		sizes[v], outs[v] = sizeOf(t, res), out
		if testing.Verbose() && v == "summary" {
			t.Logf("summary text:\n%s\nstructuredContent: %s", res.Content[0].(*mcp.TextContent).Text, mustJSON(res.StructuredContent))
		}
		t.Logf("%-8s structuredContent %6d B, text %5d B", v, sizes[v].structured, sizes[v].text)
	}
	n := len(outs["findings"].Review.Findings)
	t.Logf("%d findings", n)
	if n < 5 {
		t.Fatalf("the demo page gave %d findings; the budgets below need a realistic review", n)
	}
	budget := func(view string, structured, text int) {
		t.Helper()
		if s := sizes[view]; s.structured > structured || s.text > text {
			t.Errorf("%s view: structuredContent %d B (budget %d), text %d B (budget %d)", view, s.structured, structured, s.text, text)
		}
	}
	budget("status", 600, 300)
	budget("summary", 2048, 1536)
	budget("findings", 600+3500*n, 300*n+600)
	budget("focus", sizes["findings"].structured, sizes["findings"].text)
	// The evidence view's structuredContent is the critique and its
	// presentation; the crops travel only as image blocks.
	budget("evidence", sizes["findings"].structured+1024, 300*n+600)
	if f := sizes["findings"]; f.text*2 > f.structured {
		t.Errorf("findings text %d B against %d B of data: the text repeats the data", f.text, f.structured)
	}
	if s := outs["summary"]; s.Summary == nil || s.Summary.Findings != n || len(s.Summary.Top) != 3 {
		t.Errorf("summary %+v for %d findings", s.Summary, n)
	}
	if fo := outs["focus"].Review; len(fo.Findings) == 0 || len(fo.Findings) > n {
		t.Errorf("focus has %d of %d findings", len(fo.Findings), n)
	}
}
