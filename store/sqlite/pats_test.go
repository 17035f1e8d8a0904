package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/auth/authtest"
	"github.com/bastion-mcp/bastion/store/sqlite"
)

func TestPATStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	authtest.ExercisePATStore(ctx, t, func(t *testing.T) auth.PATStore {
		db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), sqlite.FileName), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}
