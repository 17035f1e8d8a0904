package rest

import (
	"time"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/targets"
)

// targetAddBody is POST /targets' body.
type targetAddBody struct {
	Host string `json:"host"`
}

// Target states on the wire.
const (
	targetPending  = "pending"  // challenge issued, not yet proved
	targetVerified = "verified" // proof holds
	targetExpired  = "expired"  // the challenge or the proof expired
)

// targetJSON is a target on the wire. Challenge is set until the host is
// verified: it is what to publish.
type targetJSON struct {
	Host       string         `json:"host"`
	Status     string         `json:"status"`
	Method     string         `json:"method,omitempty"`
	CreatedAt  time.Time      `json:"created_at"`
	VerifiedAt *time.Time     `json:"verified_at,omitempty"`
	ExpiresAt  time.Time      `json:"expires_at"`
	Challenge  *challengeJSON `json:"challenge,omitempty"`
}

// challengeJSON is targets.Challenge on the wire.
type challengeJSON struct {
	Host         string    `json:"host"`
	Token        string    `json:"token"`
	TXTName      string    `json:"txt_name"`
	TXTValue     string    `json:"txt_value"`
	WellKnownURL string    `json:"well_known_url"`
	ExpiresAt    time.Time `json:"expires_at"`
}

type targetList struct {
	Targets []targetJSON `json:"targets"`
}

func renderChallenge(c targets.Challenge) *challengeJSON {
	return &challengeJSON{Host: c.Host, Token: c.Token, TXTName: c.TXTName, TXTValue: c.TXTValue, WellKnownURL: c.WellKnownURL, ExpiresAt: c.ExpiresAt}
}

func renderTarget(t targets.Target, now time.Time) targetJSON {
	out := targetJSON{Host: t.Host, Method: t.Method, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt}
	switch {
	case t.Verified(now):
		out.Status = targetVerified
	case t.VerifiedAt.IsZero() && now.Before(t.ExpiresAt):
		out.Status = targetPending
	default:
		out.Status = targetExpired
	}
	if !t.VerifiedAt.IsZero() {
		v := t.VerifiedAt
		out.VerifiedAt = &v
	}
	if out.Status == targetPending {
		out.Challenge = renderChallenge(targets.Challenge{
			Host: t.Host, Token: t.Token, TXTName: targets.TXTPrefix + t.Host, TXTValue: targets.TXTValuePre + t.Token,
			WellKnownURL: "https://" + t.Host + targets.WellKnownPath, ExpiresAt: t.ExpiresAt,
		})
	}
	return out
}

func (h *handler) targets() (Targets, error) {
	if h.tg == nil {
		return nil, fault.New(fault.Unavailable, "the targets registry is not configured on this server").WithNext(fault.ContactSupport)
	}
	return h.tg, nil
}

// listTargets is GET /targets.
func (h *handler) listTargets(c *call) (any, error) {
	tg, err := h.targets()
	if err != nil {
		return nil, err
	}
	if err := decodeJSON(c.body, &struct{}{}); err != nil {
		return nil, err
	}
	if len(c.r.URL.Query()) > 0 {
		return nil, fault.New(fault.InvalidArgument, "GET /targets takes no query parameters")
	}
	ts, err := tg.List(c.r.Context(), c.p)
	if err != nil {
		return nil, err
	}
	now := h.opts.Now()
	out := targetList{Targets: make([]targetJSON, 0, len(ts))}
	for _, t := range ts {
		out.Targets = append(out.Targets, renderTarget(t, now))
	}
	return out, nil
}

// addTarget is POST /targets.
func (h *handler) addTarget(c *call) (any, error) {
	tg, err := h.targets()
	if err != nil {
		return nil, err
	}
	var in targetAddBody
	if err := decodeJSON(c.body, &in); err != nil {
		return nil, err
	}
	ch, err := tg.Add(c.r.Context(), c.p, in.Host)
	if err != nil {
		return nil, err
	}
	return renderChallenge(ch), nil
}

// verifyTarget is POST /targets/{host}/verify.
func (h *handler) verifyTarget(c *call) (any, error) {
	tg, err := h.targets()
	if err != nil {
		return nil, err
	}
	if err := decodeJSON(c.body, &struct{}{}); err != nil {
		return nil, err
	}
	t, err := tg.Verify(c.r.Context(), c.p, c.r.PathValue("host"))
	if err != nil {
		return nil, err
	}
	return renderTarget(t, h.opts.Now()), nil
}

// removeTarget is DELETE /targets/{host}.
func (h *handler) removeTarget(c *call) (any, error) {
	tg, err := h.targets()
	if err != nil {
		return nil, err
	}
	if err := decodeJSON(c.body, &struct{}{}); err != nil {
		return nil, err
	}
	if err := tg.Remove(c.r.Context(), c.p, c.r.PathValue("host")); err != nil {
		return nil, err
	}
	return nil, nil
}
