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

// keysFor returns the keys a token with the given kid may be checked
// against, fetching the JWKS when there is none yet, when it is stale, or
// when the kid is unknown (key rotation). Every fetch, whatever its cause, is
// rate-limited by RefetchInterval, so a stream of forged kids cannot turn the
// verifier into a load generator against the issuer; and a failed fetch
// keeps the last good set in service.
func (v *JWTVerifier) keysFor(ctx context.Context, kid *string) ([]verifyKey, error) {
	now := v.cfg.Now()
	v.mu.Lock()
	keys, stale := v.keys, !now.Before(v.expires)
	v.mu.Unlock()

	if keys == nil || stale {
		keys = v.refresh(ctx, false)
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
	if m := matchKid(v.refresh(ctx, false), *kid); len(m) > 0 {
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

// Refresh fetches the JWKS now, ignoring the rate limit, and reports the
// fetch error (the previous set stays in service). Call it at start-up or
// from a readiness check.
func (v *JWTVerifier) Refresh(ctx context.Context) error {
	v.refresh(ctx, true)
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.lastErr
}

// refresh fetches the JWKS unless one was attempted within RefetchInterval
// (or force is set), and returns the key set in service afterwards, or nil
// if there has never been one.
func (v *JWTVerifier) refresh(ctx context.Context, force bool) []verifyKey {
	v.fetchMu.Lock()
	defer v.fetchMu.Unlock()

	now := v.cfg.Now()
	v.mu.Lock()
	recent := !v.lastAttempt.IsZero() && now.Sub(v.lastAttempt) < v.cfg.RefetchInterval
	if recent && !force {
		// Someone fetched while we waited for fetchMu, or a fetch failed a
		// moment ago: use what is there.
		keys := v.keys
		v.mu.Unlock()
		return keys
	}
	v.lastAttempt = now
	v.mu.Unlock()

	// A caller's cancellation must not fail the fetch for everyone waiting
	// on fetchMu, nor burn the rate limit; the fetch has its own deadline.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jwksFetchTimeout)
	defer cancel()
	keys, ttl, err := v.fetch(fctx)

	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil {
		v.lastErr = err
		return v.keys
	}
	v.keys, v.expires, v.lastErr = keys, v.cfg.Now().Add(ttl), nil
	return keys
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
		return nil, 0, fmt.Errorf("auth: JWKS fetch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("auth: JWKS fetch: status %d", resp.StatusCode)
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
