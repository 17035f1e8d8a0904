-- Feedback events: the team's verdict (accepted, dismissed, disputed) on one
-- finding of a completed review, append-only, one row per event. kind is the
-- finding's kind, copied so counts by kind outlive the review's purge. Times
-- are unix milliseconds.
CREATE TABLE feedback_events (
    tenant_id    TEXT    NOT NULL,
    event_id     TEXT    NOT NULL,
    review_id    TEXT    NOT NULL,
    finding_id   TEXT    NOT NULL,
    kind         TEXT    NOT NULL,
    verdict      TEXT    NOT NULL CHECK (verdict IN ('accepted', 'dismissed', 'disputed')),
    reason       TEXT    NOT NULL DEFAULT '',
    principal_id TEXT    NOT NULL,
    at           INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, event_id)
);
CREATE INDEX feedback_events_verdict ON feedback_events (tenant_id, verdict, kind);
