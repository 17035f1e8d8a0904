package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/bastion-mcp/bastion/app"
	"github.com/bastion-mcp/bastion/enginehttp"
	"github.com/bastion-mcp/bastion/enginehttp/enginetest"
	"github.com/bastion-mcp/bastion/internal/testenv"
	"github.com/bastion-mcp/bastion/review/reviewtest"
)

// TestEngineServeReviewsOverChromium drives bastion engine serve's
// composition over loopback HTTP with a client written from §14 (sign,
// submit, poll) and has real Chromium review a page served on loopback.
func TestEngineServeReviewsOverChromium(t *testing.T) {
	chrome := testenv.Chromium(t)
	site := reviewtest.NewSite(t, map[string]string{"/": `<!doctype html><html><body style="background:#fff">` +
		`<h1>Pricing</h1><p id="faint" style="color:#ddd">This text is far too faint to read.</p></body></html>`})
	dir := t.TempDir()
	secretsPath := filepath.Join(dir, "secrets")
	secret, err := enginehttp.RotateSecret(context.Background(), secretsPath, "acme")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	baseC := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- app.RunEngineServe(ctx, app.Config{DataDir: filepath.Join(dir, "data"), AllowPrivate: true, Chrome: chrome},
			app.EngineServeConfig{Listen: "127.0.0.1:0", SecretsFile: secretsPath, Listening: func(u string) { baseC <- u }})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunEngineServe: %v", err)
		}
	})
	var base string
	select {
	case base = <-baseC:
	case err := <-done:
		t.Fatalf("RunEngineServe ended early: %v", err)
	}
	cl := &enginetest.Client{T: t, Base: base, Installation: "acme", Secret: secret}
	call := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		st, _, m := cl.Do(method, path, body)
		return st, m
	}
	st, m := call("POST", "/jobs", `{"idempotencyKey":"req-chromium-1","depth":"deep","request":{"url":"`+site.URL+`/","routes":["/"],"viewports":["desktop"]}}`)
	if st != http.StatusAccepted {
		t.Fatalf("submit: %d %v", st, m)
	}
	id := m["jobId"].(string)
	for m["state"] != "completed" {
		if m["state"] == "failed" {
			t.Fatalf("job failed: %v", m)
		}
		_, m = call("GET", "/jobs/"+id, "")
	}
	res := m["result"].(map[string]any)
	cov := res["coverage"].(map[string]any)
	if rv, _ := cov["routesReviewed"].([]any); len(rv) != 1 || rv[0] != "/" {
		t.Fatalf("coverage: %v", cov)
	}
	found := false
	for _, f := range res["findings"].([]any) {
		if f.(map[string]any)["dimension"] == "contrast" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no contrast finding for #ddd on #fff: %v", res["findings"])
	}
	shots := res["artifacts"].(map[string]any)["annotatedScreenshots"].([]any)
	if len(shots) == 0 {
		t.Fatal("no annotated screenshot for the contrast finding")
	}
	r, err := http.Get(shots[0].(map[string]any)["url"].(string))
	if err != nil || r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("artifact: %v %v", r, err)
	}
	r.Body.Close()
	// The page's overview, a PNG under its own signed URL, with the
	// contrast finding marked on it by its place in findings.
	ovs, _ := res["artifacts"].(map[string]any)["pageOverviews"].([]any)
	if len(ovs) != 1 {
		t.Fatalf("page overviews %v, want the one page at its one viewport", ovs)
	}
	ov := ovs[0].(map[string]any)
	marks, _ := ov["marks"].([]any)
	if len(marks) == 0 || marks[0].(map[string]any)["n"] == nil {
		t.Errorf("the overview marks nothing: %v", ov)
	}
	r, err = http.Get(ov["url"].(string))
	if err != nil || r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("overview artifact: %v %v", r, err)
	}
	r.Body.Close()
	if os.Getenv("ENGINE_TEST_DUMP") != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		t.Log(string(b))
	}
}
