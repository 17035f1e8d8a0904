package review_test

import (
	"context"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/review/reviewtest"
	"net/url"
	"slices"
	"testing"
)

// TestDefaultsAreTheURLsPathAndEveryViewport holds Submit to the shared
// defaults: a request naming no routes and no viewports is the same
// normalized request (replayed under its key, at no cost) as one naming the
// URL's own path and all three viewports, and not the same as one for "/".
func TestDefaultsAreTheURLsPathAndEveryViewport(t *testing.T) {
	t.Parallel()
	b := setup(t, reviewtest.Options{})
	ctx := context.Background()
	first, err := b.Service.Submit(ctx, b.Principal, &review.SubmitParams{URL: "https://preview.example.com/pricing?plan=pro", ClientRequestID: "key-defaults-1"})
	if err != nil {
		t.Fatal(err)
	}
	explicit := &review.SubmitParams{URL: "https://preview.example.com/pricing?plan=pro", Routes: []string{"/pricing?plan=pro"},
		Viewports: []string{"mobile", "tablet", "desktop"}, ClientRequestID: "key-defaults-1"}
	again, err := b.Service.Submit(ctx, b.Principal, explicit)
	if err != nil {
		t.Fatalf("the explicit spelling of the defaults is a different request: %v", err)
	}
	if !again.Job.Reused || again.Job.JobID != first.Job.JobID {
		t.Fatalf("explicit defaults = %+v, want the replay of %s", again.Job, first.Job.JobID)
	}
	root := *explicit
	root.Routes = []string{"/"}
	if _, err := b.Service.Submit(ctx, b.Principal, &root); err == nil {
		t.Fatal(`routes ["/"] under the same key was accepted as the same request: the default route is not the URL's path`)
	}
}

func TestDefaultValues(t *testing.T) {
	t.Parallel()
	u, _ := url.Parse("http://127.0.0.1:3000/pricing?x=1")
	if got := review.DefaultRoutes(u); !slices.Equal(got, []string{"/pricing?x=1"}) {
		t.Errorf("DefaultRoutes(%s) = %q", u, got)
	}
	root, _ := url.Parse("https://preview.example.com")
	if got := review.DefaultRoutes(root); !slices.Equal(got, []string{"/"}) {
		t.Errorf("DefaultRoutes(%s) = %q", root, got)
	}
	if got := review.DefaultViewports(); !slices.Equal(got, []design.Viewport{design.Mobile, design.Tablet, design.Desktop}) {
		t.Errorf("DefaultViewports() = %q", got)
	}
}
