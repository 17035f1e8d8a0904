package enginehttp_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/enginehttp"
	"github.com/bastion-mcp/bastion/enginehttp/enginetest"
	"github.com/bastion-mcp/bastion/review/reviewtest"
)

const (
	acmeSecret   = "acme-secret-0123456789abcdefghijklmnop"
	globexSecret = "globex-secret-0123456789abcdefghijklmn"
)

func newServer(t *testing.T, eng *reviewtest.Engine) (acme, globex *enginetest.Client) {
	t.Helper()
	h := reviewtest.New(t, reviewtest.Options{Start: true, Engine: eng})
	secrets, err := enginehttp.ParseSecrets([]byte("acme " + acmeSecret + "\nglobex " + globexSecret + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	srv.Config.Handler = enginehttp.NewHandler(h.Service, enginehttp.Options{Secrets: func() *enginehttp.Secrets { return secrets }, BaseURL: base})
	srv.Start()
	t.Cleanup(srv.Close)
	return &enginetest.Client{T: t, Base: srv.URL, Installation: "acme", Secret: acmeSecret},
		&enginetest.Client{T: t, Base: srv.URL, Installation: "globex", Secret: globexSecret}
}

func submitBody(key, url string) string {
	return `{"idempotencyKey":"` + key + `","depth":"deep","request":{"url":"` + url + `","routes":["/"],"viewports":["mobile"],"depth":"deep","expected_revision":null,"response_mode":"compact"}}`
}

// TestJobLifecycle: submit (202), replay (409 with the job id), a
// different request under the key (409 idempotency_conflict), poll to
// completed with x-schema-version 1 and the engine-result shape, another
// installation cannot see the job, cancel of a finished job is not
// accepted, an unknown job is 404.
func TestJobLifecycle(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	acme, globex := newServer(t, &reviewtest.Engine{Gate: gate, Result: reviewtest.SampleResult()})
	body := submitBody("req-00000001", "https://preview.example.com/")
	st, _, m := acme.Do("POST", "/jobs", body)
	id, _ := m["jobId"].(string)
	if st != http.StatusAccepted || id == "" {
		t.Fatalf("submit: %d %v", st, m)
	}
	if st, _, m := acme.Do("POST", "/jobs", body); st != http.StatusConflict || m["jobId"] != id {
		t.Fatalf("replay: %d %v, want 409 with jobId %s", st, m, id)
	}
	if st, _, m := acme.Do("POST", "/jobs", submitBody("req-00000001", "https://other.example.com/")); st != http.StatusConflict || m["error"] != "idempotency_conflict" {
		t.Fatalf("conflict: %d %v", st, m)
	}
	st, hdr, m := acme.Do("GET", "/jobs/"+id, "")
	if st != http.StatusOK || hdr.Get("x-schema-version") != "1" || (m["state"] != "pending" && m["state"] != "running") {
		t.Fatalf("poll before the engine finishes: %d %v %v", st, hdr.Get("x-schema-version"), m)
	}
	if st, _, m := globex.Do("GET", "/jobs/"+id, ""); st != http.StatusNotFound {
		t.Fatalf("another installation read the job: %d %v", st, m)
	}
	close(gate)
	for m["state"] != "completed" {
		if m["state"] == "failed" {
			t.Fatalf("job failed: %v", m)
		}
		_, _, m = acme.Do("GET", "/jobs/"+id, "")
	}
	res := m["result"].(map[string]any)
	if res["grade"] != "needs_work" || res["confidenceUnavailableReason"] == "" || res["metadata"].(map[string]any)["model"] != "none" {
		t.Fatalf("result: %v", res)
	}
	fs := res["findings"].([]any)
	if len(fs) != 4 || fs[0].(map[string]any)["id"] != "f_001" || fs[0].(map[string]any)["severity"] != "major" {
		t.Fatalf("findings: %v", fs)
	}
	if _, ok := fs[0].(map[string]any)["confidence"]; ok {
		t.Fatal("a finding claims a confidence")
	}
	shots := res["artifacts"].(map[string]any)["annotatedScreenshots"].([]any)
	if len(shots) != 1 || shots[0].(map[string]any)["findingId"] != "f_001" {
		t.Fatalf("annotatedScreenshots: %v", shots)
	}
	shot := shots[0].(map[string]any)["url"].(string)
	if r, err := http.Get(shot); err != nil || r.StatusCode != 200 || r.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("artifact: %v %v", r, err)
	} else {
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if string(b) != "\x89PNG-crop" {
			t.Fatalf("artifact bytes %q", b)
		}
	}
	if r, err := http.Get(shot[:len(shot)-2] + "00"); err != nil || r.StatusCode != http.StatusForbidden {
		t.Fatalf("tampered artifact URL: %v %v", r, err)
	}
	if st, _, m := acme.Do("DELETE", "/jobs/"+id, ""); st != http.StatusOK || m["cancelling"] != false {
		t.Fatalf("cancel of a completed job: %d %v", st, m)
	}
	if st, _, _ := acme.Do("DELETE", "/jobs/job_00000000-0000-4000-8000-000000000000", ""); st != http.StatusNotFound {
		t.Fatalf("cancel of an unknown job: %d", st)
	}
}

// TestCancelRunning: DELETE of a running job is accepted and the job ends
// failed with errorCode CANCELLED.
func TestCancelRunning(t *testing.T) {
	t.Parallel()
	started := make(chan string, 1)
	acme, _ := newServer(t, &reviewtest.Engine{Gate: make(chan struct{}), Started: started, Result: reviewtest.SampleResult()})
	_, _, m := acme.Do("POST", "/jobs", submitBody("req-00000002", "https://preview.example.com/"))
	id := m["jobId"].(string)
	<-started
	if st, _, m := acme.Do("DELETE", "/jobs/"+id, ""); st != http.StatusOK || m["cancelling"] != true {
		t.Fatalf("cancel: %d %v", st, m)
	}
	for {
		_, _, m = acme.Do("GET", "/jobs/"+id, "")
		if m["state"] == "failed" {
			break
		}
		if m["state"] == "completed" {
			t.Fatalf("a cancelled job completed: %v", m)
		}
	}
	if m["errorCode"] != "CANCELLED" {
		t.Fatalf("cancelled job: %v", m)
	}
}

// TestRefusals: unsigned, wrongly signed, stale, replayed, a body on a GET
// and an oversized body; an unverified target is refused by the Service.
func TestRefusals(t *testing.T) {
	t.Parallel()
	acme, _ := newServer(t, nil)
	unauthorized := func(name string, st int, m map[string]any) {
		t.Helper()
		if st != http.StatusUnauthorized || len(m) != 1 || m["error"] != "unauthorized" {
			t.Errorf("%s: %d %v, want 401 {error: unauthorized}", name, st, m)
		}
	}
	req, _ := http.NewRequest("GET", acme.Base+"/jobs/job_00000001", nil)
	st, _, m := enginetest.Send(t, req)
	unauthorized("unsigned", st, m)

	wrong := *acme
	wrong.Secret = globexSecret
	st, _, m = wrong.Do("GET", "/jobs/job_00000001", "")
	unauthorized("wrong secret", st, m)

	stale := *acme
	stale.Skew = -enginehttp.MaxSkew - time.Minute
	st, _, m = stale.Do("POST", "/jobs", submitBody("req-00000003", "https://preview.example.com/"))
	unauthorized("stale", st, m)

	// A replay: the same signed request twice.
	body := submitBody("req-00000004", "https://preview.example.com/")
	ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
	mk := func() *http.Request {
		r, _ := http.NewRequest("POST", acme.Base+"/jobs", strings.NewReader(body))
		r.Header.Set("x-gate-installation", "acme")
		r.Header.Set("x-gate-timestamp", ts)
		r.Header.Set("x-gate-signature", enginehttp.Sign([]byte(acmeSecret), ts, "acme", []byte(body)))
		return r
	}
	if st, _, m := enginetest.Send(t, mk()); st != http.StatusAccepted {
		t.Fatalf("first: %d %v", st, m)
	}
	st, _, m = enginetest.Send(t, mk())
	unauthorized("replayed", st, m)

	big := `{"idempotencyKey":"req-00000005","request":{"url":"https://preview.example.com/","x":"` + strings.Repeat("a", enginehttp.DefaultMaxBodyBytes) + `"}}`
	if st, _, m := acme.Do("POST", "/jobs", big); st != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized: %d %v, want 413", st, m)
	}
	r, _ := http.NewRequest("GET", acme.Base+"/jobs/job_00000001", bytes.NewReader([]byte("{}")))
	ts = strconv.FormatInt(time.Now().UnixMilli(), 10)
	r.Header.Set("x-gate-installation", "acme")
	r.Header.Set("x-gate-timestamp", ts)
	r.Header.Set("x-gate-signature", enginehttp.Sign([]byte(acmeSecret), ts, "acme", nil))
	st, _, m = enginetest.Send(t, r)
	unauthorized("GET with a body", st, m)

	if st, _, m := acme.Do("POST", "/jobs", submitBody("req-00000006", "https://evil.example.net/")); st != http.StatusUnprocessableEntity || m["code"] != "DOMAIN_UNVERIFIED" {
		t.Errorf("unverified target: %d %v, want 422 DOMAIN_UNVERIFIED", st, m)
	}
	if st, _, m := acme.Do("POST", "/jobs", `{"idempotencyKey":"x"}`); st != http.StatusBadRequest {
		t.Errorf("no request: %d %v, want 400", st, m)
	}
	req, _ = http.NewRequest("GET", acme.Base+"/readyz", nil)
	if st, _, m := enginetest.Send(t, req); st != http.StatusOK {
		t.Errorf("readyz: %d %v", st, m)
	}
}
