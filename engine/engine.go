package engine

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// Engine is the port the review service calls. engine/local implements it
// with a Chromium pool behind the egress proxy.
type Engine interface {
	// Review captures and judges req. A page that fails to load is a skip in
	// the result's coverage, not an error; errors are for bad input and for
	// a review that could not run at all.
	Review(ctx context.Context, req Request) (*Result, error)
	// Recheck re-measures earlier findings and returns one outcome per
	// finding, in the order given.
	Recheck(ctx context.Context, req RecheckRequest) ([]RecheckOutcome, error)
}

// Viewports lists the closed set in its canonical order (narrow to wide);
// merged findings list their viewports in this order.
func Viewports() []Viewport { return []Viewport{Mobile, Tablet, Desktop} }

// viewportRank orders viewports canonically; unknown ones sort last.
func viewportRank(v Viewport) int {
	switch v {
	case Mobile:
		return 0
	case Tablet:
		return 1
	case Desktop:
		return 2
	}
	return 3
}

// Rank returns s's position, worst first (blocker 0 … nit 3); an unknown
// severity ranks after nit.
func (s Severity) Rank() int {
	switch s {
	case Blocker:
		return 0
	case Major:
		return 1
	case Minor:
		return 2
	case Nit:
		return 3
	}
	return 4
}

// FindingID is the stable id of the defect kind on route at selector:
// "f_" and the first 10 hex digits of SHA-256(kind|route|selector). The
// same defect gets the same id across viewports, runs and rechecks.
func FindingID(kind, route, selector string) string {
	sum := sha256.Sum256([]byte(kind + "|" + route + "|" + selector))
	return "f_" + hex.EncodeToString(sum[:])[:10]
}

// MinorLimit is the number of minor findings above which a review is graded
// needs_work rather than ship_with_nits: a page with many small defects is
// not ready to ship, even though none of them alone would stop it.
const MinorLimit = 10

// GradeOf derives the grade from the findings of a review that captured
// reviewed route × viewport pairs:
//
//   - nothing reviewed: nothing_reviewed, whatever the findings;
//   - any blocker: blocked;
//   - any major, or more than MinorLimit minor findings: needs_work;
//   - any minor or nit: ship_with_nits;
//   - none: ship.
//
// Advisory findings are judgments for a human, so each counts as a nit
// whatever its severity: it can hold a page at ship_with_nits but never
// block it.
func GradeOf(reviewed int, findings []Finding) Grade {
	if reviewed == 0 {
		return NothingReviewed
	}
	var blockers, majors, minors, nits int
	for _, f := range findings {
		if f.Advisory {
			nits++
			continue
		}
		switch f.Severity {
		case Blocker:
			blockers++
		case Major:
			majors++
		case Minor:
			minors++
		default:
			nits++
		}
	}
	switch {
	case blockers > 0:
		return Blocked
	case majors > 0 || minors > MinorLimit:
		return NeedsWork
	case minors+nits > 0:
		return ShipWithNits
	}
	return Ship
}

// Merge folds findings of one route seen at several viewports into one
// finding per (kind, route, selector). The merged finding takes its title,
// description, facts, fix and box from the first viewport in canonical
// order that saw it (that is the viewport its evidence is cut from), its
// severity from the worst viewport, and is advisory only if every
// sighting was. Viewports are listed once each in canonical order. IDs are
// set with FindingID. The result is sorted with Sort.
func Merge(findings []Finding) []Finding {
	type key struct{ kind, route, selector string }
	byKey := map[key]*Finding{}
	var order []key
	// Visit in canonical viewport order so "first" is well defined whatever
	// order the captures finished in.
	in := slices.Clone(findings)
	slices.SortStableFunc(in, func(a, b Finding) int {
		return cmp.Compare(firstRank(a.Viewports), firstRank(b.Viewports))
	})
	for _, f := range in {
		k := key{f.Kind, f.Route, f.Selector}
		m, ok := byKey[k]
		if !ok {
			c := f
			c.Viewports = slices.Clone(f.Viewports)
			c.Facts = f.Facts
			byKey[k] = &c
			order = append(order, k)
			continue
		}
		m.Viewports = append(m.Viewports, f.Viewports...)
		if f.Severity.Rank() < m.Severity.Rank() {
			m.Severity = f.Severity
		}
		m.Advisory = m.Advisory && f.Advisory
	}
	out := make([]Finding, 0, len(order))
	for _, k := range order {
		f := byKey[k]
		slices.SortFunc(f.Viewports, func(a, b Viewport) int { return cmp.Compare(viewportRank(a), viewportRank(b)) })
		f.Viewports = slices.Compact(f.Viewports)
		f.ID = FindingID(f.Kind, f.Route, f.Selector)
		out = append(out, *f)
	}
	Sort(out)
	return out
}

func firstRank(vs []Viewport) int {
	r := 4
	for _, v := range vs {
		r = min(r, viewportRank(v))
	}
	return r
}

// Sort orders findings deterministically: worst severity first, then
// route, kind, selector and id.
func Sort(findings []Finding) {
	slices.SortStableFunc(findings, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(a.Severity.Rank(), b.Severity.Rank()),
			cmp.Compare(a.Route, b.Route),
			cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Selector, b.Selector),
			cmp.Compare(a.ID, b.ID),
		)
	})
}
