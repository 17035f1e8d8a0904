package design

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestFindingIDIsStable(t *testing.T) {
	t.Parallel()
	a := FindingID("contrast", "/", "#cta")
	if a != FindingID("contrast", "/", "#cta") {
		t.Fatal("FindingID differs for identical input")
	}
	if len(a) != 12 || a[:2] != "f_" {
		t.Fatalf("FindingID = %q, want f_ and 10 hex digits", a)
	}
	for _, other := range []string{
		FindingID("overlap", "/", "#cta"), FindingID("contrast", "/a", "#cta"), FindingID("contrast", "/", "#cta2"),
		// The separator keeps field boundaries: "a|b" + "c" is not "a" + "b|c".
		FindingID("contrast|/", "", "#cta"),
	} {
		if other == a {
			t.Errorf("distinct input gave the same id %q", a)
		}
	}
}

func TestGradeOf(t *testing.T) {
	t.Parallel()
	f := func(s Severity, advisory bool) Finding { return Finding{Severity: s, Advisory: advisory} }
	many := func(n int, s Severity) []Finding {
		out := make([]Finding, n)
		for i := range out {
			out[i] = f(s, false)
		}
		return out
	}
	cases := []struct {
		name     string
		reviewed int
		findings []Finding
		want     Grade
	}{
		{"NothingReviewed", 0, []Finding{f(Blocker, false)}, NothingReviewed},
		{"Clean", 3, nil, Ship},
		{"Blocker", 3, []Finding{f(Nit, false), f(Blocker, false), f(Major, false)}, Blocked},
		{"Major", 3, []Finding{f(Minor, false), f(Major, false)}, NeedsWork},
		{"FewMinors", 3, many(MinorLimit, Minor), ShipWithNits},
		{"ManyMinors", 3, many(MinorLimit+1, Minor), NeedsWork},
		{"Nits", 1, many(50, Nit), ShipWithNits},
		{"AdvisoryBlockerIsANit", 1, []Finding{f(Blocker, true)}, ShipWithNits},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := GradeOf(c.reviewed, c.findings); got != c.want {
				t.Errorf("GradeOf = %s, want %s", got, c.want)
			}
		})
	}
}

func TestMergeAcrossViewports(t *testing.T) {
	t.Parallel()
	in := []Finding{
		{Kind: "overlap", Route: "/", Selector: "#b", Severity: Minor, Viewports: []Viewport{Desktop}, Box: Rect{X: 3}},
		{Kind: "contrast", Route: "/", Selector: "#a", Severity: Minor, Viewports: []Viewport{Desktop}, Box: Rect{X: 1}, Advisory: true},
		{Kind: "contrast", Route: "/", Selector: "#a", Severity: Major, Viewports: []Viewport{Mobile}, Box: Rect{X: 2}, Facts: Facts{"ratio": 2.9}},
		{Kind: "contrast", Route: "/", Selector: "#a", Severity: Minor, Viewports: []Viewport{Tablet}, Box: Rect{X: 5}},
		{Kind: "contrast", Route: "/x", Selector: "#a", Severity: Blocker, Viewports: []Viewport{Mobile}},
	}
	got := Merge(in)
	if len(got) != 3 {
		t.Fatalf("Merge gave %d findings, want 3: %+v", len(got), got)
	}
	// Sorted: blocker on /x first, then the major contrast, then the minor overlap.
	if got[0].Route != "/x" || got[1].Kind != "contrast" || got[2].Kind != "overlap" {
		t.Fatalf("order = %s %s, %s %s, %s %s", got[0].Route, got[0].Kind, got[1].Route, got[1].Kind, got[2].Route, got[2].Kind)
	}
	c := got[1]
	if want := []Viewport{Mobile, Tablet, Desktop}; !reflect.DeepEqual(c.Viewports, want) {
		t.Errorf("viewports = %v, want %v", c.Viewports, want)
	}
	if c.Severity != Major || c.Box.X != 2 || c.Facts["ratio"] != 2.9 || c.Advisory {
		t.Errorf("merged = %+v; want the worst severity, the first (mobile) viewport's box and facts, not advisory", c)
	}
	if c.ID != FindingID("contrast", "/", "#a") {
		t.Errorf("id = %q", c.ID)
	}
	// The input order does not matter.
	rev := make([]Finding, len(in))
	for i := range in {
		rev[i] = in[len(in)-1-i]
	}
	if !reflect.DeepEqual(Merge(rev), got) {
		t.Error("Merge depends on input order")
	}
}

func TestPageHealthJSONInMilliseconds(t *testing.T) {
	t.Parallel()
	h := PageHealth{Route: "/", Viewport: Mobile, StatusCode: 200, CaptureDuration: 1234567890, ConsoleErrors: []string{"x"}}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"capture_ms":1234`) || strings.Contains(string(b), "1234567890") {
		t.Fatalf("JSON = %s, want capture_ms in milliseconds", b)
	}
	var back PageHealth
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	want := h
	want.CaptureDuration = 1234 * time.Millisecond
	if !reflect.DeepEqual(back, want) {
		t.Errorf("round trip = %+v, want %+v", back, want)
	}
}
