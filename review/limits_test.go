package review

import (
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/store"
)

// The limiter with the contract's default numbers, rule by rule.
func TestRecheckLimitsDefaults(t *testing.T) {
	t.Parallel()
	l := RecheckLimits{}.withDefaults()
	if l != (RecheckLimits{3, 5, 18, 60, 2 * time.Second, 60 * time.Second}) {
		t.Fatalf("defaults = %+v", l)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ev := func(ago time.Duration, units int64, ids ...string) store.RecheckEvent {
		return store.RecheckEvent{At: now.Add(-ago), Units: units, FindingIDs: ids}
	}
	many := func(n int, every time.Duration, ids ...string) []store.RecheckEvent {
		var out []store.RecheckEvent
		for i := n; i >= 1; i-- {
			out = append(out, ev(time.Duration(i)*every, 1, ids...))
		}
		return out
	}
	cases := []struct {
		name  string
		u     store.RecheckUsage
		ids   []string
		units int64
		code  fault.Code
		retry time.Duration
		msg   string
	}{
		{"Fresh", store.RecheckUsage{}, []string{"f_1"}, 1, "", 0, ""},
		{"PrincipalBurst", store.RecheckUsage{ByPrincipal: many(60, 500*time.Millisecond, "f_9")}, []string{"f_1"}, 1,
			fault.RateLimited, 30 * time.Second, "too many rechecks submitted; slow down and retry in ~30s"},
		{"PrincipalBurstUnder", store.RecheckUsage{ByPrincipal: many(59, 500*time.Millisecond, "f_9")}, []string{"f_1"}, 1, "", 0, ""},
		{"PrincipalOldEventsDropOut", store.RecheckUsage{ByPrincipal: many(60, 2*time.Second, "f_9")}, []string{"f_1"}, 1, "", 0, ""},
		{"PerFinding30Min", store.RecheckUsage{ByReview: many(3, 5*time.Minute, "f_1")}, []string{"f_2", "f_1"}, 1,
			fault.RateLimited, 15 * time.Minute, "a flagged finding has hit its recheck limit for the half-hour; retry in ~900s"},
		{"PerFindingDay", store.RecheckUsage{ByReview: many(5, time.Hour, "f_1")}, []string{"f_1"}, 1,
			fault.RateLimited, 19 * time.Hour, "a flagged finding has hit its daily recheck limit; retry in ~68400s"},
		{"ChainUnits", store.RecheckUsage{ByReview: []store.RecheckEvent{ev(20*time.Minute, 7, "a"), ev(10*time.Minute, 7, "b")}}, []string{"c"}, 5,
			fault.BudgetExhausted, 10 * time.Minute, "this review's recheck budget for the half-hour is exhausted; retry in ~600s"},
		{"ChainUnitsExactlyFull", store.RecheckUsage{ByReview: []store.RecheckEvent{ev(20*time.Minute, 7, "a"), ev(10*time.Minute, 7, "b")}}, []string{"c"}, 4, "", 0, ""},
		{"BackoffFirst", store.RecheckUsage{ReviewTotal: 1, ReviewLast: now.Add(-3 * time.Millisecond)}, []string{"f_1"}, 1,
			fault.RateLimited, 1997 * time.Millisecond, "rechecks are backing off; wait ~2s before the next attempt"},
		{"BackoffDoubles", store.RecheckUsage{ReviewTotal: 3, ReviewLast: now.Add(-7 * time.Second)}, []string{"f_1"}, 1,
			fault.RateLimited, time.Second, "rechecks are backing off; wait ~1s before the next attempt"},
		{"BackoffCapped", store.RecheckUsage{ReviewTotal: 40, ReviewLast: now.Add(-59 * time.Second)}, []string{"f_1"}, 1,
			fault.RateLimited, time.Second, ""},
		{"BackoffElapsed", store.RecheckUsage{ReviewTotal: 40, ReviewLast: now.Add(-60 * time.Second)}, []string{"f_1"}, 1, "", 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := l.check(now, &tc.u, tc.ids, tc.units)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			e, ok := fault.As(err)
			if !ok || e.Code != tc.code || e.RetryAfter != tc.retry || !e.Retriable || e.NextAction != fault.Wait || !strings.HasPrefix(e.Message, tc.msg) {
				t.Fatalf("err = %+v, want %s retry %s %q", e, tc.code, tc.retry, tc.msg)
			}
		})
	}
}

