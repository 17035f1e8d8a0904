package reviewtest_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/review/reviewtest"
)

func TestHostAuthorizer(t *testing.T) {
	t.Parallel()
	hosts := []string{reviewtest.PreviewHost, reviewtest.OtherHost}
	cases := []struct {
		name, site, raw string
		wantURL         string
		wantHost        string
		code            fault.Code
	}{
		{"Verified", "", "https://preview.example.com/pricing?a=1", "https://preview.example.com/pricing?a=1", reviewtest.PreviewHost, ""},
		{"SecondHost", "", "https://other.example.com/", "https://other.example.com/", reviewtest.OtherHost, ""},
		{"Unverified", "", "https://evil.example.net/", "", "", fault.DomainUnverified},
		{"HTTP", "", "http://preview.example.com/", "", "", fault.URLNotAllowed},
		{"NoHost", "", "https:///x", "", "", fault.URLNotAllowed},
		{"ToSite", "http://127.0.0.1:8080", "https://other.example.com/a/b?c=d", "http://127.0.0.1:8080/a/b?c=d", reviewtest.OtherHost, ""},
		{"SiteURLAgain", "http://127.0.0.1:8080", "http://127.0.0.1:8080/a", "http://127.0.0.1:8080/a", reviewtest.PreviewHost, ""},
		{"OtherLoopbackNotSite", "http://127.0.0.1:8080", "http://127.0.0.1:8081/a", "", "", fault.URLNotAllowed},
		{"UnverifiedWithSite", "http://127.0.0.1:8080", "https://evil.example.net/", "", "", fault.DomainUnverified},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := &reviewtest.HostAuthorizer{Hosts: hosts, Site: tc.site}
			u, h, err := a.AuthorizeTarget(context.Background(), "acme", tc.raw)
			if tc.code != "" {
				if e, ok := fault.As(err); !ok || e.Code != tc.code {
					t.Fatalf("err = %v, want %s", err, tc.code)
				}
			} else if err != nil || u != tc.wantURL || h != tc.wantHost {
				t.Fatalf("= %q, %q, %v; want %q, %q", u, h, err, tc.wantURL, tc.wantHost)
			}
			if a.Calls() != 1 {
				t.Fatalf("Calls() = %d, want 1", a.Calls())
			}
		})
	}
}

func TestSiteServesAndChanges(t *testing.T) {
	t.Parallel()
	s := reviewtest.NewSite(t, map[string]string{"/": "<p>one</p>"})
	get := func(path string) (int, string) {
		t.Helper()
		res, err := http.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, string(b)
	}
	if code, body := get("/"); code != 200 || body != "<p>one</p>" {
		t.Fatalf("GET / = %d %q", code, body)
	}
	if code, _ := get("/missing"); code != 404 {
		t.Fatalf("GET /missing = %d, want 404", code)
	}
	s.Set("/", "<p>two</p>")
	s.Set("/new", "<p>new</p>")
	if code, body := get("/"); code != 200 || body != "<p>two</p>" {
		t.Fatalf("GET / after Set = %d %q", code, body)
	}
	if code, body := get("/new"); code != 200 || body != "<p>new</p>" {
		t.Fatalf("GET /new = %d %q", code, body)
	}
}

// TestSecondHarnessSharesTheDatabase is what Options.Path is for: a job
// queued through one Service is run by the workers of a second Service on
// the same file.
func TestSecondHarnessSharesTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := reviewtest.New(t, reviewtest.Options{}) // no workers
	eng := &reviewtest.Engine{Result: reviewtest.SampleResult()}
	b := reviewtest.New(t, reviewtest.Options{Path: a.Path, Start: true, Engine: eng})
	res, err := a.Service.Submit(ctx, a.Principal, &review.SubmitParams{URL: "https://preview.example.com/", ClientRequestID: "key-shared-0001"})
	if err != nil {
		t.Fatal(err)
	}
	if j := b.WaitTerminal(t, a.Principal, res.Job.JobID); j.Status != "completed" || eng.Reviews() != 1 {
		t.Fatalf("job = %+v after %d engine runs", j, eng.Reviews())
	}
}
