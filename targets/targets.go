// Package targets keeps each tenant's verified hosts: the DNS names a tenant
// has proved it controls, and so may ask bastion to review.
//
// Invariants:
//   - Matching is per tenant and by exact canonical host (CanonicalHost): a
//     proof for example.com says nothing about www.example.com, and tenant
//     A's proof says nothing for tenant B.
//   - A proof is a random 32-byte token published either as a DNS TXT record
//     at _bastion-challenge.HOST ("bastion-verification=TOKEN") or as the
//     body of https://HOST/.well-known/bastion-verification.txt fetched
//     through the guarded HTTP client (https only, same-host redirects only,
//     size-capped). Tokens are compared in constant time.
//   - Pending challenges and proofs expire (Options.TokenTTL, ProofTTL); an
//     expired proof is not verified.
package targets

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/bastion-mcp/bastion/fault"
)

// ErrNotFound is returned by a Store for a (tenant, host) it does not hold.
var ErrNotFound = errors.New("targets: not found")

// Method names how a host's ownership was proved.
const (
	MethodDNSTXT    = "dns_txt"
	MethodWellKnown = "well_known"
)

// Proof locations; part of the public contract (operators publish them).
const (
	TXTPrefix     = "_bastion-challenge."
	TXTValuePre   = "bastion-verification="
	WellKnownPath = "/.well-known/bastion-verification.txt"
)

// Target is one (tenant, host) entry: a pending challenge while VerifiedAt
// is zero, a proof once verified. ExpiresAt is the challenge's expiry while
// pending and the proof's expiry once verified.
type Target struct {
	Tenant     string
	Host       string // canonical, see CanonicalHost
	Token      string
	Method     string // MethodDNSTXT, MethodWellKnown, or "" while pending
	CreatedAt  time.Time
	VerifiedAt time.Time // zero while pending
	ExpiresAt  time.Time
}

// Verified reports whether t holds an unexpired proof at now.
func (t Target) Verified(now time.Time) bool {
	return !t.VerifiedAt.IsZero() && now.Before(t.ExpiresAt)
}

// Store persists targets. The SQLite and Postgres stores implement it.
type Store interface {
	TargetPut(ctx context.Context, t Target) error // upsert by (Tenant, Host)
	TargetGet(ctx context.Context, tenant, host string) (Target, error)
	TargetList(ctx context.Context, tenant string) ([]Target, error)
	TargetDelete(ctx context.Context, tenant, host string) error
}

// TXTResolver looks up TXT records; *net.Resolver satisfies it.
type TXTResolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
}

// Defaults for zero Options fields.
const (
	DefaultTokenTTL      = 7 * 24 * time.Hour
	DefaultProofTTL      = 90 * 24 * time.Hour
	DefaultMaxProofBytes = 1024
	DefaultProofTimeout  = 10 * time.Second
)

// Options tunes a Registry; zero fields mean the defaults above.
type Options struct {
	TokenTTL      time.Duration // how long a pending challenge may be verified
	ProofTTL      time.Duration // how long a proof counts once verified
	MaxProofBytes int64         // cap on the well-known file's body
	ProofTimeout  time.Duration // per proof attempt (DNS, then HTTPS)
}

// Challenge is what a tenant must publish to prove it controls Host.
type Challenge struct {
	Host         string
	Token        string
	TXTName      string // "_bastion-challenge." + Host
	TXTValue     string // "bastion-verification=" + Token
	WellKnownURL string // "https://" + Host + WellKnownPath; body: Token
	ExpiresAt    time.Time
}

// Registry issues and checks ownership proofs. It is safe for concurrent
// use as far as its Store is.
type Registry struct {
	store  Store
	txt    TXTResolver  // or nil: no DNS proof
	client *http.Client // the guarded client, or nil: no well-known proof
	now    func() time.Time
	opts   Options
}

