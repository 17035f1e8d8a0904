package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bastion-mcp/bastion/store"
)

var _ store.FeedbackStore = (*DB)(nil)

func (e executor) FeedbackEventInsert(ctx context.Context, ev *store.FeedbackEvent) error {
	_, err := e.exec(ctx, "feedback event", `INSERT INTO feedback_events
		(tenant_id, event_id, review_id, finding_id, kind, verdict, reason, principal_id, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		ev.Tenant, ev.ID, ev.ReviewID, ev.FindingID, ev.Kind, string(ev.Verdict), ev.Reason, ev.PrincipalID, ev.At.UTC())
	return err
}

func (e executor) FeedbackEventList(ctx context.Context, tenant string) ([]store.FeedbackEvent, error) {
	rows, err := e.tx.Query(ctx, `SELECT tenant_id, event_id, review_id, finding_id, kind, verdict, reason, principal_id, at
		FROM feedback_events WHERE tenant_id = $1 ORDER BY at, event_id`, tenant)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: feedback events: %w", err)
	}
	var (
		out []store.FeedbackEvent
		ev  store.FeedbackEvent
	)
	_, err = pgx.ForEachRow(rows, []any{&ev.Tenant, &ev.ID, &ev.ReviewID, &ev.FindingID, &ev.Kind, &ev.Verdict, &ev.Reason, &ev.PrincipalID, &ev.At}, func() error {
		ev.At = ev.At.UTC()
		out = append(out, ev)
		ev = store.FeedbackEvent{}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store/postgres: feedback events: %w", err)
	}
	return out, nil
}

func (e executor) FeedbackEventCountByKind(ctx context.Context, tenant string, v store.Verdict) (map[string]int, error) {
	rows, err := e.tx.Query(ctx, `SELECT kind, count(*) FROM feedback_events
		WHERE tenant_id = $1 AND verdict = $2 GROUP BY kind`, tenant, string(v))
	if err != nil {
		return nil, fmt.Errorf("store/postgres: feedback counts: %w", err)
	}
	var (
		out  = map[string]int{}
		kind string
		n    int
	)
	_, err = pgx.ForEachRow(rows, []any{&kind, &n}, func() error {
		out[kind] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store/postgres: feedback counts: %w", err)
	}
	return out, nil
}
