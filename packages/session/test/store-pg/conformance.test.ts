// The PostgreSQL store passes the same suites as JSONL and SQLite: store conformance, the query
// service with full-text search, and crash safety under SIGKILL.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { tempDir } from '../store/helpers.js'
import { chainSuite } from '../store/suites/chain.js'
import { conformanceSuite } from '../store/suites/conformance.js'
import { crashRounds } from '../store/suites/crash.js'
import { querySuite } from '../store/suites/query.js'
import { havePostgres, pgFixture, sql, useCluster } from './fixture.js'

const dist = fileURLToPath(new URL('../../dist/store-pg/index.js', import.meta.url))

describe.skipIf(!havePostgres)('the PostgreSQL session store', () => {
  const cluster = useCluster()
  const fixture = pgFixture(cluster)
  conformanceSuite(fixture)
  querySuite(fixture)
  // Someone with the database in hand: the append-only trigger switched off to change a row.
  chainSuite(fixture, {
    flip: async (dir, id, seq) => {
      await sql(
        cluster.url(),
        fixture.schemaOf(dir),
        `ALTER TABLE dsh_events DISABLE TRIGGER dsh_events_append_only;
         UPDATE dsh_events SET body = replace(body, 'second', 'SECOND') WHERE session_id = '${id}' AND seq = ${seq};`,
      )
    },
    remove: async (dir, id, seq) => {
      await sql(cluster.url(), fixture.schemaOf(dir), 'DELETE FROM dsh_events WHERE session_id = $1 AND seq = $2', [
        id,
        seq,
      ])
    },
  })

  it.skipIf(!existsSync(dist))(
    'loses no acknowledged event and leaves no call without a result across 25 kills',
    async () => {
      using dir = tempDir()
      // Each write is a transaction on the server: children live longer to write as much as the local ones.
      const report = await crashRounds(dir.path, [fixture], 5, 5, 400)
      expect(report.kills).toBe(25)
      expect(report.repaired).toBeGreaterThan(0)
      console.info(`postgres crash test: ${report.kills} kills, ${report.repaired} repairs, ${report.events} events`)
    },
    180_000,
  )
})