// NewRegistry returns a registry over s. txt answers TXT lookups; client
// must be the egress guard's HTTP client so the well-known fetch is
// guarded; now is the clock (nil means time.Now).
func NewRegistry(s Store, txt TXTResolver, client *http.Client, now func() time.Time, o Options) *Registry {
	if now == nil {
		now = time.Now
	}
	if o.TokenTTL <= 0 {
		o.TokenTTL = DefaultTokenTTL
	}
	if o.ProofTTL <= 0 {
		o.ProofTTL = DefaultProofTTL
	}
	if o.MaxProofBytes <= 0 {
		o.MaxProofBytes = DefaultMaxProofBytes
	}
	if o.ProofTimeout <= 0 {
		o.ProofTimeout = DefaultProofTimeout
	}
	return &Registry{store: s, txt: txt, client: client, now: now, opts: o}
}

// Add issues (or re-issues) a challenge for tenant's host. While an entry
// is live (a pending challenge or a proof, not expired) Add returns its
// token unchanged, so a published record stays valid; an expired entry is
// replaced with a fresh token and loses its verification.
func (r *Registry) Add(ctx context.Context, tenant, host string) (Challenge, error) {
	host, err := CanonicalHost(host)
	if err != nil {
		return Challenge{}, err
	}
	now := r.now()
	t, err := r.store.TargetGet(ctx, tenant, host)
	switch {
	case err == nil && now.Before(t.ExpiresAt):
		return challengeFor(t), nil
	case err != nil && !errors.Is(err, ErrNotFound):
		return Challenge{}, fmt.Errorf("targets: get %q: %w", host, err)
	}
	t = Target{
		Tenant:    tenant,
		Host:      host,
		Token:     newToken(),
		CreatedAt: now,
		ExpiresAt: now.Add(r.opts.TokenTTL),
	}
	if err := r.store.TargetPut(ctx, t); err != nil {
		return Challenge{}, fmt.Errorf("targets: put %q: %w", host, err)
	}
	return challengeFor(t), nil
}

func challengeFor(t Target) Challenge {
	exp := t.ExpiresAt
	return Challenge{
		Host:         t.Host,
		Token:        t.Token,
		TXTName:      TXTPrefix + t.Host,
		TXTValue:     TXTValuePre + t.Token,
		WellKnownURL: "https://" + t.Host + WellKnownPath,
		ExpiresAt:    exp,
	}
}

// newToken returns 32 random bytes as lowercase unpadded base32 (52
// characters: safe in a TXT record, a file and a shell).
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// Verify checks tenant's proof for host, DNS TXT first, then the well-known
// file. On success the target is verified for ProofTTL from now. On failure
// it returns a DOMAIN_UNVERIFIED *fault.Error saying what to publish, and
// leaves the stored entry (and any earlier, unexpired proof) unchanged.
func (r *Registry) Verify(ctx context.Context, tenant, host string) (Target, error) {
	host, err := CanonicalHost(host)
	if err != nil {
		return Target{}, err
	}
	t, err := r.store.TargetGet(ctx, tenant, host)
	if errors.Is(err, ErrNotFound) {
		return Target{}, fault.New(fault.DomainUnverified,
			"no challenge for %s: add the host first (bastion targets add %s), publish the proof, then verify", host, host)
	}
	if err != nil {
		return Target{}, fmt.Errorf("targets: get %q: %w", host, err)
	}
	if t.VerifiedAt.IsZero() && !r.now().Before(t.ExpiresAt) {
		return Target{}, fault.New(fault.DomainUnverified,
			"the challenge for %s expired: add the host again for a new token, publish it, then verify", host)
	}
	method, why := r.prove(ctx, t)
	if method == "" {
		c := challengeFor(t)
		return Target{}, fault.New(fault.DomainUnverified,
			"could not verify %s (%s): publish a DNS TXT record %s with value %q, or serve %s with the body %s",
			host, strings.Join(why, "; "), c.TXTName, c.TXTValue, c.WellKnownURL, c.Token)
	}
	now := r.now()
	t.Method = method
	t.VerifiedAt = now
	t.ExpiresAt = now.Add(r.opts.ProofTTL)
	if err := r.store.TargetPut(ctx, t); err != nil {
		return Target{}, fmt.Errorf("targets: put %q: %w", host, err)
	}
	return t, nil
}

