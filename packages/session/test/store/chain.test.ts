// The hash chain of the local stores; the PostgreSQL store runs the same suite in test/store-pg.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'
import { jsonlFixture, sqliteFixture } from './helpers.js'
import { chainSuite } from './suites/chain.js'

const lines = (file: string) => readFileSync(file, 'utf8').trimEnd().split('\n')

chainSuite(jsonlFixture, {
  async flip(dir, id, seq) {
    const file = join(dir, `${id}.jsonl`)
    const all = lines(file)
    // The text changed and the checksum redone, as a tool that knows the format would.
    const body = (all[seq + 1] as string).replace(/,"crc":"[0-9a-f]{8}"\}$/, '}').replace('second', 'SECOND')
    all[seq + 1] = `${body.slice(0, -1)},"crc":"${crc32(body).toString(16).padStart(8, '0')}"}`
    writeFileSync(file, `${all.join('\n')}\n`)
  },
  async remove(dir, id, seq) {
    const file = join(dir, `${id}.jsonl`)
    const all = lines(file)
    all.splice(seq + 1, 1)
    writeFileSync(file, `${all.join('\n')}\n`)
  },
})

async function sqlite(dir: string, statement: string, ...params: Array<string | number | null>) {
  const { openSqlite } = await import('../../src/store/sqlite-driver.js')
  const db = openSqlite(join(dir, 'sessions.sqlite'), 'the test')
  try {
    db.prepare(statement).run(...params)
  } finally {
    db.close()
  }
}

chainSuite(sqliteFixture, {
  flip: (dir, id, seq) =>
    sqlite(dir, "UPDATE events SET body = replace(body, 'second', 'SECOND') WHERE session_id = ? AND seq = ?", id, seq),
  remove: (dir, id, seq) => sqlite(dir, 'DELETE FROM events WHERE session_id = ? AND seq = ?', id, seq),
})
