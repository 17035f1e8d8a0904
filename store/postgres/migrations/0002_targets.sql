-- Verified preview targets of the targets registry, one row per tenant and
-- host, under the same forced tenant policy as every table.
CREATE TABLE targets (
    tenant_id   text        NOT NULL CHECK (tenant_id <> ''),
    host        text        NOT NULL,
    token       text        NOT NULL,
    method      text        NOT NULL,
    created_at  timestamptz,
    verified_at timestamptz,
    expires_at  timestamptz,
    PRIMARY KEY (tenant_id, host)
);
ALTER TABLE targets ENABLE ROW LEVEL SECURITY;
ALTER TABLE targets FORCE ROW LEVEL SECURITY;
CREATE POLICY targets_tenant ON targets
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
