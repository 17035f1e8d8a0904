-- Review and recheck jobs, the tenant directory, the unit ledger, recheck
-- limiter events and evidence. Every table is keyed by tenant, with row-level
-- security enabled AND forced (so the table owner is bound too) and one policy
-- per table: a row is visible and writable only while the transaction's
-- app.tenant_id names its tenant. Outside such a transaction
-- current_setting('app.tenant_id', true) is NULL or '', which matches no row
-- (tenant_id <> '' is checked on every table).
CREATE TABLE tenants (
    tenant_id  text        NOT NULL PRIMARY KEY CHECK (tenant_id <> ''),
    created_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenants FORCE ROW LEVEL SECURITY;
-- The directory lists tenant ids (no data) to everyone who may read it: the
-- cross-tenant sweeper walks it and binds each tenant in turn. A tenant can
-- only register itself.
CREATE POLICY tenants_list ON tenants FOR SELECT USING (true);
CREATE POLICY tenants_register ON tenants FOR INSERT
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));

CREATE TABLE jobs (
    tenant_id           text        NOT NULL CHECK (tenant_id <> ''),
    job_id              text        NOT NULL,
    principal_id        text        NOT NULL,
    kind                text        NOT NULL CHECK (kind IN ('review', 'recheck')),
    client_request_id   text        NOT NULL,
    fingerprint         text        NOT NULL,
    state               text        NOT NULL CHECK (state IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
    stage               text        NOT NULL DEFAULT '',
    request             bytea       NOT NULL,
    review_id           text        NOT NULL,
    host                text        NOT NULL,
    target_fingerprint  text        NOT NULL,
    result              bytea,
    error_code          text        NOT NULL DEFAULT '',
    error_message       text        NOT NULL DEFAULT '',
    units_reserved      bigint      NOT NULL,
    units_consumed      bigint      NOT NULL DEFAULT 0,
    attempt             integer     NOT NULL DEFAULT 0,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    started_at          timestamptz,
    completed_at        timestamptz,
    expires_at          timestamptz NOT NULL,
    cancel_requested_at timestamptz,
    cancel_reason       text        NOT NULL DEFAULT '',
    cancel_decision     text        NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, job_id),
    UNIQUE (tenant_id, principal_id, client_request_id)
);
CREATE INDEX jobs_review ON jobs (tenant_id, review_id, kind);
CREATE INDEX jobs_expiry ON jobs (tenant_id, expires_at);
CREATE INDEX jobs_running ON jobs (tenant_id, state, started_at);
ALTER TABLE jobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE jobs FORCE ROW LEVEL SECURITY;
CREATE POLICY jobs_tenant ON jobs
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));

CREATE TABLE tenant_balances (
    tenant_id  text        NOT NULL PRIMARY KEY CHECK (tenant_id <> ''),
    balance    bigint      NOT NULL CHECK (balance >= 0),
    updated_at timestamptz NOT NULL
);
ALTER TABLE tenant_balances ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_balances FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_balances_tenant ON tenant_balances
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));

CREATE TABLE recheck_events (
    tenant_id    text        NOT NULL CHECK (tenant_id <> ''),
    job_id       text        NOT NULL,
    review_id    text        NOT NULL,
    principal_id text        NOT NULL,
    finding_ids  text[]      NOT NULL,
    units        bigint      NOT NULL,
    at           timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, job_id)
);
CREATE INDEX recheck_events_review ON recheck_events (tenant_id, review_id, at);
CREATE INDEX recheck_events_principal ON recheck_events (tenant_id, principal_id, at);
ALTER TABLE recheck_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE recheck_events FORCE ROW LEVEL SECURITY;
CREATE POLICY recheck_events_tenant ON recheck_events
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));

CREATE TABLE evidence (
    tenant_id   text    NOT NULL CHECK (tenant_id <> ''),
    job_id      text    NOT NULL,
    seq         integer NOT NULL,
    evidence_id text    NOT NULL,
    mime_type   text    NOT NULL,
    data        bytea   NOT NULL,
    PRIMARY KEY (tenant_id, job_id, seq)
);
ALTER TABLE evidence ENABLE ROW LEVEL SECURITY;
ALTER TABLE evidence FORCE ROW LEVEL SECURITY;
CREATE POLICY evidence_tenant ON evidence
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
