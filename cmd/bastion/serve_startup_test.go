package main

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/bastion-mcp/bastion/internal/testenv"
	"github.com/bastion-mcp/bastion/store/postgres"
)

// wantFailure checks a failed start-up printed its cause and its fix, and
// nothing of a dev token.
func wantFailure(t *testing.T, name string, st int, errOut string, want ...string) {
	t.Helper()
	if st != 1 {
		t.Errorf("%s: exit %d, want 1; stderr %q", name, st, errOut)
	}
	for _, w := range want {
		if !strings.Contains(errOut, w) {
			t.Errorf("%s: stderr lacks %q:\n%s", name, w, errOut)
		}
	}
	if strings.Contains(errOut, "BASTION_TOKEN") {
		t.Errorf("%s: a dev token was minted before the failure:\n%s", name, errOut)
	}
}

// TestServeStartupPortInUse: a port in use is found before the store is
// opened or a dev token minted, and the error names the address and the
// flag that fixes it.
func TestServeStartupPortInUse(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	for _, tc := range []struct{ flag, other string }{{"--addr", "--admin-addr"}, {"--admin-addr", "--addr"}} {
		dataDir := filepath.Join(t.TempDir(), "data")
		_, errOut, st := runCLI(t, "serve", "--dev", tc.flag, addr, tc.other, "127.0.0.1:0", "--data-dir", dataDir)
		wantFailure(t, tc.flag, st, errOut, "cannot listen on "+addr, "pass "+tc.flag, "address already in use", "next_action: none")
		if strings.Contains(errOut, "next_action: wait") {
			t.Errorf("%s in use says wait: %s", tc.flag, errOut)
		}
		if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
			t.Errorf("%s in use: the store was opened anyway (%v)", tc.flag, err)
		}
	}
}

// TestServeStartupDataDir: a read-only or full data directory is named
// with the OS's error and the fix.
func TestServeStartupDataDir(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		dir  func(testing.TB) string
		want []string
	}{
		{"ReadOnly", testenv.ReadOnlyDir, []string{"is not writable", "pass --data-dir", "store/sqlite"}},
		{"Full", testenv.FullDir, []string{"file system is full", "free space", "no space left on device"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := tc.dir(t)
			_, errOut, st := runCLI(t, "serve", "--dev", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--data-dir", dir)
			wantFailure(t, tc.name, st, errOut, append([]string{"cannot open the store in " + dir, "cause: "}, tc.want...)...)
			if tc.name == "ReadOnly" && os.Geteuid() == 0 && !strings.Contains(errOut, "read-only file system") {
				t.Errorf("the cause is not the OS's: %s", errOut)
			}
		})
	}
}

// TestServeStartupInsecureJWKS: a plain-http JWKS URL is refused at start,
// with --jwks-allow-private too, before anything is opened.
func TestServeStartupInsecureJWKS(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	_, errOut, st := runCLI(t, "serve", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--data-dir", dataDir,
		"--resource", "https://bastion.example.test/mcp", "--issuer", "http://127.0.0.1:1", "--jwks-url", "http://127.0.0.1:1/jwks", "--jwks-allow-private")
	wantFailure(t, "http JWKS", st, errOut, "--jwks-url must be an https URL", "--jwks-allow-private too")
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("the store was opened anyway (%v)", err)
	}
}

// TestStartupPostgresServingRole: a serving role without CREATE on the
// schema starts without --migrate-url once the owner has migrated (it only
// reads the migration state), and on a database that is behind it is
// refused with the pending migrations and --migrate-url named; the
// password never appears.
func TestStartupPostgresServingRole(t *testing.T) {
	pg := testenv.StartPostgres(t)
	t.Parallel()
	ctx := context.Background()
	ownerURL := pg.NewDatabase(t)
	const role, pass = "bastion_e2e_noddl", "noddl-secret-pass"
	if err := postgres.CreateAppRole(ctx, pg.AdminURL(), role, pass); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, ownerURL)
	if err != nil {
		t.Fatal(err)
	}
	// PostgreSQL < 15 lets everyone create in public; an operator closes it.
	_, err = conn.Exec(ctx, `REVOKE CREATE ON SCHEMA public FROM PUBLIC`)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(ownerURL)
	u.User = url.UserPassword(role, pass)
	appURL := u.String()

	_, errOut, st := runCLI(t, "serve", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--database-url", appURL)
	wantFailure(t, "pending", st, errOut, "behind this binary", "--migrate-url", "0001_jobs")
	if strings.Contains(errOut, pass) {
		t.Errorf("the password is printed: %s", errOut)
	}

	// The owner migrates once; then the serving role alone opens the store.
	if _, errOut, st := runCLI(t, "token", "list", "--tenant", "dev", "--database-url", appURL, "--migrate-url", ownerURL); st != 0 {
		t.Fatalf("migrating as the owner: %d %s", st, errOut)
	}
	out, errOut, st := runCLI(t, "token", "create", "--tenant", "dev", "--scopes", "reviews:read", "--expires", "1d", "--database-url", appURL)
	if st != 0 || !strings.HasPrefix(strings.TrimSpace(out), "bst_") {
		t.Fatalf("serving role without --migrate-url on a migrated database: %d %q %q", st, out, errOut)
	}
}

// TestReportFailureRedacts: a cause carrying a database password is
// printed with the password blanked, in each of its spellings.
func TestReportFailureRedacts(t *testing.T) {
	t.Parallel()
	pass := "p@ss word/1"
	dsn := "postgres://app:" + url.PathEscape(pass) + "@127.0.0.1:1/db"
	var b strings.Builder
	reportFailure(&b, "bastion serve", &os.PathError{Op: "open", Path: dsn + " " + pass + " " + url.QueryEscape(pass), Err: os.ErrNotExist}, "x", postgres.Passwords(dsn, "", "::bad")...)
	if got := b.String(); strings.Contains(got, pass) || strings.Contains(got, url.PathEscape(pass)) || strings.Contains(got, url.QueryEscape(pass)) || !strings.Contains(got, "[redacted]") {
		t.Errorf("reportFailure printed %q", got)
	}
}
