// Package authtest holds the conformance suite every auth.PATStore must
// pass, and an in-memory store that passes it (for tests and examples, never
// for serving: it forgets everything on exit).
package authtest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/principal"
)

// ExercisePATStore runs the PATStore contract against stores made by
// newStore, one fresh, empty store per subtest. Stores that also implement
// auth.PATToucher have that checked too.
func ExercisePATStore(ctx context.Context, t *testing.T, newStore func(t *testing.T) auth.PATStore) {
	t.Helper()
	// Whole seconds in UTC survive every SQL timestamp type.
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	rec := func(tenant, id string) auth.PATRecord {
		return auth.PATRecord{
			ID:        id,
			Tenant:    tenant,
			Name:      "token " + id,
			Scopes:    []principal.Scope{principal.ReviewsRead, principal.ReviewsWrite},
			Hash:      sha256.Sum256([]byte(tenant + "/" + id)),
			CreatedAt: t0,
			ExpiresAt: t0.Add(24 * time.Hour),
		}
	}

	t.Run("PutGetByHash", func(t *testing.T) {
		s := newStore(t)
		want := rec("acme", "a1")
		if err := s.PATPut(ctx, want); err != nil {
			t.Fatal(err)
		}
		got, err := s.PATGetByHash(ctx, want.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if err := same(got, want); err != nil {
			t.Error(err)
		}
		never := auth.PATRecord{}
		never.Hash = sha256.Sum256([]byte("never"))
		if err := same(got, never); err == nil {
			t.Error("same() cannot tell records apart")
		}
	})
	t.Run("NoExpiry", func(t *testing.T) {
		s := newStore(t)
		want := rec("acme", "a1")
		want.ExpiresAt = time.Time{}
		if err := s.PATPut(ctx, want); err != nil {
			t.Fatal(err)
		}
		got, err := s.PATGetByHash(ctx, want.Hash)
		if err != nil || !got.ExpiresAt.IsZero() || !got.RevokedAt.IsZero() || !got.LastUsedAt.IsZero() {
			t.Errorf("zero times did not round-trip as zero: %v %v %v (%v)", got.ExpiresAt, got.RevokedAt, got.LastUsedAt, err)
		}
	})
	t.Run("GetUnknownHash", func(t *testing.T) {
		s := newStore(t)
		if _, err := s.PATGetByHash(ctx, sha256.Sum256([]byte("nope"))); !errors.Is(err, auth.ErrNotFound) {
			t.Errorf("PATGetByHash(unknown) = %v, want auth.ErrNotFound", err)
		}
	})
	t.Run("DuplicateHashRefused", func(t *testing.T) {
		s := newStore(t)
		a := rec("acme", "a1")
		if err := s.PATPut(ctx, a); err != nil {
			t.Fatal(err)
		}
		b := rec("acme", "a2")
		b.Hash = a.Hash
		if err := s.PATPut(ctx, b); err == nil {
			t.Error("PATPut accepted a second record with the same hash")
		}
	})
	t.Run("ListIsTenantScoped", func(t *testing.T) {
		s := newStore(t)
		for _, r := range []auth.PATRecord{rec("acme", "a1"), rec("acme", "a2"), rec("other", "o1")} {
			if err := s.PATPut(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.PATRevoke(ctx, "acme", "a2", t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		list, err := s.PATList(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range list {
			ids = append(ids, r.ID)
			if r.Tenant != "acme" {
				t.Errorf("PATList(acme) returned a record of %q", r.Tenant)
			}
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []string{"a1", "a2"}) {
			t.Errorf("PATList(acme) = %v, want [a1 a2] (revoked included)", ids)
		}
		if list, err := s.PATList(ctx, "nobody"); err != nil || len(list) != 0 {
			t.Errorf("PATList(nobody) = %d records, %v", len(list), err)
		}
	})
	t.Run("RevokeIsTenantScoped", func(t *testing.T) {
		s := newStore(t)
		r := rec("acme", "a1")
		if err := s.PATPut(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := s.PATRevoke(ctx, "other", "a1", t0); !errors.Is(err, auth.ErrNotFound) {
			t.Errorf("PATRevoke from another tenant = %v, want auth.ErrNotFound", err)
		}
		if err := s.PATRevoke(ctx, "acme", "zz", t0); !errors.Is(err, auth.ErrNotFound) {
			t.Errorf("PATRevoke(unknown id) = %v, want auth.ErrNotFound", err)
		}
		if got, _ := s.PATGetByHash(ctx, r.Hash); !got.RevokedAt.IsZero() {
			t.Fatal("a refused revoke revoked the token")
		}
		at := t0.Add(2 * time.Hour)
		if err := s.PATRevoke(ctx, "acme", "a1", at); err != nil {
			t.Fatal(err)
		}
		got, err := s.PATGetByHash(ctx, r.Hash)
		if err != nil || !got.RevokedAt.Equal(at) {
			t.Errorf("after revoke: RevokedAt = %v, %v; want %v", got.RevokedAt, err, at)
		}
	})
	t.Run("Touch", func(t *testing.T) {
		s := newStore(t)
		tt, ok := s.(auth.PATToucher)
		if !ok {
			t.Skip("store does not implement auth.PATToucher")
		}
		r := rec("acme", "a1")
		if err := s.PATPut(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := tt.PATTouch(ctx, "other", "a1", t0); !errors.Is(err, auth.ErrNotFound) {
			t.Errorf("PATTouch from another tenant = %v, want auth.ErrNotFound", err)
		}
		at := t0.Add(3 * time.Hour)
		if err := tt.PATTouch(ctx, "acme", "a1", at); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.PATGetByHash(ctx, r.Hash); !got.LastUsedAt.Equal(at) {
			t.Errorf("LastUsedAt = %v, want %v", got.LastUsedAt, at)
		}
	})
}

// same compares two records field by field (PATRecord is incomparable).
func same(got, want auth.PATRecord) error {
	switch {
	case got.ID != want.ID, got.Tenant != want.Tenant, got.Name != want.Name:
		return fmt.Errorf("identity = %s/%s %q, want %s/%s %q", got.Tenant, got.ID, got.Name, want.Tenant, want.ID, want.Name)
	case !slices.Equal(got.Scopes, want.Scopes):
		return fmt.Errorf("scopes = %v, want %v", got.Scopes, want.Scopes)
	case got.Hash != want.Hash:
		return errors.New("hash differs")
	case !got.CreatedAt.Equal(want.CreatedAt), !got.ExpiresAt.Equal(want.ExpiresAt),
		!got.RevokedAt.Equal(want.RevokedAt), !got.LastUsedAt.Equal(want.LastUsedAt):
		return fmt.Errorf("times = %v %v %v %v, want %v %v %v %v",
			got.CreatedAt, got.ExpiresAt, got.RevokedAt, got.LastUsedAt,
			want.CreatedAt, want.ExpiresAt, want.RevokedAt, want.LastUsedAt)
	}
	return nil
}

// MemPATStore is an in-memory auth.PATStore and auth.PATToucher. The zero
// value is ready to use; it is safe for concurrent use.
type MemPATStore struct {
	mu   sync.Mutex // guards recs
	recs []auth.PATRecord
}

// PATPut implements auth.PATStore.
func (m *MemPATStore) PATPut(_ context.Context, rec auth.PATRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.recs {
		if r.Hash == rec.Hash || (r.Tenant == rec.Tenant && r.ID == rec.ID) {
			return errors.New("authtest: duplicate personal access token")
		}
	}
	rec.Scopes = slices.Clone(rec.Scopes)
	m.recs = append(m.recs, rec)
	return nil
}

// PATGetByHash implements auth.PATStore.
func (m *MemPATStore) PATGetByHash(_ context.Context, hash [32]byte) (auth.PATRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.recs {
		if r.Hash == hash {
			r.Scopes = slices.Clone(r.Scopes)
			return r, nil
		}
	}
	return auth.PATRecord{}, auth.ErrNotFound
}

// PATList implements auth.PATStore.
func (m *MemPATStore) PATList(_ context.Context, tenant string) ([]auth.PATRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []auth.PATRecord
	for _, r := range m.recs {
		if r.Tenant == tenant {
			r.Scopes = slices.Clone(r.Scopes)
			out = append(out, r)
		}
	}
	return out, nil
}

// PATRevoke implements auth.PATStore.
func (m *MemPATStore) PATRevoke(_ context.Context, tenant, id string, at time.Time) error {
	return m.update(tenant, id, func(r *auth.PATRecord) { r.RevokedAt = at })
}

// PATTouch implements auth.PATToucher.
func (m *MemPATStore) PATTouch(_ context.Context, tenant, id string, at time.Time) error {
	return m.update(tenant, id, func(r *auth.PATRecord) { r.LastUsedAt = at })
}

func (m *MemPATStore) update(tenant, id string, f func(*auth.PATRecord)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.recs {
		if m.recs[i].Tenant == tenant && m.recs[i].ID == id {
			f(&m.recs[i])
			return nil
		}
	}
	return auth.ErrNotFound
}
