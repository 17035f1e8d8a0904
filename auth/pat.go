package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
)

// A personal access token looks like
//
//	bst_<43 base62 characters: 256 random bits><6 base62 characters: CRC-32>
//
// The prefix lets secret scanners and the verifier recognise it; the
// checksum (over everything before it) rejects typos and lazy forgeries
// before any store lookup. Only the SHA-256 of the whole token is stored.
const (
	PATPrefix     = "bst_"
	patBodyLen    = 43 // ceil(256 / log2(62))
	patCheckLen   = 6  // 62^6 > 2^32
	PATLen        = len(PATPrefix) + patBodyLen + patCheckLen
	patShownChars = 4 // body characters a redacted PAT keeps
	patIDLen      = 16
	patTouchEvery = time.Minute
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// PAT is a personal access token. It is incomparable (== on secrets is not
// constant-time) and every way of printing it — String, GoString, LogValue —
// redacts it to its prefix; Reveal is the one way to the secret. The zero PAT
// is invalid.
type PAT struct {
	_ [0]func()
	s string
}

// ParsePAT checks the form and checksum of s. Errors are *InvalidTokenError
// and never contain s.
func ParsePAT(s string) (PAT, error) {
	if len(s) != PATLen || !strings.HasPrefix(s, PATPrefix) {
		return PAT{}, invalid(ReasonMalformed)
	}
	for i := len(PATPrefix); i < len(s); i++ {
		if strings.IndexByte(base62, s[i]) < 0 {
			return PAT{}, invalid(ReasonMalformed)
		}
	}
	body := s[:PATLen-patCheckLen]
	want := patChecksum(body)
	if subtle.ConstantTimeCompare([]byte(want), []byte(s[len(body):])) != 1 {
		return PAT{}, invalid(ReasonChecksum)
	}
	return PAT{s: s}, nil
}

// NewPAT returns a fresh token drawn from r (crypto/rand.Reader if nil).
func NewPAT(r io.Reader) (PAT, error) {
	body, err := randomBase62(r, patBodyLen)
	if err != nil {
		return PAT{}, err
	}
	s := PATPrefix + body
	return PAT{s: s + patChecksum(s)}, nil
}

func patChecksum(s string) string {
	c := crc32.ChecksumIEEE([]byte(s))
	var b [patCheckLen]byte
	for i := patCheckLen - 1; i >= 0; i-- {
		b[i] = base62[c%62]
		c /= 62
	}
	return string(b[:])
}

// randomBase62 draws n uniform base62 characters, rejecting bytes ≥ 248 so
// that the modulo does not bias the alphabet.
func randomBase62(r io.Reader, n int) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/4)
	for len(out) < n {
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", fmt.Errorf("auth: reading randomness: %w", err)
		}
		for _, c := range buf {
			if c < 248 && len(out) < n {
				out = append(out, base62[c%62])
			}
		}
	}
	return string(out), nil
}

// IsValid reports whether p came from ParsePAT or NewPAT.
func (p PAT) IsValid() bool { return p.s != "" }

// Hash returns the SHA-256 of the token, the only form that is stored.
func (p PAT) Hash() [32]byte { return sha256.Sum256([]byte(p.s)) }

// Reveal returns the secret token, to show its owner once at creation.
func (p PAT) Reveal() string { return p.s }

// Redacted returns "bst_abcd…": enough to tell tokens apart, too little to
// use one.
func (p PAT) Redacted() string {
	if !p.IsValid() {
		return "bst_(invalid)"
	}
	return p.s[:len(PATPrefix)+patShownChars] + "…"
}

// String returns the redacted token, so %v and %s cannot leak it.
func (p PAT) String() string { return p.Redacted() }

// GoString returns the redacted token, so %#v cannot leak it.
func (p PAT) GoString() string { return "auth.PAT(" + p.Redacted() + ")" }

// LogValue implements slog.LogValuer with the redacted token.
func (p PAT) LogValue() slog.Value { return slog.StringValue(p.Redacted()) }

