-- Feedback events: the team's verdict (accepted, dismissed, disputed) on one
-- finding of a completed review, append-only, one row per event, under the
-- same forced tenant policy as every table. kind is the finding's kind,
-- copied so counts by kind outlive the review's purge.
CREATE TABLE feedback_events (
    tenant_id    text        NOT NULL CHECK (tenant_id <> ''),
    event_id     text        NOT NULL,
    review_id    text        NOT NULL,
    finding_id   text        NOT NULL,
    kind         text        NOT NULL,
    verdict      text        NOT NULL CHECK (verdict IN ('accepted', 'dismissed', 'disputed')),
    reason       text        NOT NULL DEFAULT '',
    principal_id text        NOT NULL,
    at           timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, event_id)
);
CREATE INDEX feedback_events_verdict ON feedback_events (tenant_id, verdict, kind);
ALTER TABLE feedback_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE feedback_events FORCE ROW LEVEL SECURITY;
CREATE POLICY feedback_events_tenant ON feedback_events
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
