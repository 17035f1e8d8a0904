-- Verified preview targets of the targets registry, one row per tenant and
-- host. Times are unix milliseconds; 0 means unset.
CREATE TABLE targets (
    tenant_id   TEXT    NOT NULL,
    host        TEXT    NOT NULL,
    token       TEXT    NOT NULL,
    method      TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    verified_at INTEGER NOT NULL DEFAULT 0,
    expires_at  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, host)
);
