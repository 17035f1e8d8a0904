-- Review and recheck jobs, the unit ledger, recheck limiter events and
-- evidence. Every table is keyed by tenant first so the Postgres port can put
-- row-level security on tenant_id unchanged. Times are unix milliseconds.
CREATE TABLE jobs (
    tenant_id           TEXT    NOT NULL,
    job_id              TEXT    NOT NULL,
    principal_id        TEXT    NOT NULL,
    kind                TEXT    NOT NULL CHECK (kind IN ('review', 'recheck')),
    client_request_id   TEXT    NOT NULL,
    fingerprint         TEXT    NOT NULL,
    state               TEXT    NOT NULL CHECK (state IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
    stage               TEXT    NOT NULL DEFAULT '',
    request             BLOB    NOT NULL,
    review_id           TEXT    NOT NULL,
    host                TEXT    NOT NULL,
    target_fingerprint  TEXT    NOT NULL,
    result              BLOB,
    error_code          TEXT    NOT NULL DEFAULT '',
    error_message       TEXT    NOT NULL DEFAULT '',
    units_reserved      INTEGER NOT NULL,
    units_consumed      INTEGER NOT NULL DEFAULT 0,
    attempt             INTEGER NOT NULL DEFAULT 0,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    started_at          INTEGER NOT NULL DEFAULT 0,
    completed_at        INTEGER NOT NULL DEFAULT 0,
    expires_at          INTEGER NOT NULL,
    cancel_requested_at INTEGER NOT NULL DEFAULT 0,
    cancel_reason       TEXT    NOT NULL DEFAULT '',
    cancel_decision     TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, job_id),
    UNIQUE (tenant_id, principal_id, client_request_id)
);
CREATE INDEX jobs_review ON jobs (tenant_id, review_id, kind);
CREATE INDEX jobs_expiry ON jobs (expires_at);
CREATE INDEX jobs_running ON jobs (state, started_at);

CREATE TABLE tenant_balances (
    tenant_id  TEXT    NOT NULL PRIMARY KEY,
    balance    INTEGER NOT NULL CHECK (balance >= 0),
    updated_at INTEGER NOT NULL
);

CREATE TABLE recheck_events (
    tenant_id    TEXT    NOT NULL,
    job_id       TEXT    NOT NULL,
    review_id    TEXT    NOT NULL,
    principal_id TEXT    NOT NULL,
    finding_ids  TEXT    NOT NULL, -- JSON array
    units        INTEGER NOT NULL,
    at           INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, job_id)
);
CREATE INDEX recheck_events_review ON recheck_events (tenant_id, review_id, at);
CREATE INDEX recheck_events_principal ON recheck_events (tenant_id, principal_id, at);

CREATE TABLE evidence (
    tenant_id   TEXT    NOT NULL,
    job_id      TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    evidence_id TEXT    NOT NULL,
    mime_type   TEXT    NOT NULL,
    data        BLOB    NOT NULL,
    PRIMARY KEY (tenant_id, job_id, seq)
);
