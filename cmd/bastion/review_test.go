package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/internal/testenv"
)

func TestReviewCommand(t *testing.T) {
	t.Parallel()
	testenv.Chromium(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html lang="en"><head><meta name="viewport" content="width=device-width,initial-scale=1"><title>t</title>
<style>body{margin:0;font-family:sans-serif} #faint{color:#bbbbbb}</style></head>
<body><h1>Plans</h1><p id="faint">Prices exclude tax.</p></body></html>`)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	url := "http://" + ln.Addr().String() + "/"

	dir := t.TempDir()
	stdout, stderr, code := runCLI(t, "review", url, "--allow-private", "--viewports", "mobile,desktop", "--out", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	var doc struct {
		URL      string            `json:"url"`
		Grade    string            `json:"grade"`
		Findings []json.RawMessage `json:"findings"`
		Coverage struct {
			ViewportsReviewed []string `json:"viewports_reviewed"`
		} `json:"coverage"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("stdout is not the JSON result: %v\n%s", err, stdout)
	}
	if doc.URL != url || doc.Grade == "" || strings.Join(doc.Coverage.ViewportsReviewed, ",") != "mobile,desktop" {
		t.Errorf("result = %+v", doc)
	}
	if !strings.Contains(stderr, "captured / @ mobile") || !strings.Contains(stderr, "done in") {
		t.Errorf("no progress on stderr:\n%s", stderr)
	}
	for _, f := range []string{"review.json", "panel.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("--out did not write %s: %v", f, err)
		}
	}
	written, _ := filepath.Glob(filepath.Join(dir, "evidence", "ev_*.png"))
	if len(doc.Findings) > 0 && len(written) == 0 {
		t.Errorf("%d findings but no evidence files", len(doc.Findings))
	}

	// Without --allow-private the full guard applies: a loopback dev server
	// is refused with a typed error line and exit status 1.
	_, stderr, code = runCLI(t, "review", url)
	if code != 1 || !strings.HasPrefix(stderr, "bastion: URL_NOT_ALLOWED:") && !strings.HasPrefix(stderr, "bastion: DNS_TARGET_PROHIBITED:") {
		t.Errorf("loopback without --allow-private: exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = runCLI(t, "review", url, "--allow-private", "--viewports", "watch")
	if code != 1 || !strings.HasPrefix(stderr, "bastion: INVALID_ARGUMENT:") {
		t.Errorf("unknown viewport: exit %d, stderr %q", code, stderr)
	}
}
