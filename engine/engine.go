// Package engine is the port between the review service and whatever turns
// a review request into a measured judgment. engine/local implements it
// with a Chromium pool behind the egress proxy: it captures each route ×
// viewport in network-isolated Chromium, runs the design checks on what was
// captured, merges the same defect across viewports, cuts evidence crops
// and derives a grade. The judgment's types live in package design.
//
// Invariants: every finding comes from a measurement of the captured page,
// never from a fixture or from page text; page content can change a grade only
// through measured facts; identical input gives identical findings (ids,
// order, crops).
package engine

import (
	"context"

	"github.com/bastion-mcp/bastion/design"
)

// Engine is the port the review service calls. engine/local implements it
// with a Chromium pool behind the egress proxy.
type Engine interface {
	// Review captures and judges req. A page that fails to load is a skip in
	// the result's coverage, not an error; errors are for bad input and for
	// a review that could not run at all.
	Review(ctx context.Context, req Request) (*design.Result, error)
	// Recheck re-measures earlier findings and returns one outcome per
	// finding, in the order given.
	Recheck(ctx context.Context, req RecheckRequest) ([]design.RecheckOutcome, error)
}

// Request asks the engine to review one preview.
type Request struct {
	URL       string            // canonical, already authorized by the caller
	Routes    []string          // each starts with "/"; at least one
	Viewports []design.Viewport // at least one
	Tokens    []byte            // optional W3C DTCG token file; nil falls back to :root custom properties
	// Progress, when set, is told how far the review has got: capturing
	// with 0 of Total captures done, again as each capture ends, then
	// judging. Calls may come from several goroutines at once and out of
	// order; a receiver keeps the furthest (Stage, then Done). It must not
	// block.
	Progress func(Progress)
}

// Progress is how far a review has got.
type Progress struct {
	Stage       string // StageCapturing or StageJudging
	Done, Total int    // captures (route × viewport) finished and planned
}

// The stages a review reports, in order.
const (
	StageCapturing = "capturing"
	StageJudging   = "judging"
)

// RecheckRequest asks the engine to re-measure earlier findings after a fix.
type RecheckRequest struct {
	URL      string           // canonical, already authorized; may differ from the review's in path or query
	Tokens   []byte           // the same token file the review used, if any
	Findings []design.Finding // the findings to recheck, as the review returned them
}
