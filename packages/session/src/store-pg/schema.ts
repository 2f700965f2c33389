// The PostgreSQL schema of the session store, created (or checked) once per database schema under an
// advisory lock, so two hosts starting together do not race. `dsh_meta.schema` is the version; a newer
// one is refused. Events are append-only: a trigger refuses changing a stored event (only the derived
// search text may be rewritten, by `rebuildSearch`); deleting a whole session cascades.
import { HarnessError } from '@dsh/kernel'
import type { PoolClient } from 'pg'

export const PG_SCHEMA_VERSION = 2

const TABLES = `
CREATE TABLE IF NOT EXISTS dsh_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS dsh_sessions (
  id text PRIMARY KEY,
  header text NOT NULL,
  cwd text NOT NULL,
  created_at bigint NOT NULL,
  parent text,
  title text,
  updated_at bigint NOT NULL,
  event_count integer NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS dsh_sessions_updated ON dsh_sessions (updated_at DESC);
CREATE TABLE IF NOT EXISTS dsh_events (
  session_id text NOT NULL REFERENCES dsh_sessions (id) ON DELETE CASCADE,
  seq integer NOT NULL,
  type text NOT NULL,
  body text NOT NULL,
  search text,
  tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', coalesce(search, ''))) STORED,
  PRIMARY KEY (session_id, seq)
);
CREATE INDEX IF NOT EXISTS dsh_events_tsv ON dsh_events USING gin (tsv);
-- Version 2: the hash chain (decision 480) and the session list's running sums; the rows of a
-- version 1 store stay unchained and without sums.
ALTER TABLE dsh_sessions ADD COLUMN IF NOT EXISTS last_hash text;
ALTER TABLE dsh_sessions ADD COLUMN IF NOT EXISTS sums text;
ALTER TABLE dsh_events ADD COLUMN IF NOT EXISTS hash text;
CREATE OR REPLACE FUNCTION dsh_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'dsh_events is append-only: event % of session % cannot change', OLD.seq, OLD.session_id;
END $$;
CREATE OR REPLACE TRIGGER dsh_events_append_only BEFORE UPDATE OF session_id, seq, type, body, hash ON dsh_events
  FOR EACH ROW EXECUTE FUNCTION dsh_events_append_only();
CREATE SEQUENCE IF NOT EXISTS dsh_lease_tokens;
CREATE TABLE IF NOT EXISTS dsh_leases (
  session_id text PRIMARY KEY,
  token bigint NOT NULL,
  host text NOT NULL,
  pid integer NOT NULL,
  boot_id text,
  start_time bigint,
  acquired_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
`

/** Creates the tables in `schema` (the connection's search path), or checks the version of existing ones. */
export async function migrate(client: PoolClient, schema: string, location: string): Promise<void> {
  await client.query('BEGIN')
  try {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`dsh-session-store:${schema}`])
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`)
    const exists = await client.query<{ found: string | null }>(`SELECT to_regclass('dsh_meta')::text AS found`)
    let version = 0
    if (exists.rows[0]?.found) {
      const row = await client.query<{ value: string }>(`SELECT value FROM dsh_meta WHERE key = 'schema'`)
      version = Number(row.rows[0]?.value ?? 0)
    }
    if (version > PG_SCHEMA_VERSION) {
      throw new HarnessError(
        'SESSION_STORE_SCHEMA_UNSUPPORTED',
        `${location}: schema version ${version} is newer than this dsh supports (${PG_SCHEMA_VERSION}); upgrade dsh or point the store at another schema`,
        { location, version, supported: PG_SCHEMA_VERSION },
      )
    }
    if (version < PG_SCHEMA_VERSION) {
      await client.query(TABLES)
      await client.query(
        `INSERT INTO dsh_meta (key, value) VALUES ('schema', $1) ON CONFLICT (key) DO UPDATE SET value = $1`,
        [String(PG_SCHEMA_VERSION)],
      )
    }
    await client.query('COMMIT')
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {})
    throw error
  }
}

/** A PostgreSQL identifier, quoted. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}
