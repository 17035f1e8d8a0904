// Package ratelimit is the gateway's rate-limit gate: token buckets per
// principal, per tool and global (golang.org/x/time/rate).
//
// Invariants: a call takes one token from every configured bucket or from
// none (a call one bucket refuses gets back the tokens the others gave, so
// a shed call drains nothing); the gate runs after every authorization gate
// (see gateway.Stages), so refused calls never reach it; keyed buckets live
// in sharded maps, so no lock spans all callers, and each shard holds at
// most its share of MaxKeys buckets, evicting first buckets that have
// refilled (dropping a full bucket loses nothing: a new one starts full)
// and only then the least recently used.
package ratelimit

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/bastion-mcp/bastion/gateway"
	"github.com/bastion-mcp/bastion/gateway/config"
)

// Bucket is a token bucket: Rate tokens a second, holding at most Burst.
type Bucket struct {
	Rate  float64
	Burst int
}

// Limits configure a Limiter; a nil bucket is off.
type Limits struct {
	Global, PerPrincipal, PerTool *Bucket
	// MaxKeys bounds the per-principal and the per-tool buckets, each;
	// zero means config.DefaultMaxKeys.
	MaxKeys int
	// Now is the clock; nil means time.Now. Tests inject one.
	Now func() time.Time
}

// FromConfig converts [ratelimit].
func FromConfig(c config.RateLimit) Limits {
	conv := func(b *config.Bucket) *Bucket {
		if b == nil {
			return nil
		}
		return &Bucket{Rate: b.Rate, Burst: b.Burst}
	}
	return Limits{Global: conv(c.Global), PerPrincipal: conv(c.PerPrincipal), PerTool: conv(c.PerTool), MaxKeys: c.MaxKeys}
}

// RuleRateLimited is the audit rule of a shed call.
const RuleRateLimited = "rate-limited"

// Limiter is the rate-limit gate. It is safe for concurrent use.
type Limiter struct {
	now          func() time.Time
	global       *rate.Limiter // or nil
	perPrincipal *keyed[principalKey]
	perTool      *keyed[toolKey]
}

type principalKey struct{ tenant, id string }
type toolKey struct{ server, tool string }

// New returns a Limiter. Buckets must have a positive finite rate and a
// burst of at least 1 (config.Parse checks this for files).
func New(l Limits) (*Limiter, error) {
	for _, b := range []*Bucket{l.Global, l.PerPrincipal, l.PerTool} {
		if b != nil && (!(b.Rate > 0) || math.IsInf(b.Rate, 0) || b.Burst < 1) {
			return nil, fmt.Errorf("ratelimit: bucket needs rate > 0 and burst >= 1, got %v/%d", b.Rate, b.Burst)
		}
	}
	max := l.MaxKeys
	if max <= 0 {
		max = config.DefaultMaxKeys
	}
	lim := &Limiter{now: l.Now}
	if lim.now == nil {
		lim.now = time.Now
	}
	if b := l.Global; b != nil {
		lim.global = rate.NewLimiter(rate.Limit(b.Rate), b.Burst)
	}
	if b := l.PerPrincipal; b != nil {
		lim.perPrincipal = newKeyed[principalKey](*b, max)
	}
	if b := l.PerTool; b != nil {
		lim.perTool = newKeyed[toolKey](*b, max)
	}
	return lim, nil
}

// Enabled reports whether any bucket is configured.
func (l *Limiter) Enabled() bool {
	return l.global != nil || l.perPrincipal != nil || l.perTool != nil
}

