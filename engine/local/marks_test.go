package local

import (
	"testing"

	"github.com/bastion-mcp/bastion/checks"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/evidence"
)

func TestMarksFollowTheMeasuredFacts(t *testing.T) {
	box := design.Rect{X: 100, Y: 200, W: 300, H: 40}
	cases := []struct {
		name string
		f    design.Finding
		want evidence.Marks
	}{
		{"OverflowDrawsTheViewportEdge", design.Finding{Kind: checks.KindViewportOverflow, Box: box,
			Facts: design.Facts{"viewport_width": 390.0, "element_right": 400.0}}, evidence.Marks{Edge: 390}},
		{"OffScaleMarginIsOutside", design.Finding{Kind: checks.KindOffScaleSpacing, Box: box,
			Facts: design.Facts{"property": "margin-top", "value_px": 13.0}},
			evidence.Marks{Bands: []evidence.Band{{Rect: design.Rect{X: 100, Y: 187, W: 300, H: 13}}}}},
		{"OffScalePaddingIsInside", design.Finding{Kind: checks.KindOffScaleSpacing, Box: box,
			Facts: design.Facts{"property": "padding-right", "value_px": 7.0}},
			evidence.Marks{Bands: []evidence.Band{{Rect: design.Rect{X: 393, Y: 200, W: 7, H: 40}, Padding: true}}}},
		{"RhythmGapOnItsSide", design.Finding{Kind: checks.KindSpacingRhythm, Box: box,
			Facts: design.Facts{"gap_px": 40.0, "usual_gap_px": 16.0, "gap_edge": "bottom"}},
			evidence.Marks{Bands: []evidence.Band{{Rect: design.Rect{X: 100, Y: 240, W: 300, H: 40}}}}},
		{"ContainerGapHasNoOnePlace", design.Finding{Kind: checks.KindOffScaleSpacing, Box: box,
			Facts: design.Facts{"property": "row-gap", "value_px": 13.0}}, evidence.Marks{}},
		{"NegativeMarginDrawsNothing", design.Finding{Kind: checks.KindOffScaleSpacing, Box: box,
			Facts: design.Facts{"property": "margin-left", "value_px": -13.0}}, evidence.Marks{}},
		{"WrongTypedFactDrawsNothing", design.Finding{Kind: checks.KindViewportOverflow, Box: box,
			Facts: design.Facts{"viewport_width": "390"}}, evidence.Marks{}},
		{"OtherKindsOutlineOnly", design.Finding{Kind: checks.KindContrast, Box: box}, evidence.Marks{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := marks(&c.f)
			if got.Edge != c.want.Edge || len(got.Bands) != len(c.want.Bands) {
				t.Fatalf("marks = %+v, want %+v", got, c.want)
			}
			for i := range got.Bands {
				if got.Bands[i] != c.want.Bands[i] {
					t.Errorf("band %d = %+v, want %+v", i, got.Bands[i], c.want.Bands[i])
				}
			}
		})
	}
}
