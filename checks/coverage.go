// Coverage: which checks judged a snapshot, and why the others did not.

package checks

import (
	"fmt"
	"github.com/bastion-mcp/bastion/design"
	"slices"
)

// The scopes of a kind that can run in part.
const scaleScope = KindTypeScale + " (token scale)"

// Coverage returns the kinds Run judges s with under cfg, and for each kind
// (or part of a kind) it does not judge, why. It is the one place that
// decides whether a check applies; Run and Remeasure both follow it.
func Coverage(s *Snapshot, cfg Config) (ran []string, off []design.Skip) {
	ran = []string{}
	for _, k := range allKinds {
		if why := offReason(s, cfg, k); why != "" {
			off = append(off, design.Skip{What: k, Reason: why})
			continue
		}
		ran = append(ran, k)
	}
	if why := offReason(s, cfg, scaleScope); why != "" && slices.Contains(ran, KindTypeScale) {
		off = append(off, design.Skip{What: scaleScope, Reason: why})
	}
	return ran, off
}

const noTokens = "no design tokens: no token file was given and the page's own rules use no custom properties defined in a theme scope (:root, html, body, .dark, [data-theme])"

// offReason says why kind (or the scaleScope part of type_scale) does not
// judge s under cfg, or "" when it does.
func offReason(s *Snapshot, cfg Config, kind string) string {
	ts := cfg.Tokens
	few := func(what string, n int) string {
		return fmt.Sprintf("the design tokens have %d %s, too few to be a system to judge against", n, what)
	}
	switch kind {
	case KindOffTokenColor, KindOffScaleSpacing, KindOffTokenFont, scaleScope:
		if ts == nil {
			return noTokens
		}
	case KindTapTarget:
		if s != nil && s.Viewport != design.Mobile && s.Viewport != design.Tablet {
			return "targets are judged at touch viewports (mobile, tablet), not " + string(s.Viewport)
		}
	}
	switch kind {
	case KindOffTokenColor:
		if len(ts.Colors) == 0 {
			return few("colours", 0)
		}
	case KindOffScaleSpacing:
		if len(ts.Spacing) == 0 {
			return few("spacing steps", 0)
		}
	case KindOffTokenFont:
		if len(ts.FontFamilies) == 0 {
			return few("font families", 0)
		}
	case scaleScope:
		if len(ts.FontSizes) == 0 {
			return few("font sizes", 0)
		}
	}
	return ""
}