// Check implements gateway.Gate.
func (l *Limiter) Check(_ context.Context, a *gateway.CallArgs) (gateway.Decision, error) {
	now := l.now()
	var lims [3]*rate.Limiter
	if l.perPrincipal != nil {
		// The zero principal (an unauthenticated local caller) shares one bucket.
		lims[scopePrincipal] = l.perPrincipal.get(principalKey{a.Principal.Tenant(), a.Principal.ID()}, now)
	}
	if l.perTool != nil {
		lims[scopeTool] = l.perTool.get(toolKey{a.Server, a.Tool}, now)
	}
	lims[scopeGlobal] = l.global
	var taken [3]*rate.Reservation
	for i, lim := range lims {
		if lim == nil {
			continue
		}
		r := lim.ReserveN(now, 1)
		if wait := r.DelayFrom(now); !r.OK() || wait > 0 {
			r.CancelAt(now)
			for _, t := range taken[:i] {
				if t != nil {
					t.CancelAt(now)
				}
			}
			return shed(i, a, wait), nil
		}
		taken[i] = r
	}
	return gateway.Allow(gateway.GateRateLimit, ""), nil
}

const (
	scopePrincipal = iota
	scopeTool
	scopeGlobal
)

func shed(scope int, a *gateway.CallArgs, wait time.Duration) gateway.Decision {
	if wait <= 0 || wait == rate.InfDuration {
		wait = time.Second
	}
	wait = wait.Round(time.Millisecond) + time.Millisecond // never advise retrying a hair too early
	var what string
	switch scope {
	case scopePrincipal:
		what = "for this caller"
	case scopeTool:
		name := a.Name
		if name == "" {
			name = a.Server + gateway.Separator + a.Tool
		}
		what = "for tool " + gateway.Quote(name)
	default:
		what = "for the gateway"
	}
	d := gateway.Deny(gateway.GateRateLimit, RuleRateLimited,
		fmt.Sprintf("rate limit exceeded %s; retry after %s", what, wait))
	d.RetryAfter = wait
	return d
}

const shards = 32

// keyed is a bounded map of buckets, split into shards each with its own
// mutex; the mutex guards only the map and the entries' last-use times.
type keyed[K comparable] struct {
	seed     maphash.Seed
	limit    rate.Limit
	burst    int
	perShard int
	shard    [shards]struct {
		mu sync.Mutex
		m  map[K]*entry
		_  [40]byte // keep shards on separate cache lines
	}
}

type entry struct {
	lim  *rate.Limiter
	last time.Time // guarded by the shard's mu
}

func newKeyed[K comparable](b Bucket, maxKeys int) *keyed[K] {
	k := &keyed[K]{seed: maphash.MakeSeed(), limit: rate.Limit(b.Rate), burst: b.Burst}
	k.perShard = max(1, (maxKeys+shards-1)/shards)
	for i := range k.shard {
		k.shard[i].m = make(map[K]*entry)
	}
	return k
}

func (k *keyed[K]) get(key K, now time.Time) *rate.Limiter {
	s := &k.shard[maphash.Comparable(k.seed, key)%shards]
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[key]
	if e == nil {
		if len(s.m) >= k.perShard {
			k.evictLocked(s.m, now)
		}
		e = &entry{lim: rate.NewLimiter(k.limit, k.burst)}
		s.m[key] = e
	}
	e.last = now
	return e.lim
}

// evictLocked makes room in a full shard: it drops every bucket that has
// refilled, and if none has, the least recently used one.
func (k *keyed[K]) evictLocked(m map[K]*entry, now time.Time) {
	var oldest K
	var oldestAt time.Time
	found, freed := false, false
	for key, e := range m {
		if e.lim.TokensAt(now) >= float64(k.burst) {
			delete(m, key)
			freed = true
			continue
		}
		if !found || e.last.Before(oldestAt) {
			oldest, oldestAt, found = key, e.last, true
		}
	}
	if !freed && found {
		delete(m, oldest)
	}
}

// Len returns how many keyed buckets are held, for tests and metrics.
func (l *Limiter) Len() (principals, tools int) {
	count := func(n *int, f func(int) int) {
		for i := 0; i < shards; i++ {
			*n += f(i)
		}
	}
	if l.perPrincipal != nil {
		count(&principals, func(i int) int {
			s := &l.perPrincipal.shard[i]
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(s.m)
		})
	}
	if l.perTool != nil {
		count(&tools, func(i int) int {
			s := &l.perTool.shard[i]
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(s.m)
		})
	}
	return principals, tools
}
