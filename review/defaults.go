package review

import (
	"github.com/bastion-mcp/bastion/design"
	"net/url"
	"time"
)

// The defaults of one review, shared by every front end: design_review over
// MCP, POST /v1/reviews over REST (both through Submit) and `bastion review`
// on the command line. They live here, once, so the three cannot drift.
const (
	// DefaultTimeout bounds one review's engine run (Options.ReviewTimeout,
	// `bastion review --timeout`).
	DefaultTimeout = 3 * time.Minute
)

// DefaultViewports returns the viewports reviewed when a request names none:
// all three, mobile, tablet and desktop.
func DefaultViewports() []design.Viewport { return design.Viewports() }

// DefaultRoutes returns the routes reviewed when a request names none: the
// URL's own path and query, so https://host/pricing reviews /pricing.
func DefaultRoutes(u *url.URL) []string {
	if u == nil {
		return []string{"/"}
	}
	return []string{u.RequestURI()}
}
