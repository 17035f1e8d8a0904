package capture

import (
	"testing"

	"github.com/bastion-mcp/bastion/design"
	"github.com/chromedp/cdproto/network"
)

// TestRecorderDropsUnattributedFailures: a loadingFailed for a request the
// page was never seen to make (the browser's own cache-only probe fails with
// net::ERR_CACHE_MISS and no URL) is not page health, while the page's own
// failed requests stay listed.
func TestRecorderDropsUnattributedFailures(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	r.handle(&network.EventRequestWillBeSent{RequestID: "1", Request: &network.Request{URL: "http://site.test/app.js"}})
	r.handle(&network.EventLoadingFailed{RequestID: "1", ErrorText: "net::ERR_CONNECTION_REFUSED"})
	r.handle(&network.EventLoadingFailed{RequestID: "ghost", ErrorText: "net::ERR_CACHE_MISS"})
	r.handle(&network.EventResponseReceived{RequestID: "2", Type: network.ResourceTypeImage, Response: &network.Response{URL: "http://site.test/missing.png", Status: 404}})
	var h design.PageHealth
	r.fill(&h, nil)
	want := []design.Failure{
		{URL: "http://site.test/app.js", Code: "net::ERR_CONNECTION_REFUSED"},
		{URL: "http://site.test/missing.png", Code: "HTTP_404"},
	}
	if len(h.Failed) != len(want) {
		t.Fatalf("failed = %+v, want %+v", h.Failed, want)
	}
	for i := range want {
		if h.Failed[i] != want[i] {
			t.Errorf("failed[%d] = %+v, want %+v", i, h.Failed[i], want[i])
		}
	}
}
