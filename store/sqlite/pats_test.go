package sqlite_test

import (
	"context"
	"testing"

	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/auth/authtest"
	"github.com/bastion-mcp/bastion/store/sqlite"
)

func TestPATStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	authtest.ExercisePATStore(ctx, t, func(t *testing.T) auth.PATStore {
		return openDB(t, sqlite.PathIn(t.TempDir()), sqlite.Options{})
	})
}
