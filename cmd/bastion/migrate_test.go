package main

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/internal/testenv"
	"github.com/bastion-mcp/bastion/store/postgres"
)

// TestMigrate is compose.yaml's one-shot step: before it the serving role
// alone is refused (migrations pending); `bastion migrate` as the owner
// migrates and grants; after it the serving role alone finds the schema
// current, and the password is never printed.
func TestMigrate(t *testing.T) {
	pg := testenv.StartPostgres(t)
	t.Parallel()
	ownerURL := pg.NewDatabase(t)
	const role, pass = "bastion_migrate_app", "migrate-secret-pass"
	if err := postgres.CreateAppRole(context.Background(), pg.AdminURL(), role, pass); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(ownerURL)
	u.User = url.UserPassword(role, pass)
	appURL := u.String()

	_, stderr, code := runCLI(t, "migrate", "--database-url", appURL)
	if code != 1 || !strings.Contains(stderr, "--migrate-url") {
		t.Errorf("serving role alone before migrating: exit %d, %q; want 1 naming --migrate-url", code, stderr)
	}
	for _, args := range [][]string{
		{"migrate", "--log-format", "json", "--database-url", appURL, "--migrate-url", ownerURL},
		{"migrate", "--database-url", appURL}, // now current: the serving role alone succeeds
		{"migrate", "--data-dir", t.TempDir()},
	} {
		_, stderr, code := runCLI(t, args...)
		if code != 0 || !strings.Contains(stderr, "at this binary's schema") {
			t.Errorf("%v: exit %d, %q", args[:3], code, stderr)
		}
		if strings.Contains(stderr, pass) {
			t.Errorf("%v printed the password", args[:3])
		}
	}
	if _, stderr, code := runCLI(t, "migrate", "--data-dir", t.TempDir(), "--database-url", appURL); code != 1 || !strings.Contains(stderr, "not both") {
		t.Errorf("--data-dir with --database-url: exit %d, %q", code, stderr)
	}
}