// PATRecord is a stored PAT: everything but the token, of which only Hash is
// kept. A zero ExpiresAt never expires; a non-zero RevokedAt is revoked.
// It is incomparable because it carries a hash meant for constant-time
// comparison only.
type PATRecord struct {
	_          [0]func()
	ID         string
	Tenant     string
	Name       string
	Scopes     []principal.Scope
	Hash       [32]byte
	CreatedAt  time.Time
	ExpiresAt  time.Time
	RevokedAt  time.Time
	LastUsedAt time.Time
}

// Active reports whether rec is neither revoked nor expired at now.
func (rec PATRecord) Active(now time.Time) bool {
	return rec.RevokedAt.IsZero() && (rec.ExpiresAt.IsZero() || now.Before(rec.ExpiresAt))
}

// PrincipalID returns the principal id a PAT acts as: "pat:" + ID. JWT
// subjects with that prefix are refused, so the two cannot collide.
func (rec PATRecord) PrincipalID() string { return patSubjectPrefix + rec.ID }

// LogValue implements slog.LogValuer without the hash.
func (rec PATRecord) LogValue() slog.Value {
	scopes := make([]string, len(rec.Scopes))
	for i, s := range rec.Scopes {
		scopes[i] = string(s)
	}
	return slog.GroupValue(
		slog.String("id", rec.ID),
		slog.String("tenant", rec.Tenant),
		slog.String("name", rec.Name),
		slog.String("scopes", strings.Join(scopes, " ")),
	)
}

// ErrNotFound is what a PATStore returns (possibly wrapped) for a hash or id
// it does not hold.
var ErrNotFound = errors.New("auth: personal access token not found")

// PATStore keeps PAT records. Implementations live with the application
// store (SQLite, Postgres); records are tenant-keyed.
type PATStore interface {
	// PATPut inserts a new record.
	PATPut(ctx context.Context, rec PATRecord) error
	// PATGetByHash returns the record with this hash, or ErrNotFound. It is
	// the one lookup not scoped by tenant: the token is what names the tenant.
	PATGetByHash(ctx context.Context, hash [32]byte) (PATRecord, error)
	// PATList returns the tenant's records, revoked and expired included.
	PATList(ctx context.Context, tenant string) ([]PATRecord, error)
	// PATRevoke sets RevokedAt on the tenant's record id, or returns
	// ErrNotFound if the tenant holds no such record.
	PATRevoke(ctx context.Context, tenant, id string, at time.Time) error
}

// PATToucher is optionally implemented by a PATStore to record LastUsedAt.
// The verifier probes for it and calls it at most once a minute per token;
// its failure does not fail the request.
type PATToucher interface {
	PATTouch(ctx context.Context, tenant, id string, at time.Time) error
}

// PATIssuer creates and revokes PATs.
type PATIssuer struct {
	store PATStore
	rand  io.Reader
	now   func() time.Time
}

// NewPATIssuer returns an issuer over store. rand nil means crypto/rand,
// now nil means time.Now.
func NewPATIssuer(store PATStore, rand io.Reader, now func() time.Time) *PATIssuer {
	if now == nil {
		now = time.Now
	}
	return &PATIssuer{store: store, rand: rand, now: now}
}

// maxPATName bounds a PAT's human-readable name.
const maxPATName = 100

