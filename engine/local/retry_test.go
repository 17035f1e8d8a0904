package local_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/engine/local"
)

// hitSite serves routes by status and counts the requests per path.
type hitSite struct {
	mu   sync.Mutex
	hits map[string]int
}

func (s *hitSite) hit(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits[path]++
	return s.hits[path]
}

func (s *hitSite) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

const plainPage = `<!doctype html><html lang="en"><head><meta name="viewport" content="width=device-width,initial-scale=1"><title>t</title></head><body><h1>Hello</h1></body></html>`

// TestReviewRetriesOnce: a page that fails once (a 503) is retried and
// reviewed; one that keeps failing is tried twice and named as skipped with
// its reason; a 404 is the page's answer and is not retried.
func TestReviewRetriesOnce(t *testing.T) {
	t.Parallel()
	site := &hitSite{hits: map[string]int{}}
	eng, base := newEngine(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/favicon.ico" {
			http.NotFound(w, r)
			return
		}
		n := site.hit(r.URL.Path)
		switch {
		case r.URL.Path == "/gone":
			http.NotFound(w, r)
		case r.URL.Path == "/down", r.URL.Path == "/flaky" && n == 1:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, plainPage)
		}
	}), local.Options{Logger: quiet})
	res, err := eng.Review(context.Background(), engine.Request{URL: base + "/", Routes: []string{"/flaky", "/down", "/gone"}, Viewports: []design.Viewport{design.Mobile}})
	if err != nil {
		t.Fatalf("Review: %v", err)
	}
	if got := strings.Join(res.Coverage.RoutesReviewed, ","); got != "/flaky" {
		t.Errorf("reviewed %q, want /flaky (after its retry)", got)
	}
	reasons := map[string]string{}
	for _, s := range res.Coverage.Skipped {
		reasons[s.What] = s.Reason
	}
	if r := reasons["/down @ mobile"]; !strings.Contains(r, "HTTP 503") || !strings.Contains(r, "tried 2 times") {
		t.Errorf("/down skip reason %q, want the 503 and two tries", r)
	}
	if r := reasons["/gone @ mobile"]; !strings.Contains(r, "HTTP 404") || strings.Contains(r, "tried") {
		t.Errorf("/gone skip reason %q, want the 404, tried once", r)
	}
	if len(reasons) != 2 {
		t.Errorf("skipped %v, want /down and /gone", reasons)
	}
	for path, want := range map[string]int{"/flaky": 2, "/down": 2, "/gone": 1} {
		if got := site.count(path); got != want {
			t.Errorf("%s requested %d times, want %d", path, got, want)
		}
	}
	if res.Coverage.Complete() {
		t.Error("coverage with skips reports complete")
	}
}

// TestReviewTimeoutNamesTheSkip: a page that never answers holds its
// capture until the review's timeout; the review still returns, with the
// capture named as skipped because the deadline passed, rather than failing
// whole.
func TestReviewTimeoutNamesTheSkip(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	eng, base := newEngine(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // never answers while the test runs
		case <-release:
		case <-r.Context().Done():
		}
	}), local.Options{Logger: quiet, Timeout: 20 * time.Second})
	res, err := eng.Review(context.Background(), engine.Request{URL: base + "/", Routes: []string{"/hang"}, Viewports: []design.Viewport{design.Desktop}})
	if err != nil {
		t.Fatalf("Review: %v; want a result naming the skip", err)
	}
	if len(res.Coverage.Skipped) != 1 || res.Grade != design.NothingReviewed {
		t.Fatalf("skipped %+v, grade %s; want the one capture skipped", res.Coverage.Skipped, res.Grade)
	}
	if r := res.Coverage.Skipped[0].Reason; !strings.HasPrefix(r, "CAPTURE_FAILED: ") || !strings.Contains(r, "deadline") {
		t.Errorf("skip reason %q, want CAPTURE_FAILED naming the deadline", r)
	}
}
