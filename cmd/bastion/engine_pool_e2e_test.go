package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/enginehttp"
	"github.com/bastion-mcp/bastion/internal/testenv"
)

var engineListeningRe = regexp.MustCompile(`bastion engine serve: listening on (http://\S+)`)

// startEngine starts `bastion engine serve` in its own process group (so
// killing the group takes its browser with it, as a lost machine would)
// and returns its base URL and a kill.
func startEngine(t *testing.T, name, secrets string) (string, func()) {
	t.Helper()
	cmd := cliCommand("engine", "serve", "--listen", "127.0.0.1:0", "--secrets", secrets, "--allow-private",
		"--data-dir", t.TempDir(), "--log-level", "warn")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	base := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Logf("%s: %s", name, sc.Text())
			if m := engineListeningRe.FindStringSubmatch(sc.Text()); m != nil {
				base <- m[1]
			}
		}
	}()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	var once sync.Once
	kill := func() {
		once.Do(func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		})
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			t.Errorf("%s did not stop within 15s of SIGTERM", name)
		}
		kill()
	})
	select {
	case u := <-base:
		return u, kill
	case <-exited:
		t.Fatalf("%s exited before listening", name)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not listen within 60s", name)
	}
	return "", nil
}

// heldSite serves a faint-text page at /a and /b. The first request for
// each is held until release is closed, and reported on hits, so the test
// knows both engines' browsers are mid-capture.
func heldSite(t *testing.T, hits chan<- string, release <-chan struct{}) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	held := map[string]bool{}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/a" && r.URL.Path != "/b" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		first := !held[r.URL.Path]
		held[r.URL.Path] = true
		mu.Unlock()
		if first {
			hits <- r.URL.Path
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><body style="background:#fff"><h1>Page %s</h1>`+
			`<p id="faint" style="color:#ddd">This text is far too faint to read.</p></body></html>`, r.URL.Path)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestServeOnEnginePool: two `bastion engine serve` processes behind one
// `bastion serve --engine-url`. A two-route review is spread over both;
// one engine is killed while both are capturing, its part moves to the
// other, and the review completes with both routes and their evidence.
func TestServeOnEnginePool(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	secrets := filepath.Join(t.TempDir(), "engine-secrets")
	if _, err := enginehttp.RotateSecret(context.Background(), secrets, "acme"); err != nil {
		t.Fatal(err)
	}
	e1, kill1 := startEngine(t, "engine-1", secrets)
	e2, _ := startEngine(t, "engine-2", secrets)
	s := startServe(t, "serve-pool", nil, "--dev", "--allow-private", "--data-dir", t.TempDir(), "--log-level", "warn",
		"--engine-url", e1+","+e2, "--engine-secret-file", secrets, "--engine-installation", "acme")
	if code, _, body := httpDo(t, "GET", s.base+"/readyz", "", ""); code != http.StatusOK {
		t.Fatalf("readyz with both engines up: %d %s", code, body)
	}
	hits, release := make(chan string, 2), make(chan struct{})
	site := heldSite(t, hits, release)
	cs := connectHTTP(t, s.mcpURL, s.token, "2025-11-25")
	sub := mustCall(t, cs, "design_review", map[string]any{"url": site + "/", "routes": []string{"/a", "/b"},
		"viewports": []string{"desktop"}, "client_request_id": "pool-review-0001"})
	// Both routes are being captured at once: one on each engine.
	for range 2 {
		select {
		case <-hits:
		case <-time.After(2 * time.Minute):
			t.Fatal("the engines did not both start capturing")
		}
	}
	kill1()
	close(release)
	done := waitJob(t, cs, sub.Job.JobID, 4*time.Minute)
	if done.Job.Status != "completed" {
		t.Fatalf("review ended %s: %+v", done.Job.Status, done.Job.Error)
	}
	_, raw, _ := callHTTP(t, cs, "design_review_get", map[string]any{"job_id": sub.Job.JobID, "view": "findings"})
	var got struct {
		Review struct {
			Findings []struct {
				Kind       string  `json:"kind"`
				Route      string  `json:"route"`
				EvidenceID *string `json:"evidence_id"`
			} `json:"findings"`
			Coverage struct {
				RoutesReviewed []string `json:"routes_reviewed"`
			} `json:"coverage"`
		} `json:"review"`
	}
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatal(err)
	}
	if rv := got.Review.Coverage.RoutesReviewed; !slices.Equal(rv, []string{"/a", "/b"}) {
		t.Fatalf("routes reviewed %q, want /a and /b: %s", rv, raw)
	}
	withEvidence := map[string]bool{}
	for _, f := range got.Review.Findings {
		if f.Kind == "contrast" && f.EvidenceID != nil {
			withEvidence[f.Route] = true
		}
	}
	if !withEvidence["/a"] || !withEvidence["/b"] {
		t.Fatalf("contrast findings with evidence on %v, want /a and /b: %s", withEvidence, raw)
	}
	if code, _, body := httpDo(t, "GET", s.base+"/readyz", "", ""); code != http.StatusOK {
		t.Fatalf("readyz with one engine left: %d %s", code, body)
	}
	out, code := runRoot(t, "doctor", "--data-dir", t.TempDir(), "--engine-url", e1+","+e2, "--engine-secret-file", secrets)
	if code != 0 || !strings.Contains(out, "engines") || strings.Contains(out, "chromium") {
		t.Fatalf("doctor on the pool with one engine left: %d\n%s", code, out)
	}
	out, code = runRoot(t, "doctor", "--data-dir", t.TempDir(), "--engine-url", e1, "--engine-secret-file", secrets)
	if code != 1 || !strings.Contains(out, "no engine of the pool is ready") {
		t.Fatalf("doctor on the dead engine alone: %d\n%s", code, out)
	}
}

// TestServeEnginePoolFlags: the engine flags are checked before anything
// opens.
func TestServeEnginePoolFlags(t *testing.T) {
	t.Parallel()
	secrets := filepath.Join(t.TempDir(), "engine-secrets")
	if _, err := enginehttp.RotateSecret(context.Background(), secrets, "acme"); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"SecretWithoutURL": {[]string{"--engine-secret-file", secrets}, "need --engine-url"},
		"NoSecretFile":     {[]string{"--engine-url", "http://127.0.0.1:1"}, "--engine-secret-file"},
		"UnknownInst":      {[]string{"--engine-url", "http://127.0.0.1:1", "--engine-secret-file", secrets, "--engine-installation", "globex"}, `no line for installation "globex"`},
		"BadURL":           {[]string{"--engine-url", "ftp://x", "--engine-secret-file", secrets}, "engine URL 1"},
	} {
		out, code := runRoot(t, append([]string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", "-", "--data-dir", t.TempDir()}, c.args...)...)
		if code == 0 || !strings.Contains(out, c.want) {
			t.Errorf("%s: %d %q, want a failure mentioning %q", name, code, out, c.want)
		}
	}
}

// TestServeOnEnginePoolWrongSecret: serve signs with a secret the engine
// does not hold; the review fails at once with a typed error that says so.
func TestServeOnEnginePoolWrongSecret(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	dir := t.TempDir()
	engineSecrets, serveSecrets := filepath.Join(dir, "engine"), filepath.Join(dir, "serve")
	for _, f := range []string{engineSecrets, serveSecrets} {
		if _, err := enginehttp.RotateSecret(context.Background(), f, "acme"); err != nil {
			t.Fatal(err)
		}
	}
	e, _ := startEngine(t, "engine-wrong-secret", engineSecrets)
	s := startServe(t, "serve-wrong-secret", nil, "--dev", "--allow-private", "--data-dir", t.TempDir(), "--log-level", "warn",
		"--engine-url", e, "--engine-secret-file", serveSecrets)
	cs := connectHTTP(t, s.mcpURL, s.token, "2025-11-25")
	sub := mustCall(t, cs, "design_review", map[string]any{"url": "http://127.0.0.1:9/", "viewports": []string{"desktop"},
		"client_request_id": "pool-wrong-secret-0001"})
	done := waitJob(t, cs, sub.Job.JobID, time.Minute)
	if done.Job.Status != "failed" || done.Job.Error == nil || done.Job.Error.Code != "UPSTREAM_UNAVAILABLE" ||
		!strings.Contains(done.Job.Error.Message, "secret") || strings.Contains(done.Job.Error.Message, e) {
		t.Fatalf("review with the wrong secret: %s %+v", done.Job.Status, done.Job.Error)
	}
}
