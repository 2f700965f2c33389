// Row `session-store` of the base bundle: the session store named by the `session.store` setting
// ($DSH_SESSION_STORE, settings.yaml, `--set`): `jsonl` (the default), `sqlite`, or a postgres:// URL.
// The chosen provider is plugged as a child of this row, so unloading the row unloads the store. The
// setting is read when the row starts: a change applies from the next start.
import type { Context } from '@dsh/kernel'
import type {} from '@dsh/settings'
import JsonlSessionStore from '../store/jsonl.js'
import SqliteSessionStore from '../store/sqlite.js'
import PgSessionStore from './index.js'

export interface SelectConfig {
  /** The local sessions directory; empty means `$DSH_HOME/sessions`. */
  dir?: string
  /** PostgreSQL only: the schema holding the tables (default `public`). */
  schema?: string
  /** PostgreSQL only: the lease time-to-live in milliseconds. */
  leaseTtlMs?: number
  /**
   * `false`: declare the setting and open no store (`dsh config` reads and writes settings without a
   * session store, which may be a database that is down). Default true.
   */
  open?: boolean
}

export const STORE_PATTERN = '^(jsonl|sqlite|postgres(ql)?://\\S+)$'

export const name = 'session-store-select'
export const inject = ['settings']

export function apply(ctx: Context, config: SelectConfig = {}): void {
  ctx.settings.define('session.store', {
    schema: { type: 'string', pattern: STORE_PATTERN },
    default: 'jsonl',
    description:
      'where sessions are kept: jsonl (files), sqlite (one database file) or postgres://user@host/db (shared by many hosts; password in PGPASSWORD); read at start',
    env: 'DSH_SESSION_STORE',
    allowed: 'jsonl, sqlite or postgres://user@host:port/database',
  })
  if (config?.open === false) return
  const store = ctx.settings.get('session.store')
  const dir = config?.dir || undefined
  if (store === 'sqlite') ctx.plugin(SqliteSessionStore, { dir })
  else if (store.startsWith('postgres')) {
    ctx.plugin(PgSessionStore, {
      url: store,
      dir,
      ...(config?.schema ? { schema: config.schema } : {}),
      ...(config?.leaseTtlMs ? { leaseTtlMs: config.leaseTtlMs } : {}),
    })
  } else ctx.plugin(JsonlSessionStore, { dir })
}

export default { name, inject, apply }
