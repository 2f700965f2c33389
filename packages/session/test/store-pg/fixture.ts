// The PostgreSQL store as the shared store suites of @dsh/session/store see it: one throwaway cluster
// per test file (started in beforeAll), one fresh PostgreSQL schema per test directory.
import { type Postgres, postgresBin, startPostgres } from '@dsh/test-support/postgres'
import pg from 'pg'
import { afterAll, beforeAll } from 'vitest'
import PgSessionStore from '../../src/store-pg/index.js'
import type { StoreFixture } from '../store/helpers.js'

export const havePostgres = postgresBin() !== undefined

/** Starts a cluster for the enclosing describe block; `url()` is valid inside its tests. */
export function useCluster(): { url(): string } {
  let server: Postgres | undefined
  beforeAll(async () => {
    server = await startPostgres()
  }, 60_000)
  afterAll(async () => {
    await server?.stop()
  })
  return {
    url() {
      if (!server) throw new Error('the cluster is not running')
      return server.url()
    },
  }
}

/** Runs `sql` (with `params`) in `schema` on a short-lived connection. */
export async function sql(url: string, schema: string, text: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` })
  await client.connect()
  try {
    return await client.query(text, params)
  } finally {
    await client.end()
  }
}

export function pgFixture(
  cluster: { url(): string },
  extra: Record<string, unknown> = {},
): StoreFixture & {
  schemaOf(dir: string): string
} {
  const schemas = new Map<string, string>()
  const schemaOf = (dir: string) => {
    let schema = schemas.get(dir)
    if (!schema) {
      schema = `t${process.pid}_${schemas.size}`
      schemas.set(dir, schema)
    }
    return schema
  }
  return {
    name: 'postgres',
    plugin: PgSessionStore as unknown as StoreFixture['plugin'],
    config: (dir) => ({ url: cluster.url(), schema: schemaOf(dir), dir, ...extra }),
    module: '@dsh/session/store-pg',
    async orphanLease(dir, id) {
      // A pid that cannot be alive on this host: the next opener reclaims at once, as after a crash.
      await sql(
        cluster.url(),
        schemaOf(dir),
        'UPDATE dsh_leases SET pid = $2, start_time = NULL WHERE session_id = $1',
        [id, 2 ** 22 + 7],
      )
    },
    schemaOf,
  }
}