// prove returns the method that proved t, or "" and a safe reason per
// method tried (no addresses, no response bodies).
func (r *Registry) prove(ctx context.Context, t Target) (string, []string) {
	var why []string
	if r.txt != nil {
		ok, reason := r.proveTXT(ctx, t)
		if ok {
			return MethodDNSTXT, nil
		}
		why = append(why, "DNS: "+reason)
	}
	if r.client != nil {
		ok, reason := r.proveWellKnown(ctx, t)
		if ok {
			return MethodWellKnown, nil
		}
		why = append(why, "HTTPS: "+reason)
	}
	if len(why) == 0 {
		why = append(why, "no proof method is configured")
	}
	return "", why
}

func (r *Registry) proveTXT(ctx context.Context, t Target) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.ProofTimeout)
	defer cancel()
	vals, err := r.txt.LookupTXT(ctx, TXTPrefix+t.Host)
	if err != nil {
		var de *net.DNSError
		if errors.As(err, &de) && de.IsNotFound {
			return false, "no TXT record at " + TXTPrefix + t.Host
		}
		return false, "TXT lookup failed"
	}
	want := TXTValuePre + t.Token
	for _, v := range vals {
		if equal(strings.TrimSpace(v), want) {
			return true, ""
		}
	}
	return false, "no TXT record with the expected value"
}

func (r *Registry) proveWellKnown(ctx context.Context, t Target) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.ProofTimeout)
	defer cancel()
	c := *r.client
	guarded := r.client.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		// The host's owner may redirect within the host (http→https is
		// excluded too); a hop elsewhere would let another origin answer.
		if req.URL.Scheme != "https" || !strings.EqualFold(req.URL.Hostname(), t.Host) {
			return fault.New(fault.RedirectNotAllowed, "proof redirects must stay on https://%s", t.Host)
		}
		if guarded != nil {
			return guarded(req, via)
		}
		if len(via) >= 5 {
			return fault.New(fault.RedirectNotAllowed, "too many redirects")
		}
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+t.Host+WellKnownPath, nil)
	if err != nil {
		return false, "bad proof URL"
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := c.Do(req)
	if err != nil {
		if fe, ok := fault.As(err); ok {
			return false, "fetch refused (" + string(fe.Code) + ")"
		}
		return false, "fetch failed"
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Sprintf("%s answered HTTP %d", WellKnownPath, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, r.opts.MaxProofBytes+1))
	if err != nil {
		return false, "reading the file failed"
	}
	if int64(len(body)) > r.opts.MaxProofBytes {
		return false, fmt.Sprintf("file larger than %d bytes", r.opts.MaxProofBytes)
	}
	if !equal(strings.TrimSpace(string(body)), t.Token) {
		return false, "file does not hold the expected token"
	}
	return true, ""
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// IsVerified reports whether tenant holds an unexpired proof for exactly
// host. A host that is not a valid DNS name is an URL_NOT_ALLOWED error.
func (r *Registry) IsVerified(ctx context.Context, tenant, host string) (bool, error) {
	host, err := CanonicalHost(host)
	if err != nil {
		return false, err
	}
	t, err := r.store.TargetGet(ctx, tenant, host)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("targets: get %q: %w", host, err)
	}
	return t.Verified(r.now()), nil
}

// HostVerifier answers for one tenant; it satisfies egress.HostVerifier.
type HostVerifier interface {
	IsVerified(ctx context.Context, host string) (bool, error)
}

// Verifier returns the registry bound to tenant.
func (r *Registry) Verifier(tenant string) HostVerifier {
	return tenantVerifier{r: r, tenant: tenant}
}

type tenantVerifier struct {
	r      *Registry
	tenant string
}

func (v tenantVerifier) IsVerified(ctx context.Context, host string) (bool, error) {
	return v.r.IsVerified(ctx, v.tenant, host)
}

// Remove deletes tenant's entry for host; removing an absent host is not an
// error.
func (r *Registry) Remove(ctx context.Context, tenant, host string) error {
	host, err := CanonicalHost(host)
	if err != nil {
		return err
	}
	if err := r.store.TargetDelete(ctx, tenant, host); err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("targets: delete %q: %w", host, err)
	}
	return nil
}

// List returns tenant's entries, pending and verified, as stored.
func (r *Registry) List(ctx context.Context, tenant string) ([]Target, error) {
	ts, err := r.store.TargetList(ctx, tenant)
	if err != nil {
		return nil, fmt.Errorf("targets: list: %w", err)
	}
	return ts, nil
}
