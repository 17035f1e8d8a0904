package testenv

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestStartPostgres(t *testing.T) {
	pg := StartPostgres(t)
	url := pg.NewDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
}