// Create makes a PAT for tenant with the given scopes, valid for ttl (0: no
// expiry), stores its record and returns the token, to be shown once.
// Invalid arguments are fault.InvalidArgument errors.
func (i *PATIssuer) Create(ctx context.Context, tenant, name string, scopes []principal.Scope, ttl time.Duration) (string, PATRecord, error) {
	if name == "" || len(name) > maxPATName || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", PATRecord{}, fault.New(fault.InvalidArgument, "a token name must be 1-%d printable characters", maxPATName)
	}
	if len(scopes) == 0 {
		return "", PATRecord{}, fault.New(fault.InvalidArgument, "a token needs at least one scope")
	}
	if ttl < 0 {
		return "", PATRecord{}, fault.New(fault.InvalidArgument, "a token's lifetime must not be negative")
	}
	id, err := randomBase62(i.rand, patIDLen)
	if err != nil {
		return "", PATRecord{}, err
	}
	rec := PATRecord{ID: id, Tenant: tenant, Name: name}
	p, err := principal.New(tenant, rec.PrincipalID(), scopes...)
	if err != nil {
		return "", PATRecord{}, fault.Wrap(err, fault.InvalidArgument, "invalid tenant or scope for a token")
	}
	tok, err := NewPAT(i.rand)
	if err != nil {
		return "", PATRecord{}, err
	}
	now := i.now()
	rec.Scopes = p.Scopes()
	rec.Hash = tok.Hash()
	rec.CreatedAt = now
	if ttl > 0 {
		rec.ExpiresAt = now.Add(ttl)
	}
	if err := i.store.PATPut(ctx, rec); err != nil {
		return "", PATRecord{}, fmt.Errorf("auth: storing token %s: %w", rec.ID, err)
	}
	return tok.Reveal(), rec, nil
}

// List returns the tenant's PAT records.
func (i *PATIssuer) List(ctx context.Context, tenant string) ([]PATRecord, error) {
	return i.store.PATList(ctx, tenant)
}

// Revoke revokes the tenant's PAT id now; ErrNotFound if it has none.
func (i *PATIssuer) Revoke(ctx context.Context, tenant, id string) error {
	return i.store.PATRevoke(ctx, tenant, id, i.now())
}

// PATVerifier returns a Verifier for PATs held in store. Malformed, unknown,
// expired and revoked tokens are ErrInvalidToken; a store failure is
// ErrUnavailable. now nil means time.Now.
func PATVerifier(store PATStore, now func() time.Time) Verifier {
	if now == nil {
		now = time.Now
	}
	return func(ctx context.Context, token string, _ *http.Request) (principal.Principal, error) {
		tok, err := ParsePAT(token)
		if err != nil {
			return principal.Principal{}, err
		}
		h := tok.Hash()
		rec, err := store.PATGetByHash(ctx, h)
		switch {
		case errors.Is(err, ErrNotFound):
			return principal.Principal{}, invalid(ReasonUnknown)
		case err != nil:
			return principal.Principal{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		// The store looked the hash up; confirm it in constant time rather
		// than trust that it matched exactly.
		if subtle.ConstantTimeCompare(rec.Hash[:], h[:]) != 1 {
			return principal.Principal{}, invalid(ReasonUnknown)
		}
		t := now()
		switch {
		case !rec.RevokedAt.IsZero():
			return principal.Principal{}, invalid(ReasonRevoked)
		case !rec.ExpiresAt.IsZero() && !t.Before(rec.ExpiresAt):
			return principal.Principal{}, invalid(ReasonExpired)
		}
		p, err := principal.New(rec.Tenant, rec.PrincipalID(), rec.Scopes...)
		if err != nil {
			return principal.Principal{}, invalid(ReasonUnknown)
		}
		if toucher, ok := store.(PATToucher); ok && t.Sub(rec.LastUsedAt) >= patTouchEvery {
			_ = toucher.PATTouch(context.WithoutCancel(ctx), rec.Tenant, rec.ID, t)
		}
		return p, nil
	}
}

// Combined routes bst_ tokens to pat and every other token to jwt. Either
// may be nil, in which case its tokens are refused.
func Combined(pat, jwt Verifier) Verifier {
	return func(ctx context.Context, token string, r *http.Request) (principal.Principal, error) {
		v := jwt
		if strings.HasPrefix(token, PATPrefix) {
			v = pat
		}
		if v == nil {
			return principal.Principal{}, invalid(ReasonUnknown)
		}
		return v(ctx, token, r)
	}
}
