-- Personal access tokens, one row per tenant and token id. Only the SHA-256
-- of a token is stored; it is unique across tenants because the hash is what
-- names the tenant when a token is presented. Times are unix milliseconds;
-- 0 means unset.
CREATE TABLE pats (
    tenant_id    TEXT    NOT NULL,
    pat_id       TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    scopes       TEXT    NOT NULL, -- space-separated, in the record's order
    hash         BLOB    NOT NULL UNIQUE CHECK (length(hash) = 32),
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL DEFAULT 0,
    revoked_at   INTEGER NOT NULL DEFAULT 0,
    last_used_at INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, pat_id)
);
