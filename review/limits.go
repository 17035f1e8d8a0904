package review

import (
	"math"
	"slices"
	"time"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/store"
)

// RecheckLimits bound how fast a review can be rechecked. The zero value of a
// field means the default noted beside it (the peer contract's numbers).
type RecheckLimits struct {
	PerFindingPer30Min int           // 3 rechecks of one finding per 30 minutes
	PerFindingPerDay   int           // 5 rechecks of one finding per day
	ChainUnitsPer30Min int64         // 18 units of rechecks per review per 30 minutes
	PrincipalPerMinute int           // 60 rechecks per principal per minute
	BackoffBase        time.Duration // 2s after a review's first recheck, doubling
	BackoffMax         time.Duration // 60s at most
}

// The limiter's windows.
const (
	minuteWindow   = time.Minute
	halfHourWindow = 30 * time.Minute
	dayWindow      = 24 * time.Hour
)

func (l RecheckLimits) withDefaults() RecheckLimits {
	if l.PerFindingPer30Min <= 0 {
		l.PerFindingPer30Min = 3
	}
	if l.PerFindingPerDay <= 0 {
		l.PerFindingPerDay = 5
	}
	if l.ChainUnitsPer30Min <= 0 {
		l.ChainUnitsPer30Min = 18
	}
	if l.PrincipalPerMinute <= 0 {
		l.PrincipalPerMinute = 60
	}
	if l.BackoffBase <= 0 {
		l.BackoffBase = 2 * time.Second
	}
	if l.BackoffMax <= 0 {
		l.BackoffMax = 60 * time.Second
	}
	return l
}

// recheckUnits is a recheck's price: max(1, ceil(n/3)).
func recheckUnits(n int) int64 { return max(1, int64(math.Ceil(float64(n)/3))) }

// check admits a recheck of findingIDs costing units at now, or returns the
// rule it breaks, in the contract's order: principal burst, per-finding
// half-hour, per-finding day, review chain units, backoff. A refusal costs
// nothing and records nothing.
func (l RecheckLimits) check(now time.Time, u *store.RecheckUsage, findingIDs []string, units int64) error {
	// windowed returns how many events fall in (now-w, now] and when the
	// oldest of them leaves the window.
	windowed := func(events []store.RecheckEvent, w time.Duration, match func(store.RecheckEvent) bool) (int, time.Duration) {
		n, retry := 0, time.Duration(0)
		for _, e := range events {
			if !e.At.After(now.Add(-w)) || !match(e) {
				continue
			}
			if n == 0 {
				retry = max(time.Millisecond, e.At.Add(w).Sub(now))
			}
			n++
		}
		return n, retry
	}
	all := func(store.RecheckEvent) bool { return true }
	if n, retry := windowed(u.ByPrincipal, minuteWindow, all); n >= l.PrincipalPerMinute {
		return limited(fault.RateLimited, retry, "too many rechecks submitted; slow down and retry in ~%ds")
	}
	for _, id := range findingIDs {
		has := func(e store.RecheckEvent) bool { return slices.Contains(e.FindingIDs, id) }
		if n, retry := windowed(u.ByReview, halfHourWindow, has); n >= l.PerFindingPer30Min {
			return limited(fault.RateLimited, retry, "a flagged finding has hit its recheck limit for the half-hour; retry in ~%ds")
		}
		if n, retry := windowed(u.ByReview, dayWindow, has); n >= l.PerFindingPerDay {
			return limited(fault.RateLimited, retry, "a flagged finding has hit its daily recheck limit; retry in ~%ds")
		}
	}
	var used int64
	retry := time.Duration(0)
	for _, e := range u.ByReview {
		if e.At.After(now.Add(-halfHourWindow)) {
			if used == 0 {
				retry = max(time.Millisecond, e.At.Add(halfHourWindow).Sub(now))
			}
			used += e.Units
		}
	}
	if used+units > l.ChainUnitsPer30Min {
		return limited(fault.BudgetExhausted, retry, "this review's recheck budget for the half-hour is exhausted; retry in ~%ds")
	}
	if u.ReviewTotal > 0 {
		wait := l.BackoffMax
		if shift := u.ReviewTotal - 1; shift < 30 {
			wait = min(l.BackoffMax, l.BackoffBase<<shift)
		}
		if elapsed := now.Sub(u.ReviewLast); elapsed < wait {
			return limited(fault.RateLimited, wait-elapsed, "rechecks are backing off; wait ~%ds before the next attempt")
		}
	}
	return nil
}

// limited is a retriable refusal that tells the caller how long to wait.
func limited(code fault.Code, retry time.Duration, format string) error {
	secs := int64(math.Ceil(retry.Seconds()))
	e := fault.New(code, format, secs)
	e.Retriable = true
	return e.WithNext(fault.Wait).WithRetryAfter(retry)
}
