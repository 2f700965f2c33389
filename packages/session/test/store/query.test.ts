import { describe, expect, it } from 'vitest'
import SessionQueryService from '../../src/store/query.js'
import { append, boot, jsonlFixture, sqliteFixture, tempDir, until, user } from './helpers.js'
import { querySuite } from './suites/query.js'

for (const fixture of [jsonlFixture, sqliteFixture]) querySuite(fixture)

describe('sqlite schema version', () => {
  it('refuses a database written by a newer dsh', async () => {
    using dir = tempDir()
    const { openSqlite } = await import('../../src/store/sqlite-driver.js')
    const db = openSqlite(`${dir.path}/sessions.sqlite`, 'the test')
    db.exec('PRAGMA user_version = 99')
    db.close()
    const { SqliteBackend } = await import('../../src/store/sqlite.js')
    expect(() => new SqliteBackend(`${dir.path}/sessions.sqlite`, dir.path)).toThrow(
      expect.objectContaining({ code: 'SESSION_STORE_SCHEMA_UNSUPPORTED', message: expect.stringContaining('99') }),
    )
  })

  it('uses WAL', async () => {
    using dir = tempDir()
    const { SqliteBackend } = await import('../../src/store/sqlite.js')
    const backend = new SqliteBackend(`${dir.path}/s.sqlite`, dir.path)
    backend.close()
    const { openSqlite } = await import('../../src/store/sqlite-driver.js')
    const db = openSqlite(`${dir.path}/s.sqlite`, 'the test')
    expect(db.prepare('PRAGMA journal_mode').get()).toMatchObject({ journal_mode: 'wal' })
    expect(db.prepare('PRAGMA user_version').get()).toMatchObject({ user_version: 2 })
    db.close()
  })
})

describe('listing JSONL sessions', () => {
  it('answers from the meta sidecar without reading the log, and rescans when the sidecar is stale', async () => {
    const { readFileSync, writeFileSync, appendFileSync } = await import('node:fs')
    using dir = tempDir()
    const ctx = await boot('jsonl', dir.path, {}, [[SessionQueryService, {}]])
    await until(ctx, 'sessionQuery')
    const session = ctx.sessions.create({ id: 'm' })
    session.append('user/message', { message: user('the title') }, append)
    await ctx.sessionPersistence.close(session)
    const path = ctx.sessionStore.locate('m')
    // Same size, unreadable middle: only a reader of the whole log would notice.
    const bytes = readFileSync(path)
    bytes.fill(0x20, 80, 90)
    writeFileSync(path, bytes)
    expect(await ctx.sessionQuery.list()).toMatchObject([{ id: 'm', title: 'the title', eventCount: 1 }])
    // A different size makes the sidecar stale: the list rescans and reports what it cannot read.
    appendFileSync(path, ' ')
    expect(await ctx.sessionQuery.list()).toMatchObject([
      { id: 'm', error: expect.stringContaining('SESSION_CORRUPT') },
    ])
    await ctx.dispose()
  })
})
