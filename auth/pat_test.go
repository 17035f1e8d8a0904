package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
)

// memStore is an in-memory PATStore with the semantics the SQL stores must
// have (tenant-scoped list and revoke, ErrNotFound). The real stores live in
// the store package, which does not exist yet at this layer.
type memStore struct {
	mu      sync.Mutex
	byHash  map[[32]byte]PATRecord
	touches int
	fail    error
}

func newMemStore() *memStore { return &memStore{byHash: make(map[[32]byte]PATRecord)} }

func (m *memStore) PATPut(_ context.Context, rec PATRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.byHash[rec.Hash] = rec
	return nil
}

func (m *memStore) PATGetByHash(_ context.Context, h [32]byte) (PATRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return PATRecord{}, m.fail
	}
	rec, ok := m.byHash[h]
	if !ok {
		return PATRecord{}, ErrNotFound
	}
	return rec, nil
}

func (m *memStore) PATList(_ context.Context, tenant string) ([]PATRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []PATRecord
	for _, r := range m.byHash {
		if r.Tenant == tenant {
			out = append(out, r)
		}
	}
	return out, nil
}

func (m *memStore) PATRevoke(_ context.Context, tenant, id string, at time.Time) error {
	return m.update(tenant, id, func(r *PATRecord) { r.RevokedAt = at })
}

func (m *memStore) PATTouch(_ context.Context, tenant, id string, at time.Time) error {
	m.mu.Lock()
	m.touches++
	m.mu.Unlock()
	return m.update(tenant, id, func(r *PATRecord) { r.LastUsedAt = at })
}

func (m *memStore) update(tenant, id string, f func(*PATRecord)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for h, r := range m.byHash {
		if r.Tenant == tenant && r.ID == id {
			f(&r)
			m.byHash[h] = r
			return nil
		}
	}
	return fmt.Errorf("revoke %s: %w", id, ErrNotFound)
}

func TestPATFormat(t *testing.T) {
	t.Parallel()
	seen := make(map[string]bool)
	for range 200 {
		p, err := NewPAT(nil)
		if err != nil {
			t.Fatal(err)
		}
		s := p.Reveal()
		if len(s) != PATLen || !strings.HasPrefix(s, "bst_") {
			t.Fatalf("NewPAT = %d chars, want %d with prefix bst_", len(s), PATLen)
		}
		if seen[s] {
			t.Fatal("NewPAT repeated a token")
		}
		seen[s] = true
		q, err := ParsePAT(s)
		if err != nil || q.Hash() != sha256.Sum256([]byte(s)) {
			t.Fatalf("ParsePAT(NewPAT()) = %v", err)
		}
	}
	p, _ := NewPAT(nil)
	s := p.Reveal()
	tests := []struct {
		name string
		in   string
		want Reason
	}{
		{"OneCharTypo", s[:20] + flip(s[20]) + s[21:], ReasonChecksum},
		{"ChecksumTypo", s[:PATLen-1] + flip(s[PATLen-1]), ReasonChecksum},
		{"Transposed", s[:10] + string(s[11]) + string(s[10]) + s[12:], ReasonChecksum},
		{"Short", s[:PATLen-1], ReasonMalformed},
		{"Long", s + "a", ReasonMalformed},
		{"WrongPrefix", "bsx_" + s[4:], ReasonMalformed},
		{"UpperPrefix", "BST_" + s[4:], ReasonMalformed},
		{"NonBase62", s[:20] + "-" + s[21:], ReasonMalformed},
		{"Empty", "", ReasonMalformed},
	}
	for _, tt := range tests {
		if tt.name == "Transposed" && s[10] == s[11] {
			continue
		}
		_, err := ParsePAT(tt.in)
		var ite *InvalidTokenError
		if !errors.As(err, &ite) || ite.Reason != tt.want {
			t.Errorf("%s: ParsePAT = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// TestPATNeverPrinted checks every way a PAT or its record might reach a
// log: fmt verbs, slog text and JSON handlers, nested in a struct.
func TestPATNeverPrinted(t *testing.T) {
	t.Parallel()
	p, _ := NewPAT(nil)
	secret := p.Reveal()
	var buf bytes.Buffer
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		fmt.Fprintf(&buf, verb+"\n", p)
	}
	fmt.Fprintf(&buf, "%+v\n", struct{ Tok PAT }{p})
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "pat", p, "nested", slog.GroupValue(slog.Any("pat", p)))
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "pat", p)
	out := buf.String()
	if strings.Contains(out, secret[len(PATPrefix)+patShownChars:]) {
		t.Fatalf("the secret part of a PAT reached the output:\n%s", out)
	}
	if !strings.Contains(out, secret[:8]+"…") {
		t.Errorf("redacted form %q missing from output:\n%s", secret[:8]+"…", out)
	}
	if got := (PAT{}).String(); got != "bst_(invalid)" {
		t.Errorf("zero PAT = %q", got)
	}

	rec := PATRecord{ID: "id1", Tenant: "acme", Name: "ci", Hash: p.Hash(), Scopes: []principal.Scope{principal.ReviewsRead}}
	buf.Reset()
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "rec", rec)
	h := p.Hash()
	if strings.Contains(buf.String(), fmt.Sprintf("%x", h[:4])) || strings.Contains(buf.String(), fmt.Sprint(h[0], " ", h[1])) {
		t.Errorf("record log carries the hash: %s", buf.String())
	}
	if !strings.Contains(buf.String(), `"tenant":"acme"`) {
		t.Errorf("record log = %s", buf.String())
	}
}

func TestPATLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock()
	store := newMemStore()
	iss := NewPATIssuer(store, nil, clk.Now)
	verify := PATVerifier(store, clk.Now)

	tok, rec, err := iss.Create(ctx, "acme", "ci bot", []principal.Scope{principal.ReviewsWrite, principal.ReviewsRead, principal.ReviewsRead}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Hash != sha256.Sum256([]byte(tok)) {
		t.Error("stored hash is not SHA-256 of the token")
	}
	for _, r := range store.byHash {
		if strings.Contains(fmt.Sprintf("%+v", r), tok[4:]) {
			t.Error("the store holds the token itself")
		}
	}
	if !rec.ExpiresAt.Equal(t0.Add(24*time.Hour)) || !rec.CreatedAt.Equal(t0) {
		t.Errorf("times = %v / %v", rec.CreatedAt, rec.ExpiresAt)
	}
	p, err := verify(ctx, tok, nil)
	if err != nil {
		t.Fatalf("verify fresh token: %v", err)
	}
	if p.Tenant() != "acme" || p.ID() != "pat:"+rec.ID || !slices.Equal(p.Scopes(), []principal.Scope{principal.ReviewsRead, principal.ReviewsWrite}) {
		t.Errorf("principal = %s %v", p, p.Scopes())
	}

	// LastUsedAt is written at most once a minute.
	_, _ = verify(ctx, tok, nil)
	clk.Advance(61 * time.Second)
	_, _ = verify(ctx, tok, nil)
	if store.touches != 2 {
		t.Errorf("touches = %d, want 2 (first use, then after a minute)", store.touches)
	}

	reason := func(tok string) Reason {
		t.Helper()
		_, err := verify(ctx, tok, nil)
		var ite *InvalidTokenError
		if !errors.As(err, &ite) {
			t.Fatalf("verify = %v, want an InvalidTokenError", err)
		}
		return ite.Reason
	}
	// Expiry.
	clk.Advance(24 * time.Hour)
	if r := reason(tok); r != ReasonExpired {
		t.Errorf("expired token: reason %v", r)
	}

	// Revocation, scoped to the tenant.
	tok2, rec2, err := iss.Create(ctx, "acme", "laptop", []principal.Scope{principal.ReviewsRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !rec2.ExpiresAt.IsZero() {
		t.Error("ttl 0 should mean no expiry")
	}
	if err := iss.Revoke(ctx, "other-tenant", rec2.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("revoke from another tenant = %v, want ErrNotFound", err)
	}
	if _, err := verify(ctx, tok2, nil); err != nil {
		t.Errorf("token after a foreign revoke attempt: %v", err)
	}
	if err := iss.Revoke(ctx, "acme", rec2.ID); err != nil {
		t.Fatal(err)
	}
	if r := reason(tok2); r != ReasonRevoked {
		t.Errorf("revoked token: reason %v", r)
	}
	list, err := iss.List(ctx, "acme")
	if err != nil || len(list) != 2 {
		t.Errorf("List = %d records, %v", len(list), err)
	}

	// Well-formed but never issued.
	fake, _ := NewPAT(nil)
	if r := reason(fake.Reveal()); r != ReasonUnknown {
		t.Errorf("unknown token: reason %v", r)
	}
	// A typo never reaches the store.
	store.fail = errors.New("store must not be asked")
	if r := reason(tok2[:30] + flip(tok2[30]) + tok2[31:]); r != ReasonChecksum {
		t.Errorf("typo: reason %v", r)
	}
	// A store outage is not an invalid token.
	if _, err := verify(ctx, fake.Reveal(), nil); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrInvalidToken) {
		t.Errorf("store down: %v, want ErrUnavailable", err)
	}
}

// TestPATStoreMismatch: a store that returns a record for the wrong hash
// (a bug, or a prefix index gone wrong) must not authenticate.
func TestPATStoreMismatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newMemStore()
	_, rec, err := NewPATIssuer(store, nil, nil).Create(ctx, "acme", "x", []principal.Scope{principal.ReviewsRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewPAT(nil)
	store.byHash[other.Hash()] = rec // rec.Hash is the first token's
	if _, err := PATVerifier(store, nil)(ctx, other.Reveal(), nil); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("mismatched record accepted: %v", err)
	}
}

func TestPATCreateRefuses(t *testing.T) {
	t.Parallel()
	iss := NewPATIssuer(newMemStore(), nil, nil)
	read := []principal.Scope{principal.ReviewsRead}
	tests := []struct {
		name, tenant, label string
		scopes              []principal.Scope
		ttl                 time.Duration
	}{
		{"NoScopes", "acme", "x", nil, 0},
		{"UnknownScope", "acme", "x", []principal.Scope{"admin"}, 0},
		{"EmptyTenant", "", "x", read, 0},
		{"ControlTenant", "a\x00b", "x", read, 0},
		{"EmptyName", "acme", "", read, 0},
		{"LongName", "acme", strings.Repeat("n", 101), read, 0},
		{"NewlineName", "acme", "a\nb", read, 0},
		{"NegativeTTL", "acme", "x", read, -time.Second},
	}
	for _, tt := range tests {
		_, _, err := iss.Create(context.Background(), tt.tenant, tt.label, tt.scopes, tt.ttl)
		if !fault.Is(err, fault.InvalidArgument) {
			t.Errorf("%s: Create = %v, want INVALID_ARGUMENT", tt.name, err)
		}
	}
}

// TestRandomBase62Rejection: bytes ≥ 248 are skipped, not folded into the
// alphabet, so a reader of all 0xff then zeros yields only '0'.
func TestRandomBase62Rejection(t *testing.T) {
	t.Parallel()
	src := bytes.NewReader(append(bytes.Repeat([]byte{0xff}, 100), make([]byte, 100)...))
	s, err := randomBase62(src, 10)
	if err != nil || s != "0000000000" {
		t.Errorf("randomBase62 = %q, %v", s, err)
	}
	if _, err := randomBase62(bytes.NewReader(nil), 10); err == nil {
		t.Error("randomBase62 on an empty reader succeeded")
	}
}

func BenchmarkPATVerify(b *testing.B) {
	ctx := context.Background()
	store := newMemStore()
	tok, _, err := NewPATIssuer(store, nil, nil).Create(ctx, "acme", "bench", []principal.Scope{principal.ReviewsRead}, 0)
	if err != nil {
		b.Fatal(err)
	}
	verify := PATVerifier(store, nil)
	for b.Loop() {
		if _, err := verify(ctx, tok, nil); err != nil {
			b.Fatal(err)
		}
	}
}
