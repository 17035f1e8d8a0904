package authtest

import (
	"context"
	"testing"

	"github.com/bastion-mcp/bastion/auth"
)

func TestMemPATStore(t *testing.T) {
	t.Parallel()
	ExercisePATStore(context.Background(), t, func(*testing.T) auth.PATStore { return new(MemPATStore) })
}
