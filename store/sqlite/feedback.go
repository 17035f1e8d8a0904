package sqlite

import (
	"context"
	"fmt"

	"github.com/bastion-mcp/bastion/store"
)

var _ store.FeedbackStore = (*DB)(nil)

func (e executor) FeedbackEventInsert(ctx context.Context, ev *store.FeedbackEvent) error {
	_, err := e.exec(ctx, "feedback event", `INSERT INTO feedback_events
		(tenant_id, event_id, review_id, finding_id, kind, verdict, reason, principal_id, at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		ev.Tenant, ev.ID, ev.ReviewID, ev.FindingID, ev.Kind, string(ev.Verdict), ev.Reason, ev.PrincipalID, ms(ev.At))
	return err
}

func (e executor) FeedbackEventList(ctx context.Context, tenant string) ([]store.FeedbackEvent, error) {
	rows, err := e.q.QueryContext(ctx, `SELECT tenant_id, event_id, review_id, finding_id, kind, verdict, reason, principal_id, at
		FROM feedback_events WHERE tenant_id = ? ORDER BY at, event_id`, tenant)
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: feedback events: %w", err)
	}
	defer rows.Close()
	var out []store.FeedbackEvent
	for rows.Next() {
		var (
			ev store.FeedbackEvent
			at int64
		)
		if err := rows.Scan(&ev.Tenant, &ev.ID, &ev.ReviewID, &ev.FindingID, &ev.Kind, &ev.Verdict, &ev.Reason, &ev.PrincipalID, &at); err != nil {
			return nil, fmt.Errorf("store/sqlite: feedback events: %w", err)
		}
		ev.At = fromMS(at)
		out = append(out, ev)
	}
	return out, rows.Err()
}

func (e executor) FeedbackEventCountByKind(ctx context.Context, tenant string, v store.Verdict) (map[string]int, error) {
	rows, err := e.q.QueryContext(ctx, `SELECT kind, count(*) FROM feedback_events
		WHERE tenant_id = ? AND verdict = ? GROUP BY kind`, tenant, string(v))
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: feedback counts: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var (
			kind string
			n    int
		)
		if err := rows.Scan(&kind, &n); err != nil {
			return nil, fmt.Errorf("store/sqlite: feedback counts: %w", err)
		}
		out[kind] = n
	}
	return out, rows.Err()
}
