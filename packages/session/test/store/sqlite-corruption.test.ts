// A damaged SQLite session database either still reads every event or fails with a clear code;
// it never crashes the process or silently drops an event.
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { HarnessError } from '@dsh/kernel'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { append, assistant, boot, tempDir, user } from './helpers.js'

const CLEAR = new Set(['SESSION_CORRUPT', 'SESSION_FORMAT_UNSUPPORTED', 'SESSION_STORE_SCHEMA_UNSUPPORTED'])

describe('corrupted SQLite session databases', () => {
  it('read back whole or refuse with a clear code after random truncations and byte flips', async () => {
    using dir = tempDir()
    const a = await boot('sqlite', dir.path)
    const session = a.sessions.create({ id: 'q' })
    for (let i = 0; i < 40; i++) {
      session.append('user/message', { message: user(`ask ${i} ${'z'.repeat(i * 5)}`) }, append)
      session.append('assistant/message', { message: assistant(`reply ${i}`) }, append)
    }
    await a.sessions.flush(session)
    await a.sessionPersistence.close(session)
    await a.sessionStore.release('q')
    ;(a.sessionStore as unknown as { backend: { close(): void } }).backend.close()
    const path = `${dir.path}/sessions.sqlite`
    // Fold the WAL into the main file so the damage hits the data itself.
    const { openSqlite } = await import('../../src/store/sqlite-driver.js')
    const db = openSqlite(path, 'the test')
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)')
    db.close()
    const original = readFileSync(path)
    const events = [...session.events]
    const outcomes = { whole: 0, refused: 0 }
    const { SqliteBackend } = await import('../../src/store/sqlite.js')
    const attempt = async (damaged: Buffer) => {
      rmSync(`${path}-wal`, { force: true })
      rmSync(`${path}-shm`, { force: true })
      writeFileSync(path, damaged)
      let backend: InstanceType<typeof SqliteBackend> | undefined
      try {
        backend = new SqliteBackend(path, dir.path)
        const stored = await backend.read('q')
        if (!stored) throw new HarnessError('SESSION_NOT_FOUND', 'the session row is gone', {})
        const read = a.sessions.build(stored.header, stored.records, stored.location, 'q')
        expect(read.events.map((e) => [e.seq, e.type])).toEqual(events.map((e) => [e.seq, e.type]))
        outcomes.whole++
      } catch (error) {
        // SQLite cannot always tell a damaged row from a missing one: a lost session row reads as absent,
        // which resume reports as SESSION_NOT_FOUND rather than dropping events from a session it returns.
        if (!HarnessError.is(error) || !(CLEAR.has(error.code) || error.code === 'SESSION_NOT_FOUND')) throw error
        outcomes.refused++
      } finally {
        backend?.close()
      }
    }
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: original.length - 1 }),
        fc.integer({ min: 1, max: 255 }),
        async (at, mask) => {
          const damaged = Buffer.from(original)
          damaged[at] = (damaged[at] as number) ^ mask
          await attempt(damaged)
        },
      ),
      { numRuns: 40 },
    )
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: original.length - 1 }), async (cut) => {
        await attempt(original.subarray(0, cut))
      }),
      { numRuns: 20 },
    )
    expect(outcomes.whole + outcomes.refused).toBe(60)
    expect(outcomes.refused).toBeGreaterThan(0)
    await a.dispose()
  }, 30_000)

  it('refuses a database whose stored schema no longer names the columns dsh wrote', async () => {
    using dir = tempDir()
    const path = `${dir.path}/sessions.sqlite`
    const { SqliteBackend } = await import('../../src/store/sqlite.js')
    new SqliteBackend(path, dir.path).close()
    // One changed byte in the schema text (the first page): the version and the file header stay valid.
    const bytes = readFileSync(path)
    const at = bytes.indexOf('created_at')
    expect(at).toBeGreaterThan(0)
    bytes[at + 'created_a'.length] = 'x'.charCodeAt(0)
    writeFileSync(path, bytes)
    let caught: unknown
    try {
      new SqliteBackend(path, dir.path).close()
    } catch (error) {
      caught = error
    }
    expect(HarnessError.is(caught) && caught.code).toBe('SESSION_CORRUPT')
    expect((caught as Error).message).toContain(path)
  })
})
