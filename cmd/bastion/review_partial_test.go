package main

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/internal/testenv"
)

// TestReviewPartialExitStatus: a review that leaves a requested route out
// exits 3 and says why, so a CI gate cannot pass on it; --allow-partial
// accepts it with status 0 and the same report.
func TestReviewPartialExitStatus(t *testing.T) {
	t.Parallel()
	testenv.Chromium(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html lang="en"><head><meta name="viewport" content="width=device-width,initial-scale=1"><title>t</title></head><body><h1>Plans</h1></body></html>`)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	url := "http://" + ln.Addr().String() + "/"
	args := []string{"review", url, "--allow-private", "--viewports", "mobile", "--routes", "/,/gone"}

	stdout, stderr, code := runCLI(t, args...)
	if code != exitPartial {
		t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, exitPartial, stdout, stderr)
	}
	if !strings.Contains(stdout, "not reviewed: /gone @ mobile: CAPTURE_FAILED: the page answered HTTP 404") {
		t.Errorf("stdout does not name the skip and its reason:\n%s", stdout)
	}
	if !strings.Contains(stderr, "bastion: partial review") || !strings.Contains(stderr, "--allow-partial") {
		t.Errorf("stderr does not say why the status is non-zero:\n%s", stderr)
	}

	stdout, stderr, code = runCLI(t, append(args, "--json")...)
	if code != exitPartial || !strings.Contains(stderr, "not reviewed: /gone @ mobile") || !strings.Contains(stdout, `"skipped"`) {
		t.Errorf("--json: exit %d; stderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}

	stdout, stderr, code = runCLI(t, append(args, "--allow-partial")...)
	if code != 0 || !strings.Contains(stdout, "not reviewed: /gone @ mobile") {
		t.Errorf("--allow-partial: exit %d; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
