#!/bin/sh
# Creates bastion's serving role on the database's first start (the
# postgres image runs /docker-entrypoint-initdb.d once, on an empty volume).
# It may log in and nothing else: no superuser, no BYPASSRLS, owning no
# table. `bastion migrate` (as the owner) grants it what serving needs.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v app_password="$BASTION_APP_PASSWORD" <<'SQL'
SELECT format('CREATE ROLE bastion_app LOGIN PASSWORD %L NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE', :'app_password') \gexec
SQL
