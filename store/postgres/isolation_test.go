package postgres_test

import (
	"context"
	"crypto/sha256"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/store"
	"github.com/bastion-mcp/bastion/targets"
)

// tenantTables are bastion's tenant-data tables: every one must show a bound
// tenant only its own rows and an unbound session none.
var tenantTables = []string{"jobs", "tenant_balances", "recheck_events", "evidence", "targets", "pats", "feedback_events"}

// seed writes a row for tenant into every bastion table through the store.
func seed(t *testing.T, s interface {
	store.Store
	store.PATStore
	store.FeedbackStore
}, tenant string) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	job := func(id, kind string) store.Job {
		return store.Job{Tenant: tenant, ID: id, PrincipalID: "p1", Kind: store.JobKind(kind), ClientRequestID: "key-" + id,
			Fingerprint: "fp", Request: []byte(`{}`), ReviewID: "rev_" + tenant, Host: "a.example", TargetFingerprint: "tfp",
			UnitsReserved: 1, CreatedAt: t0, ExpiresAt: t0.Add(24 * time.Hour)}
	}
	if _, err := s.JobCreate(ctx, &store.JobCreateParams{Job: job("job_rev", "review"), DefaultBalance: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.JobStart(ctx, &store.JobStartParams{Tenant: tenant, ID: "job_rev", Attempt: 1, At: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.JobFinish(ctx, &store.JobFinishParams{Tenant: tenant, ID: "job_rev", State: store.Completed, Result: []byte(`{}`),
		Evidence: []store.Evidence{{ID: "ev_1", MIMEType: "image/png", Data: []byte(tenant)}}, At: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.JobCreate(ctx, &store.JobCreateParams{Job: job("job_rck", "recheck"), DefaultBalance: 10,
		Recheck: &store.RecheckAdmission{FindingIDs: []string{"f_1"}, Since: t0.Add(-time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.TargetPut(ctx, targets.Target{Tenant: tenant, Host: "a.example", Token: "tok-" + tenant, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.PATPut(ctx, auth.PATRecord{ID: "pat1", Tenant: tenant, Name: "n", Scopes: []principal.Scope{principal.ReviewsRead},
		Hash: sha256.Sum256([]byte(tenant)), CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.FeedbackRecord(ctx, &store.FeedbackEvent{Tenant: tenant, ID: "fb_1", ReviewID: "rev_" + tenant, FindingID: "f_1",
		Kind: "contrast", Verdict: store.Dismissed, PrincipalID: "p1", At: t0}); err != nil {
		t.Fatal(err)
	}
}

// testTenantIsolation checks row-level security with raw SQL as the serving
// role, bypassing the store's own WHERE clauses.
func testTenantIsolation(t *testing.T, c *cluster) {
	ctx := context.Background()
	d := c.newDatabase(t)
	db := d.open(t)
	defer db.Close()
	seed(t, db, "acme")
	seed(t, db, "bolt")

	conn, err := pgx.Connect(ctx, d.app)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// inTx runs fn in a transaction bound to tenant ("" leaves it unbound)
	// and rolls it back.
	inTx := func(t *testing.T, tenant string, fn func(tx pgx.Tx)) {
		t.Helper()
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if tenant != "" {
			if _, err := tx.Exec(ctx, `SELECT set_config('app.tenant_id', $1, true)`, tenant); err != nil {
				t.Fatal(err)
			}
		}
		fn(tx)
	}

	t.Run("EveryTableForced", func(t *testing.T) {
		rows, err := conn.Query(ctx, `SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity FROM pg_class c
			WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
			AND c.relname NOT LIKE 'river\_%' AND c.relname <> 'bastion_schema_migrations' ORDER BY c.relname`)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		var (
			name            string
			enabled, forced bool
		)
		if _, err := pgx.ForEachRow(rows, []any{&name, &enabled, &forced}, func() error {
			names = append(names, name)
			if !enabled || !forced {
				t.Errorf("table %s: row-level security enabled=%v forced=%v", name, enabled, forced)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		want := append(slices.Clone(tenantTables), "tenants", "pat_hashes")
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Fatalf("bastion tables = %v, want %v (a new table needs a policy and a place in these tests)", names, want)
		}
	})

	t.Run("BoundSeesOnlyItsRows", func(t *testing.T) {
		for _, tenant := range []string{"acme", "bolt"} {
			inTx(t, tenant, func(tx pgx.Tx) {
				for _, table := range tenantTables {
					rows, err := tx.Query(ctx, `SELECT tenant_id FROM `+table)
					if err != nil {
						t.Fatalf("%s: %v", table, err)
					}
					got, err := pgx.CollectRows(rows, pgx.RowTo[string])
					if err != nil {
						t.Fatal(err)
					}
					if len(got) == 0 {
						t.Errorf("%s as %s: no rows (the seed wrote some)", table, tenant)
					}
					for _, g := range got {
						if g != tenant {
							t.Errorf("%s as %s: saw a row of %s", table, tenant, g)
						}
					}
				}
			})
		}
	})

	t.Run("UnboundSeesNothing", func(t *testing.T) {
		inTx(t, "", func(tx pgx.Tx) {
			for _, table := range tenantTables {
				var n int
				if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil || n != 0 {
					t.Errorf("%s unbound: %d rows, %v; want 0", table, n, err)
				}
			}
		})
		// After a bound transaction the pooled session's setting is '' — still nothing.
		inTx(t, "acme", func(pgx.Tx) {})
		inTx(t, "", func(tx pgx.Tx) {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM jobs`).Scan(&n); err != nil || n != 0 {
				t.Errorf("jobs after a bound transaction ended: %d rows, %v", n, err)
			}
		})
	})

	t.Run("WriteOfAnotherTenantRefused", func(t *testing.T) {
		// Copy one of acme's own visible rows, relabelled bolt: WITH CHECK refuses it.
		for _, table := range append(slices.Clone(tenantTables), "tenants") {
			inTx(t, "acme", func(tx pgx.Tx) {
				_, err := tx.Exec(ctx, `INSERT INTO `+table+` SELECT (jsonb_populate_record(NULL::`+table+`,
					to_jsonb(x) || '{"tenant_id": "bolt"}')).* FROM `+table+` x LIMIT 1`)
				if pgCode(err) != "42501" || !strings.Contains(err.Error(), "row-level security") {
					t.Errorf("INSERT of a bolt row into %s as acme: err = %v, want a row-level security violation", table, err)
				}
			})
			if table == "tenants" {
				continue // the directory grants no UPDATE or DELETE
			}
			inTx(t, "acme", func(tx pgx.Tx) {
				_, err := tx.Exec(ctx, `UPDATE `+table+` SET tenant_id = 'bolt'`)
				if pgCode(err) != "42501" {
					t.Errorf("UPDATE moving %s rows to bolt: err = %v, want a row-level security violation", table, err)
				}
			})
			inTx(t, "acme", func(tx pgx.Tx) {
				tag, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE tenant_id = 'bolt'`)
				if err != nil || tag.RowsAffected() != 0 {
					t.Errorf("DELETE of bolt's %s rows as acme: %d rows, %v", table, tag.RowsAffected(), err)
				}
			})
		}
		inTx(t, "acme", func(tx pgx.Tx) {
			h := sha256.Sum256([]byte("forged"))
			_, err := tx.Exec(ctx, `INSERT INTO pat_hashes (hash, tenant_id, pat_id) VALUES ($1, 'bolt', 'pat1')`, h[:])
			if pgCode(err) != "42501" {
				t.Errorf("INSERT of a bolt token hash as acme: err = %v", err)
			}
		})
	})

	t.Run("TokenHashesOnlyThroughLookup", func(t *testing.T) {
		inTx(t, "acme", func(tx pgx.Tx) {
			_, err := tx.Exec(ctx, `SELECT * FROM pat_hashes`)
			if pgCode(err) != "42501" {
				t.Errorf("SELECT pat_hashes as the serving role: err = %v, want permission denied", err)
			}
		})
		h := sha256.Sum256([]byte("bolt"))
		var tenant, id string
		if err := conn.QueryRow(ctx, `SELECT tenant_id, pat_id FROM bastion_pat_lookup($1)`, h[:]).Scan(&tenant, &id); err != nil ||
			tenant != "bolt" || id != "pat1" {
			t.Fatalf("lookup = %s/%s, %v", tenant, id, err)
		}
		rec, err := db.PATGetByHash(ctx, h)
		if err != nil || rec.Tenant != "bolt" || rec.ID != "pat1" {
			t.Fatalf("PATGetByHash = %+v, %v", rec, err)
		}
	})

	t.Run("DirectoryListsIDsOnly", func(t *testing.T) {
		rows, err := conn.Query(ctx, `SELECT tenant_id FROM tenants ORDER BY tenant_id`)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || !slices.Equal(got, []string{"acme", "bolt"}) {
			t.Fatalf("tenants = %v, %v", got, err)
		}
	})

	t.Run("ForcedBindsTheOwner", func(t *testing.T) {
		// Without FORCE the owner would see every row; with it, none unbound.
		oc, err := pgx.Connect(ctx, d.owner)
		if err != nil {
			t.Fatal(err)
		}
		defer oc.Close(ctx)
		for _, table := range tenantTables {
			var n int
			if err := oc.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil || n != 0 {
				t.Errorf("%s as the unbound owner: %d rows, %v; want 0", table, n, err)
			}
		}
	})
}
