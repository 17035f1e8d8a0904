package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// fetchCause is why a JWKS fetch is wanted; it decides which limit applies.
type fetchCause uint8

const (
	causeNoSet      fetchCause = iota + 1 // no set yet, or the set expired
	causeUnknownKid                       // a token names a kid the set lacks (rotation, or a forgery)
	causeForced                           // Refresh
)

// keysFor returns the keys a token with the given kid may be checked
// against, fetching the JWKS when there is none yet, when it is stale, or
// when the kid is unknown (key rotation). No two fetches are closer than
// MinRefetchInterval, and unknown kids prompt at most one fetch per
// RefetchInterval, so a stream of forged kids cannot turn the verifier into
// a load generator against the issuer; a failed fetch keeps the last good
// set in service.
func (v *JWTVerifier) keysFor(ctx context.Context, kid *string) ([]verifyKey, error) {
	now := v.cfg.Now()
	v.mu.Lock()
	keys, stale := v.keys, !now.Before(v.expires)
	v.mu.Unlock()

	if keys == nil || stale {
		keys = v.refresh(ctx, causeNoSet)
	}
	if keys == nil {
		v.mu.Lock()
		cause := v.lastErr
		v.mu.Unlock()
		if cause == nil {
			return nil, ErrUnavailable
		}
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, cause)
	}
	if kid == nil {
		// Without a kid a token can only name the key of a one-key set;
		// trying every key would make the set's size an oracle and its
		// cost a lever. A refetch could not help either.
		if len(keys) == 1 {
			return keys, nil
		}
		return nil, invalid(ReasonKeyNotFound)
	}
	if m := matchKid(keys, *kid); len(m) > 0 {
		return m, nil
	}
	if m := matchKid(v.refresh(ctx, causeUnknownKid), *kid); len(m) > 0 {
		return m, nil
	}
	return nil, invalid(ReasonKeyNotFound)
}

func matchKid(keys []verifyKey, kid string) []verifyKey {
	var m []verifyKey
	for _, k := range keys {
		if k.kid == kid {
			m = append(m, k)
		}
	}
	return m
}

// Refresh fetches the JWKS now, ignoring the rate limits, and reports the
// fetch error (the previous set stays in service). Call it at start-up or
// from a readiness check.
func (v *JWTVerifier) Refresh(ctx context.Context) error {
	v.refresh(ctx, causeForced)
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.lastErr
}

// limitedLocked reports whether a fetch for cause must wait: any fetch
// within MinRefetchInterval of the last attempt, or a kid-prompted one
// within RefetchInterval of the last kid-prompted attempt. v.mu is held.
func (v *JWTVerifier) limitedLocked(now time.Time, cause fetchCause) bool {
	within := func(last time.Time, d time.Duration) bool { return !last.IsZero() && now.Sub(last) < d }
	switch cause {
	case causeForced:
		return false
	case causeUnknownKid:
		if within(v.lastKidTry, v.cfg.RefetchInterval) {
			return true
		}
	}
	return within(v.lastAttempt, v.cfg.MinRefetchInterval)
}

// refresh fetches the JWKS unless the limits for cause say wait, and
// returns the key set in service afterwards, or nil if there has never been
// one.
func (v *JWTVerifier) refresh(ctx context.Context, cause fetchCause) []verifyKey {
	v.fetchMu.Lock()
	defer v.fetchMu.Unlock()

	now := v.cfg.Now()
	v.mu.Lock()
	if v.limitedLocked(now, cause) {
		// Someone fetched while we waited for fetchMu, a fetch failed a
		// moment ago, or unknown kids already had their fetch: use what
		// is there.
		keys := v.keys
		v.mu.Unlock()
		return keys
	}
	v.lastAttempt = now
	if cause == causeUnknownKid {
		v.lastKidTry = now
	}
	v.mu.Unlock()

	// A caller's cancellation must not fail the fetch for everyone waiting
	// on fetchMu, nor burn the rate limit; the fetch has its own deadline.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jwksFetchTimeout)
	defer cancel()
	keys, ttl, err := v.fetch(fctx)
	if v.cfg.OnFetch != nil {
		v.cfg.OnFetch(fetchOutcome(err))
	}

	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil {
		v.lastErr = err
		return v.keys
	}
	v.keys, v.expires, v.lastErr = keys, v.cfg.Now().Add(ttl), nil
	return keys
}

// The outcomes of a JWKS fetch, as JWTConfig.OnFetch is told them.
const (
	FetchOK          = "ok"          // a set was fetched and parsed
	FetchUnreachable = "unreachable" // no answer: the guard refused, DNS, connect, TLS, timeout
	FetchBadStatus   = "bad_status"  // the issuer answered other than 200
	FetchInvalid     = "invalid"     // the answer was too large or not a key set
)

// FetchOutcomes lists every outcome OnFetch may be told, so a counter can
// start each at zero.
var FetchOutcomes = []string{FetchOK, FetchUnreachable, FetchBadStatus, FetchInvalid}

// errBadStatus marks a JWKS answer that was not 200.
var errBadStatus = errors.New("auth: JWKS fetch: unexpected status")

// errUnreachable marks a JWKS fetch that got no answer.
var errUnreachable = errors.New("auth: JWKS fetch: no answer")

// fetchOutcome is the bounded label of a fetch's error.
func fetchOutcome(err error) string {
	switch {
	case err == nil:
		return FetchOK
	case errors.Is(err, errUnreachable):
		return FetchUnreachable
	case errors.Is(err, errBadStatus):
		return FetchBadStatus
	}
	return FetchInvalid
}

// fetch GETs and parses the JWKS and returns how long to keep it.
func (v *JWTVerifier) fetch(ctx context.Context) ([]verifyKey, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.cfg.JWKSURL, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("auth: JWKS request: %w", err)
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", errUnreachable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("%w %d", errBadStatus, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("auth: JWKS read: %w", err)
	}
	if len(body) > maxJWKSBytes {
		return nil, 0, errors.New("auth: JWKS larger than 512 KiB")
	}
	keys, err := parseJWKS(body)
	if err != nil {
		return nil, 0, fmt.Errorf("auth: JWKS: %w", err)
	}
	return keys, v.cacheTTL(resp.Header.Get("Cache-Control")), nil
}

// cacheTTL turns a Cache-Control header into a lifetime within the
// configured bounds. no-store/no-cache mean the minimum: the set must still
// be cached, or every request would fetch it.
func (v *JWTVerifier) cacheTTL(cc string) time.Duration {
	ttl := defaultCacheTTL
	for _, d := range strings.Split(cc, ",") {
		name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
		switch strings.ToLower(name) {
		case "no-store", "no-cache":
			return v.cfg.MinCacheTTL
		case "max-age":
			if n, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64); err == nil && n >= 0 {
				ttl = time.Duration(min(n, int64(v.cfg.MaxCacheTTL/time.Second)+1)) * time.Second
			}
		}
	}
	return min(max(ttl, v.cfg.MinCacheTTL), v.cfg.MaxCacheTTL)
}
