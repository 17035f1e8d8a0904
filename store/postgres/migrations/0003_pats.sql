-- Personal access tokens. Only the SHA-256 of a token is stored. pats is
-- tenant-keyed under the forced tenant policy like every table. A token must
-- be looked up before its tenant is known, so pat_hashes maps a hash to its
-- (tenant, id) and nothing else; the serving role may only INSERT into it
-- (bound to its own tenant), and reads it solely through
-- bastion_pat_lookup(hash), a SECURITY DEFINER function owned by the table
-- owner that answers one exact hash at a time, so the serving role can
-- neither enumerate tokens nor read another tenant's records.
CREATE TABLE pats (
    tenant_id    text        NOT NULL CHECK (tenant_id <> ''),
    pat_id       text        NOT NULL,
    name         text        NOT NULL,
    scopes       text[]      NOT NULL,
    hash         bytea       NOT NULL UNIQUE CHECK (length(hash) = 32),
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz,
    revoked_at   timestamptz,
    last_used_at timestamptz,
    PRIMARY KEY (tenant_id, pat_id)
);
ALTER TABLE pats ENABLE ROW LEVEL SECURITY;
ALTER TABLE pats FORCE ROW LEVEL SECURITY;
CREATE POLICY pats_tenant ON pats
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));

CREATE TABLE pat_hashes (
    hash      bytea NOT NULL PRIMARY KEY CHECK (length(hash) = 32),
    tenant_id text  NOT NULL CHECK (tenant_id <> ''),
    pat_id    text  NOT NULL
);
ALTER TABLE pat_hashes ENABLE ROW LEVEL SECURITY;
ALTER TABLE pat_hashes FORCE ROW LEVEL SECURITY;
-- Readable by whoever holds SELECT, which is only the owner (and so the
-- lookup function); the serving role is granted INSERT alone.
CREATE POLICY pat_hashes_lookup ON pat_hashes FOR SELECT USING (true);
CREATE POLICY pat_hashes_register ON pat_hashes FOR INSERT
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));

-- Schema-qualified with a pinned search_path, so a caller's search_path
-- cannot redirect the definer's query.
DO $migration$
BEGIN
    EXECUTE format(
        'CREATE FUNCTION %1$I.bastion_pat_lookup(token_hash bytea) RETURNS TABLE (tenant_id text, pat_id text) '
        'LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS %2$L',
        current_schema(),
        format('SELECT h.tenant_id, h.pat_id FROM %I.pat_hashes h WHERE h.hash = $1', current_schema()));
    EXECUTE format('REVOKE ALL ON FUNCTION %I.bastion_pat_lookup(bytea) FROM PUBLIC', current_schema());
END
$migration$;