func TestRecheckUnits(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]int64{1: 1, 2: 1, 3: 1, 4: 2, 6: 2, 7: 3, 20: 7} {
		if got := recheckUnits(n); got != want {
			t.Errorf("recheckUnits(%d) = %d, want %d", n, got, want)
		}
	}
}

func FuzzNormalizeSubmit(f *testing.F) {
	f.Add("https://preview.example.com/pricing#x", "/", "/a", "mobile", "key-00000001", "deep", "rev")
	f.Add("https://u:p@preview.example.com/", "//evil", "/", "watch", "k", "", "")
	f.Add("HTTPS://PREVIEW.example.com", "/\x00", "/a b", "desktop", "key:with.dots-1", "triage", "\x7f")
	f.Add("https://[::1]:8443/a?b=c", "/x#y", "/\\", "tablet", "key_________", "shallow", "")
	f.Add("https:preview.example.com", "", "/", "", "key-00000001", "", "")
	f.Add("http://0", "/", "/", "mobile", "key-00000001", "", "")
	f.Fuzz(func(t *testing.T, u, r1, r2, vp, key, depth, rev string) {
		in := &SubmitParams{URL: u, Routes: []string{r1, r2}, Viewports: []string{vp}, ClientRequestID: key, Depth: depth, ExpectedRevision: rev}
		req, err := normalizeSubmit(in)
		if err != nil {
			if _, ok := fault.As(err); !ok {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// http is syntax here (a local development server); whether this
		// principal may reach the host is the Targets policy's decision.
		if !strings.HasPrefix(req.URL, "https://") && !strings.HasPrefix(req.URL, "http://") || strings.Contains(req.URL, "#") || strings.Contains(req.URL, "@") {
			t.Fatalf("accepted URL %q", req.URL)
		}
		for _, r := range req.Routes {
			if !strings.HasPrefix(r, "/") || strings.HasPrefix(r, "//") || len(r) > maxRouteLen {
				t.Fatalf("accepted route %q", r)
			}
		}
		if len(req.Routes) == 0 || len(req.Viewports) != 1 || (req.Depth != "deep" && req.Depth != "triage") {
			t.Fatalf("normalized = %+v", req)
		}
		// Normalizing the normalized request is a fixed point.
		again, err := normalizeSubmit(&SubmitParams{URL: req.URL, Routes: req.Routes, Viewports: req.Viewports, ClientRequestID: key,
			Depth: req.Depth, ExpectedRevision: req.ExpectedRevision, ResponseMode: req.ResponseMode})
		if err != nil || fingerprint(again) != fingerprint(req) {
			t.Fatalf("not idempotent: %+v vs %+v (%v)", again, req, err)
		}
	})
}

func FuzzNormalizeRecheck(f *testing.F) {
	f.Add("rev_0123456789", "f_001", "f_001", "https://preview.example.com/a#b", "key-00000001", "r2")
	f.Add("short", "f", "", "http://x", "k", "")
	f.Fuzz(func(t *testing.T, reviewID, f1, f2, u, key, rev string) {
		req, err := normalizeRecheck(&RecheckParams{ReviewID: reviewID, FindingIDs: []string{f1, f2}, URL: u, ClientRequestID: key, ExpectedRevision: rev})
		if err != nil {
			if _, ok := fault.As(err); !ok {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if len(req.FindingIDs) < 1 || len(req.FindingIDs) > 2 || (len(req.FindingIDs) == 2 && req.FindingIDs[0] >= req.FindingIDs[1]) {
			t.Fatalf("finding ids = %q", req.FindingIDs)
		}
		if u != "" && !strings.HasPrefix(req.URL, "https://") {
			t.Fatalf("url = %q", req.URL)
		}
	})
}
