package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/bastion-mcp/bastion/store"
)

// feedbackLine is one exported feedback event, a stable JSON shape
// independent of the store's Go types.
type feedbackLine struct {
	TenantID    string `json:"tenant_id"`
	EventID     string `json:"event_id"`
	ReviewID    string `json:"review_id"`
	FindingID   string `json:"finding_id"`
	Kind        string `json:"kind"`
	Verdict     string `json:"verdict"`
	Reason      string `json:"reason,omitempty"`
	PrincipalID string `json:"principal_id"`
	At          string `json:"at"` // RFC 3339, UTC, milliseconds
}

// ExportFeedback writes the feedback events of tenant (every tenant, in
// tenant order, when it is empty) to w as JSON lines, oldest first within a
// tenant, and returns how many it wrote.
func ExportFeedback(ctx context.Context, s store.FeedbackStore, tenant string, w io.Writer) (int, error) {
	tenants := []string{tenant}
	if tenant == "" {
		var err error
		if tenants, err = s.TenantsList(ctx); err != nil {
			return 0, fmt.Errorf("app: feedback export: %w", err)
		}
	}
	enc := json.NewEncoder(w)
	n := 0
	for _, t := range tenants {
		evs, err := s.FeedbackList(ctx, t)
		if err != nil {
			return n, fmt.Errorf("app: feedback export: %w", err)
		}
		for _, e := range evs {
			line := feedbackLine{TenantID: e.Tenant, EventID: e.ID, ReviewID: e.ReviewID, FindingID: e.FindingID, Kind: e.Kind,
				Verdict: string(e.Verdict), Reason: e.Reason, PrincipalID: e.PrincipalID, At: e.At.UTC().Format("2006-01-02T15:04:05.000Z07:00")}
			if err := enc.Encode(&line); err != nil {
				return n, fmt.Errorf("app: feedback export: %w", err)
			}
			n++
		}
	}
	return n, nil
}
